package modules

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// callGraph is which service calls which (the README's table): a change of
// a service's dependencies must change it deliberately.
var callGraph = map[string][]string{
	mesh.Router:   {mesh.Tools, mesh.Brain},
	mesh.Tools:    {mesh.Brain},
	mesh.Critic:   {mesh.Tools},
	mesh.Brain:    {mesh.Tools, mesh.Critic, mesh.Router, mesh.Delivery},
	mesh.Delivery: nil,
}

// TestNeedsFollowTheClientsEachServiceIsGiven: what a target needs is
// derived from the clients its service is given, and a split process
// missing one of those addresses fails at start with an error that names
// the flag to set; with exactly those addresses it starts.
func TestNeedsFollowTheClientsEachServiceIsGiven(t *testing.T) {
	reg := app.NewRegistry()
	if err := Register(reg, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range mesh.All {
		got, want := reg.Needs(svc), callGraph[svc]
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("%s needs %v, want %v", svc, got, want)
		}
		check := func(addrs map[string]string) error {
			cfg := app.DefaultConfig()
			cfg.Target = svc
			cfg.NATSURL = "nats://127.0.0.1:4222"
			cfg.ServiceAddrs = addrs
			a, err := app.New(cfg, reg, nil, nil)
			if err != nil {
				return err
			}
			return a.Check()
		}
		all := map[string]string{}
		for _, n := range want {
			all[n] = "127.0.0.1:9"
		}
		if err := check(all); err != nil {
			t.Errorf("%s with only the addresses it needs: %v", svc, err)
		}
		for _, missing := range want {
			addrs := map[string]string{}
			for n, a := range all {
				if n != missing {
					addrs[n] = a
				}
			}
			err := check(addrs)
			if err == nil || !strings.Contains(err.Error(), "-"+missing+".addr") {
				t.Errorf("%s without -%s.addr: %v, want an error naming the flag", svc, missing, err)
			}
		}
	}
}

// TestServicesReachEachOtherOnlyOverGRPC: no service imports another
// service, and the commands import services only through this package
// (the same check as `go list -deps ./cmd/rcamesh`, on the source).
func TestServicesReachEachOtherOnlyOverGRPC(t *testing.T) {
	const prefix = "github.com/rcamesh/rcamesh/services/"
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{"services", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			rel, _ := filepath.Rel(root, path)
			own := ""
			if dir == "services" {
				own = strings.Split(filepath.ToSlash(rel), "/")[1]
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if svc, ok := strings.CutPrefix(p, prefix); ok && strings.Split(svc, "/")[0] != own {
					t.Errorf("%s imports %s: services reach each other over gRPC, commands through internal/modules", rel, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked", checked)
	}
}
