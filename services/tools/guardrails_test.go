package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func hasTrip(trips []*investigationv1.GuardrailTrip, kind investigationv1.Guardrail) *investigationv1.GuardrailTrip {
	for _, tr := range trips {
		if tr.GetKind() == kind {
			return tr
		}
	}
	return nil
}

func TestTimeoutWithHungBackend(t *testing.T) {
	ts := newTestSet()
	ts.podLogs.block = make(chan struct{})
	t.Cleanup(func() { close(ts.podLogs.block) })
	s := newService(t, ts.set, func(c *Config) { c.Timeout = 50 * 1e6 })
	resp := run(t, s, "fetch_pod_logs", map[string]any{"pod": "web-1"})
	r := resp.GetResult()
	if r.GetSuccess() || !strings.Contains(r.GetError(), "timeout") {
		t.Fatalf("result = success %v error %q, want a timeout failure", r.GetSuccess(), r.GetError())
	}
	tr := hasTrip(resp.GetTrips(), TripTimeout)
	if tr == nil || tr.GetOwner() != "tools" || tr.GetLimit() != 0.05 {
		t.Errorf("trips = %v", resp.GetTrips())
	}
	if resp.GetPin().GetConfidence() != 0 || resp.GetPin().GetSuccess() {
		t.Errorf("pin of a timed-out call = %v", resp.GetPin())
	}
	// A backend that honours ctx times out too.
	ts.metrics.mu.Lock()
	ts.metrics.block = true
	ts.metrics.mu.Unlock()
	resp = run(t, s, "query_prometheus", map[string]any{"query": "up"})
	if resp.GetResult().GetSuccess() || hasTrip(resp.GetTrips(), TripTimeout) == nil {
		t.Errorf("ctx-aware backend: %v", resp.GetResult())
	}
}

func TestOutputCap(t *testing.T) {
	ts := newTestSet()
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		if i%1000 == 500 {
			fmt.Fprintf(&b, "2026-03-10T11:00:00Z ERROR upstream failure %d\n", i)
			continue
		}
		fmt.Fprintf(&b, "2026-03-10T11:00:00Z INFO request %d served in 3ms ünïcödé\n", i)
	}
	ts.podLogs.logs["shop/web-1"] = b.String()
	s := newService(t, ts.set, func(c *Config) { c.MaxOutputBytes = 4096; c.MaxLogLines = 100; c.MaxSnippets = 5 })
	resp := run(t, s, "fetch_pod_logs", map[string]any{"pod": "web-1"})
	r := resp.GetResult()
	if !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	if len(r.GetRawOutput()) > 4096 || !r.GetRawOutputTruncated() || r.GetRawOutputOriginalBytes() < 1<<20 {
		t.Errorf("raw %d bytes truncated=%v original=%d", len(r.GetRawOutput()), r.GetRawOutputTruncated(), r.GetRawOutputOriginalBytes())
	}
	if !strings.HasSuffix(r.GetRawOutput(), "bytes shown]") || !json.Valid(mustJSON(t, r.GetRawOutput())) {
		t.Errorf("truncation marker missing or invalid UTF-8")
	}
	tr := hasTrip(resp.GetTrips(), TripOutputTruncated)
	if tr == nil || tr.GetLimit() != 4096 || tr.GetValue() < 1<<20 {
		t.Errorf("trips = %v", resp.GetTrips())
	}
	if !resp.GetPin().GetRawOutputTruncated() || resp.GetPin().GetRawOutputOriginalBytes() != r.GetRawOutputOriginalBytes() {
		t.Errorf("pin does not record truncation")
	}
	if len(r.GetEvidenceSnippets()) > 5 {
		t.Errorf("snippets = %d, cap 5", len(r.GetEvidenceSnippets()))
	}
	lines := decode[[]facts.LogLine](t, r, facts.KeyLogLines)
	errs := 0
	for _, l := range lines {
		if l.Level == "ERROR" {
			errs++
		}
	}
	if len(lines) != 100 || errs == 0 {
		t.Errorf("log lines = %d (errors kept %d), want 100 with the error lines", len(lines), errs)
	}
}

func mustJSON(t *testing.T, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDuplicateReplay(t *testing.T) {
	ts := newTestSet()
	pub := &fakePublisher{}
	s := newService(t, ts.set, nil, func(d *Deps) { d.Bus = pub })
	req := func(inv string, noCache bool) *toolsv1.ExecuteToolRequest {
		return &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: inv, Intent: "query_prometheus",
			Params: mustStruct(t, map[string]any{"query": "up"}), Context: incidentCtx(), NoCache: noCache}
	}
	first, err := s.ExecuteTool(t.Context(), req("inv-a", false))
	if err != nil || first.GetReplayed() {
		t.Fatalf("first call: replayed=%v err=%v", first.GetReplayed(), err)
	}
	second, err := s.ExecuteTool(t.Context(), req("inv-a", false))
	if err != nil {
		t.Fatal(err)
	}
	tr := hasTrip(second.GetTrips(), TripDuplicateReplayed)
	if !second.GetReplayed() || tr == nil || !strings.Contains(tr.GetDetail(), "replayed") {
		t.Fatalf("second call: replayed=%v trips=%v", second.GetReplayed(), second.GetTrips())
	}
	if !strings.HasPrefix(second.GetResult().GetSummary(), "[replayed") {
		t.Errorf("replayed summary does not tell the model: %q", second.GetResult().GetSummary())
	}
	if ts.metrics.calls != 1 || pub.count() != 1 {
		t.Errorf("backend calls = %d, publishes = %d; want 1 and 1", ts.metrics.calls, pub.count())
	}
	if second.GetPin().GetId() != first.GetPin().GetId() {
		t.Errorf("replayed pin id %s != %s", second.GetPin().GetId(), first.GetPin().GetId())
	}
	// Another investigation, or no_cache, runs again.
	if r, _ := s.ExecuteTool(t.Context(), req("inv-b", false)); r.GetReplayed() {
		t.Errorf("other investigation replayed")
	}
	if r, _ := s.ExecuteTool(t.Context(), req("inv-a", true)); r.GetReplayed() {
		t.Errorf("no_cache replayed")
	}
	if ts.metrics.calls != 3 {
		t.Errorf("backend calls = %d, want 3", ts.metrics.calls)
	}
	// Reordered but equal params are the same call.
	a, _ := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "inv-c", Intent: "get_events",
		Params: mustStruct(t, map[string]any{"type": "Warning", "namespace": "shop"}), Context: incidentCtx()})
	b, _ := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "inv-c", Intent: "get_events",
		Params: mustStruct(t, map[string]any{"namespace": "shop", "type": "warning"}), Context: incidentCtx()})
	if a.GetReplayed() || !b.GetReplayed() {
		t.Errorf("canonical params: first replayed=%v second replayed=%v", a.GetReplayed(), b.GetReplayed())
	}
}

func TestDuplicateConcurrentSingleFlight(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	var wg sync.WaitGroup
	var replays atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.ExecuteTool(context.Background(), &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "i", Intent: "query_prometheus",
				Params: mustStruct(t, map[string]any{"query": "up"}), Context: incidentCtx()})
			if err != nil {
				t.Error(err)
				return
			}
			if resp.GetReplayed() {
				replays.Add(1)
			}
		}()
	}
	wg.Wait()
	if ts.metrics.calls != 1 || replays.Load() != 7 {
		t.Errorf("backend calls = %d, replays = %d; want 1 and 7", ts.metrics.calls, replays.Load())
	}
}

func TestFailedCallsAreNotCached(t *testing.T) {
	ts := newTestSet()
	ts.metrics.block = true
	s := newService(t, ts.set, func(c *Config) { c.Timeout = 300 * 1e6 })
	req := &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "i", Intent: "query_prometheus", Params: mustStruct(t, map[string]any{"query": "up"}), Context: incidentCtx()}
	r1, _ := s.ExecuteTool(t.Context(), req)
	ts.metrics.mu.Lock()
	ts.metrics.block = false
	ts.metrics.mu.Unlock()
	r2, _ := s.ExecuteTool(t.Context(), req)
	if r1.GetResult().GetSuccess() || r2.GetReplayed() || !r2.GetResult().GetSuccess() {
		t.Errorf("first success=%v, second replayed=%v success=%v", r1.GetResult().GetSuccess(), r2.GetReplayed(), r2.GetResult().GetSuccess())
	}
}

func TestDuplicateCacheEviction(t *testing.T) {
	c := newCallCache(1e12, 2, 1<<30)
	now := t0
	for _, k := range []string{"a", "b", "c"} {
		c.begin(k)
		c.end(k, &toolsv1.ExecuteToolResponse{}, now)
	}
	if c.len() != 2 || c.get("a", now) != nil || c.get("c", now) == nil {
		t.Errorf("cache len %d, a evicted=%v", c.len(), c.get("a", now) == nil)
	}
	c.sweep(now.Add(2e12))
	if c.len() != 0 {
		t.Errorf("sweep left %d entries", c.len())
	}
}

// TestDuplicateCacheBytes: the cache holds at most its byte bound of
// encoded responses whatever their number; the oldest go first, and a
// response larger than the bound is not cached at all.
func TestDuplicateCacheBytes(t *testing.T) {
	resp := func(n int) *toolsv1.ExecuteToolResponse {
		return &toolsv1.ExecuteToolResponse{Result: &evidencev1.ToolResult{RawOutput: strings.Repeat("x", n)}}
	}
	one := int64(proto.Size(resp(10_000)))
	c := newCallCache(1e12, 1000, 3*one)
	now := t0
	for i := range 10 {
		k := fmt.Sprint("k", i)
		c.begin(k)
		c.end(k, resp(10_000), now)
		if c.size() > 3*one {
			t.Fatalf("after %d entries the cache holds %d bytes, bound %d", i+1, c.size(), 3*one)
		}
	}
	if c.len() != 3 || c.get("k9", now) == nil || c.get("k6", now) != nil {
		t.Errorf("len %d; newest kept %v; oldest evicted %v", c.len(), c.get("k9", now) != nil, c.get("k6", now) == nil)
	}
	c.begin("huge")
	c.end("huge", resp(100_000), now)
	if c.get("huge", now) != nil || c.len() != 3 || c.size() != 3*one {
		t.Errorf("a response over the bound was cached or evicted others: len %d size %d", c.len(), c.size())
	}
	c.sweep(now.Add(2e12))
	if c.size() != 0 {
		t.Errorf("sweep left %d bytes", c.size())
	}
}

func TestParamValidation(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	tests := []struct {
		name, intent string
		params       map[string]any
		rc           *evidencev1.RouterContext
		code         codes.Code
		mention      string
	}{
		{"unknown param", "fetch_pod_logs", map[string]any{"pod": "x", "podd": "y"}, incidentCtx(), codes.InvalidArgument, `"podd"`},
		{"wrong number", "fetch_pod_logs", map[string]any{"pod": "x", "tail_lines": "many"}, incidentCtx(), codes.InvalidArgument, `"tail_lines"`},
		{"wrong bool", "fetch_pod_logs", map[string]any{"pod": "x", "previous": "maybe"}, incidentCtx(), codes.InvalidArgument, `"previous"`},
		{"list value", "query_prometheus", map[string]any{"query": []any{"up"}}, incidentCtx(), codes.InvalidArgument, `"query"`},
		{"missing required", "query_prometheus", map[string]any{}, incidentCtx(), codes.InvalidArgument, `"query"`},
		{"missing context default", "fetch_pod_logs", map[string]any{}, &evidencev1.RouterContext{ActiveNamespace: "shop"}, codes.InvalidArgument, `"pod"`},
		{"select option", "get_events", map[string]any{"type": "Fatal"}, incidentCtx(), codes.InvalidArgument, `"type"`},
		{"bad since", "get_events", map[string]any{"since": "yesterday"}, incidentCtx(), codes.InvalidArgument, `"since"`},
		{"bad start", "get_events", map[string]any{"start": "noon"}, incidentCtx(), codes.InvalidArgument, `"start"`},
		{"start after end", "get_events", map[string]any{"start": "2026-03-10T13:00:00Z", "end": "2026-03-10T12:00:00Z"}, incidentCtx(), codes.InvalidArgument, "not before"},
		{"unknown intent", "rm_rf", map[string]any{}, incidentCtx(), codes.InvalidArgument, `"rm_rf"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: tc.intent, Params: mustStruct(t, tc.params), Context: tc.rc})
			st, _ := status.FromError(err)
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.mention) {
				t.Errorf("err = %v, want %s mentioning %s", err, tc.code, tc.mention)
			}
		})
	}
}

func TestDefaultsFromContext(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	rc := incidentCtx()
	rc.ActivePod = "web-1"
	resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "fetch_pod_logs", Context: rc, SkipPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetPin().GetParams().AsMap()
	if p["namespace"] != "shop" || p["pod"] != "web-1" {
		t.Errorf("filled params = %v", p)
	}
	if resp.GetPin().GetResourceName() != "web-1" || resp.GetPin().GetNamespace() != "shop" {
		t.Errorf("pin context = %s/%s", resp.GetPin().GetNamespace(), resp.GetPin().GetResourceName())
	}
	// search_logs index defaults from an extra context key.
	rc.Extra = map[string]string{"elk_index": "logs-*"}
	resp, err = s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "search_logs", Params: mustStruct(t, map[string]any{"query": "x"}), Context: rc})
	if err != nil || resp.GetPin().GetParams().AsMap()["index"] != "logs-*" {
		t.Errorf("index default: %v %v", err, resp.GetPin().GetParams())
	}
}

func TestUnavailableIntegration(t *testing.T) {
	ts := newTestSet()
	ts.set.Database = nil
	s := newService(t, ts.set, nil)
	_, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{Intent: "query_db_metrics"})
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "integration not configured: db_metrics") {
		t.Errorf("err = %v", err)
	}
}

func TestReadOnlyFakeClientset(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	if !s.kubeEnforced {
		t.Fatal("read-only not enforced on the fake clientset")
	}
	err := s.be.Kube.CoreV1().Pods("shop").Delete(t.Context(), "web-1", metav1.DeleteOptions{})
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("delete: %v, want ErrReadOnly", err)
	}
	_, err = s.be.Kube.CoreV1().ConfigMaps("shop").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("create: %v, want ErrReadOnly", err)
	}
	if _, err := s.be.Kube.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{}); err != nil {
		t.Errorf("get refused: %v", err)
	}
	// A tool that tries to write fails with a read_only_violation trip.
	_ = s.reg.Add(&Tool{
		Def:   &evidencev1.ToolDefinition{Intent: "evil_restart", ParamsSchema: []*evidencev1.ToolParam{pString("pod", "")}},
		Needs: []string{"pods"},
		Handler: func(ctx context.Context, s *Service, c *Call, r *Result) error {
			return s.be.Kube.CoreV1().Pods("shop").Delete(ctx, c.Params.String("pod"), metav1.DeleteOptions{})
		},
	})
	resp := run(t, s, "evil_restart", map[string]any{"pod": "web-1"})
	if resp.GetResult().GetSuccess() || hasTrip(resp.GetTrips(), TripReadOnly) == nil {
		t.Errorf("write attempt: success=%v trips=%v", resp.GetResult().GetSuccess(), resp.GetTrips())
	}
	if _, err := ts.kube.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{}); err != nil {
		t.Errorf("pod was deleted: %v", err)
	}
}

func TestReadOnlyRealClientset(t *testing.T) {
	var writes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	}))
	defer srv.Close()

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	k, enforced := ReadOnlyKube(cs)
	if !enforced {
		t.Fatal("not enforced on *kubernetes.Clientset")
	}
	if _, err := k.CoreV1().Pods("ns").Get(t.Context(), "p", metav1.GetOptions{}); err != nil {
		t.Errorf("get: %v", err)
	}
	if err := k.CoreV1().Pods("ns").Delete(t.Context(), "p", metav1.DeleteOptions{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("delete: %v, want ErrReadOnly", err)
	}
	if _, err := k.AppsV1().Deployments("ns").Patch(t.Context(), "d", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("patch: %v, want ErrReadOnly", err)
	}
	if writes.Load() != 0 {
		t.Errorf("%d writes reached the API server", writes.Load())
	}

	// A clientset built from ReadOnlyRESTConfig refuses writes as well.
	cs2, err := kubernetes.NewForConfig(ReadOnlyRESTConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs2.CoreV1().Pods("ns").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("create via ReadOnlyRESTConfig: %v", err)
	}
	if writes.Load() != 0 {
		t.Errorf("%d writes reached the API server", writes.Load())
	}
}

func TestReadOnlyTransportMethods(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	c := &http.Client{Transport: ReadOnlyTransport(nil)}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		req, _ := http.NewRequestWithContext(t.Context(), m, srv.URL, strings.NewReader(""))
		resp, err := c.Do(req)
		allowed := m == "GET" || m == "HEAD"
		if allowed && err != nil || !allowed && !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: err = %v", m, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}
