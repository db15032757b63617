package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestTraceFollowsRequestAcrossServices sends one slash command and checks
// that a single trace covers the router, the tools service, the pin's trip
// through JetStream and the critic's revalidation.
func TestTraceFollowsRequestAcrossServices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	set, err := fixture.New(sc, logger)
	if err != nil {
		t.Fatal(err)
	}
	spans := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := startMeshWith(ctx, set, filepath.Join(t.TempDir(), "data"), logger, nil, func(c *app.Config) {
		c.Telemetry.Exporter = "stdout"
		c.Telemetry.Writer = spans
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := routerv1.NewRouterServiceClient(m.conn).Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "trace",
		Input: &routerv1.InvestigateRequest_Command{Command: "/status namespace=retail"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	// Spans are exported in batches; stopping the mesh flushes them.
	deadline := time.Now().Add(20 * time.Second)
	// router -> tools -> pin.added on JetStream -> the critic consumes it ->
	// the critic's verdict published as pin.updated or pin.rejected.
	want := []string{"rcamesh.router.v1.RouterService/Investigate", "rcamesh.tools.v1.ToolsService/ExecuteTool",
		"publish rcamesh.v1.session.{session}.pin.added", "process rcamesh.v1.session.{session}.pin.added"}
	verdict := func(s string) bool {
		return strings.Contains(s, "publish rcamesh.v1.session.{session}.pin.updated") || strings.Contains(s, "publish rcamesh.v1.session.{session}.pin.rejected")
	}
	for time.Now().Before(deadline) && !verdict(spans.String()) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	byTrace := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(spans.String()))
	for {
		var s struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := dec.Decode(&s); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("span output: %v", err)
		}
		byTrace[s.SpanContext.TraceID] = append(byTrace[s.SpanContext.TraceID], s.Name)
	}
	for id, names := range byTrace {
		joined := strings.Join(names, "\n")
		if !strings.Contains(joined, want[0]) {
			continue
		}
		for _, w := range want[1:] {
			if !strings.Contains(joined, w) {
				t.Fatalf("trace %s lacks a %q span; it has:\n%s", id, w, joined)
			}
		}
		if !verdict(joined) {
			t.Fatalf("trace %s does not carry the critic's verdict:\n%s", id, joined)
		}
		return
	}
	t.Fatalf("no trace starts at the router; traces: %v", byTrace)
}
