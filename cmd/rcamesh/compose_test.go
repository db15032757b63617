package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/modules"
)

// TestDockerCompose loads docker-compose.yml with the Compose spec loader and
// checks that it runs NATS with JetStream plus one container per service,
// whose commands parse with the real `serve` flags, target their own service
// and point every -<svc>.addr at an existing container.
func TestDockerCompose(t *testing.T) {
	root := filepath.Join("..", "..")
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root), cli.WithName("rcamesh"))
	if err != nil {
		t.Fatal(err)
	}
	project, err := cli.ProjectFromOptions(context.Background(), opts)
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}

	nats, ok := project.Services["nats"]
	if !ok {
		t.Fatal("no nats service")
	}
	if !strings.HasPrefix(nats.Image, "nats:2") || !slices.Contains(nats.Command, "-js") {
		t.Errorf("nats runs %s %v, want a nats:2 image with -js", nats.Image, nats.Command)
	}
	if nats.HealthCheck == nil || len(nats.HealthCheck.Test) == 0 {
		t.Error("nats has no health check")
	}
	// Secure defaults: NATS is not published, and it runs the generated
	// config (users and permissions, no anonymous client).
	if len(nats.Ports) > 0 {
		t.Errorf("nats publishes ports %v", nats.Ports)
	}
	if !slices.Contains(nats.Command, "/config/nats.conf") {
		t.Errorf("nats runs %v, want -c /config/nats.conf (rcamesh nats-config)", nats.Command)
	}
	if job, ok := project.Services["nats-config"]; !ok || len(job.Command) == 0 || job.Command[0] != "nats-config" {
		t.Error("no nats-config job writing the NATS users")
	} else if _, ok := nats.DependsOn["nats-config"]; !ok {
		t.Error("nats does not wait for nats-config")
	}

	if job, ok := project.Services["mesh-credentials"]; !ok || len(job.Command) == 0 || job.Command[0] != "mesh-credentials" {
		t.Error("no mesh-credentials job issuing the services' credentials")
	} else {
		var out bytes.Buffer
		dir := t.TempDir()
		key := filepath.Join(dir, "mesh.key")
		if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
			t.Fatal(err)
		}
		args := slices.Clone([]string(job.Command[1:]))
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "-mesh.key-file="):
				args[i] = "-mesh.key-file=" + key
			case strings.HasPrefix(a, "-out="):
				args[i] = "-out=" + dir
			}
		}
		if err := meshCredentialsCmd(context.Background(), args, &out); err != nil {
			t.Errorf("the mesh-credentials job %v fails: %v", job.Command, err)
		}
		for _, svc := range mesh.All {
			if _, err := auth.LoadCredentials(filepath.Join(dir, svc, "mesh.cred")); err != nil {
				t.Errorf("the job wrote no credentials for %s: %v", svc, err)
			}
		}
	}

	reg := app.NewRegistry()
	if err := modules.Register(reg, modules.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range mesh.All {
		s, ok := project.Services[svc]
		if !ok {
			t.Errorf("no %s service", svc)
			continue
		}
		cmd := []string(s.Command)
		if len(cmd) == 0 || cmd[0] != "serve" {
			t.Errorf("%s command %v does not start with serve", svc, cmd)
			continue
		}
		sf, err := newServeFlags(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := parseFlags(sf.fs, cmd[1:], func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%s: command %v does not parse with the serve flags: %v", svc, cmd, err)
			continue
		}
		if sf.cfg.Target != svc {
			t.Errorf("%s runs -target=%s", svc, sf.cfg.Target)
		}
		if !sf.cfg.Auth.Enabled() || sf.cfg.Auth.InsecureOpen || sf.cfg.Auth.CredentialsFile == "" {
			t.Errorf("%s: authentication is not on by default (tokens file, credentials, no open mode)", svc)
		}
		// No service holds the mesh key: each mounts its own credentials
		// volume, written by the mesh-credentials job, and no other's.
		if sf.cfg.Auth.MeshKeyFile != "" {
			t.Errorf("%s holds the mesh key", svc)
		}
		for _, sec := range s.Secrets {
			if sec.Source == "mesh_key" {
				t.Errorf("%s mounts the mesh key secret", svc)
			}
		}
		var creds []string
		for _, v := range s.Volumes {
			if strings.HasPrefix(v.Source, "cred-") {
				creds = append(creds, v.Source)
				if !strings.HasPrefix(sf.cfg.Auth.CredentialsFile, v.Target+"/") || !v.ReadOnly {
					t.Errorf("%s: -mesh.credentials-file=%s is not on its read-only volume %s", svc, sf.cfg.Auth.CredentialsFile, v.Target)
				}
			}
		}
		if len(creds) != 1 || creds[0] != "cred-"+svc {
			t.Errorf("%s mounts credentials volumes %v, want only cred-%s", svc, creds, svc)
		}
		if _, ok := s.DependsOn["mesh-credentials"]; !ok {
			t.Errorf("%s does not wait for the mesh-credentials job", svc)
		}
		if u := sf.cfg.NATSURL; !strings.HasPrefix(u, "nats://") || hostOf(t, strings.TrimPrefix(u, "nats://")) != "nats" {
			t.Errorf("%s: -nats.url=%q, want nats://nats:4222", svc, u)
		}
		_, grpcPort, _ := net.SplitHostPort(sf.cfg.Server.GRPCAddr)
		if host, _, _ := net.SplitHostPort(sf.cfg.Server.HTTPAddr); host != "0.0.0.0" {
			t.Errorf("%s: -http.addr %s is not reachable from other containers", svc, sf.cfg.Server.HTTPAddr)
		}
		if grpcPort != "9090" {
			t.Errorf("%s: -grpc.addr %s, want port 9090 (the port the others dial)", svc, sf.cfg.Server.GRPCAddr)
		}
		for remote, addr := range sf.cfg.ServiceAddrs {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Errorf("%s: -%s.addr=%q: %v", svc, remote, addr, err)
				continue
			}
			if remote == svc {
				t.Errorf("%s points -%s.addr at itself", svc, remote)
			}
			if _, ok := project.Services[host]; !ok || host != remote || port != "9090" {
				t.Errorf("%s: -%s.addr=%s does not point at the %s service's gRPC port", svc, remote, addr, remote)
			}
		}
		// Exactly the addresses of the services it calls: one it lacks
		// would stop it at start, one it does not call hides a dependency.
		for _, other := range mesh.All {
			need := slices.Contains(reg.Needs(svc), other)
			if has := sf.cfg.ServiceAddrs[other] != ""; has != need {
				t.Errorf("%s: -%s.addr given=%t, but %s calls it: %t", svc, other, has, svc, need)
			}
		}
		if _, ok := s.DependsOn["nats"]; !ok {
			t.Errorf("%s does not depend on nats", svc)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) < 2 || !slices.Contains(s.HealthCheck.Test, "healthcheck") {
			t.Errorf("%s health check %v does not use rcamesh healthcheck", svc, s.HealthCheck)
		}
		scenarios := false
		for _, v := range s.Volumes {
			scenarios = scenarios || v.Target == "/scenarios"
		}
		if !scenarios {
			t.Errorf("%s does not mount scenario data at /scenarios", svc)
		}
		// Once the lead registers the modules, the registry also checks
		// that every needed service is reachable.
		if len(sf.reg.Names()) == len(mesh.All) {
			a, err := newApp(sf)
			if err != nil {
				t.Errorf("%s: %v", svc, err)
			} else if err := a.Check(); err != nil {
				t.Errorf("%s: %v", svc, err)
			}
		}
	}
}

func hostOf(t *testing.T, hostport string) string {
	t.Helper()
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return ""
	}
	return h
}
