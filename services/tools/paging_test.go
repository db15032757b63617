package tools

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/paging"
)

// pagedLister asks the service for pages of size n (the mesh's own walk
// leaves the size to the server).
type pagedLister struct {
	s     *Service
	n     int32
	calls int
}

func (p *pagedLister) ListToolDefinitions(ctx context.Context, in *toolsv1.ListToolDefinitionsRequest, _ ...grpc.CallOption) (*toolsv1.ListToolDefinitionsResponse, error) {
	p.calls++
	in.PageSize = p.n
	return p.s.ListToolDefinitions(ctx, in)
}

func TestListToolDefinitionsPages(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	ctx := t.Context()
	all, err := s.ListToolDefinitions(ctx, &toolsv1.ListToolDefinitionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(all.GetTools())
	if n < 5 || n > DefaultToolPage || all.GetNextPageToken() != "" {
		t.Fatalf("first default page: %d tools, next %q (want every tool, no next page)", n, all.GetNextPageToken())
	}
	var want []string
	for _, d := range all.GetTools() {
		want = append(want, d.GetIntent())
	}
	if !slices.IsSorted(want) {
		t.Errorf("definitions are not ordered by intent: %v", want)
	}
	for _, size := range []int32{1, 2, 4, int32(n), int32(n + 1)} {
		l := &pagedLister{s: s, n: size}
		defs, err := mesh.ToolDefinitions(ctx, l, "s")
		if err != nil {
			t.Fatalf("page size %d: %v", size, err)
		}
		var got []string
		for _, d := range defs {
			got = append(got, d.GetIntent())
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: walked %v, want %v", size, got, want)
		}
		if wantCalls := max(1, (n+int(size)-1)/int(size)); l.calls != wantCalls {
			t.Errorf("page size %d: %d pages, want %d", size, l.calls, wantCalls)
		}
	}
	for name, req := range map[string]*toolsv1.ListToolDefinitionsRequest{
		"negative size":      {PageSize: -1},
		"forged token":       {PageToken: "bogus"},
		"another list's one": {PageToken: paging.Token("pins", 1)},
	} {
		if _, err := s.ListToolDefinitions(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	if r, err := s.ListToolDefinitions(ctx, &toolsv1.ListToolDefinitionsRequest{PageSize: MaxToolPage + 1000}); err != nil || len(r.GetTools()) != n {
		t.Errorf("a size above the maximum: %d tools, %v", len(r.GetTools()), err)
	}
}
