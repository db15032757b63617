package live

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// esResponse is a search response in the shape Elasticsearch 8 and
// OpenSearch 2 return (hits.hits[]._source), one document nesting its
// Kubernetes fields and one storing them flat, as Fluent Bit may.
const esResponse = `{"took":4,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},
"hits":{"total":{"value":2,"relation":"eq"},"max_score":null,"hits":[
{"_index":"logs-2026.03.09","_id":"a1","_score":null,"_source":{"@timestamp":"2026-03-09T14:35:02.120Z","message":"upstream connect error: connection refused","log":{"level":"error"},"kubernetes":{"namespace":"shop","pod":{"name":"cart-6f7-abc"}},"service":{"name":"cart"}},"sort":[1773066902120]},
{"_index":"logs-2026.03.09","_id":"a0","_score":null,"_source":{"@timestamp":"2026-03-09T14:35:01.000Z","message":"WARN retrying request","kubernetes.namespace":"shop","kubernetes.pod.name":"cart-6f7-abc","service.name":"cart"},"sort":[1773066901000]}]}}`

func TestElasticSearchLogs(t *testing.T) {
	var gotBody map[string]any
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/logs-*/_search" || r.Method != http.MethodPost {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		gotAuth = r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &gotBody)
		_, _ = io.WriteString(w, esResponse)
	}))
	defer srv.Close()
	t.Setenv("ES_KEY", "s3cr3t-key")
	cfg, err := integrations.Parse([]byte("logs:\n  type: elasticsearch\n  url: " + srv.URL + "\n  index: logs-*\n  auth:\n    api_key: {env: ES_KEY}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Logs(cfg.Logs)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	lines, err := s.SearchLogs(context.Background(), backend.LogQuery{Query: "connection refused", Namespace: "shop", Pod: "cart-*", Levels: []string{"ERROR"}, Start: start, End: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if gotAuth != "ApiKey s3cr3t-key" {
		t.Fatalf("auth header not sent: %q", gotAuth)
	}
	q, _ := json.Marshal(gotBody)
	for _, want := range []string{`"query_string"`, `"connection refused"`, `"kubernetes.namespace":"shop"`, `"wildcard"`, `"@timestamp"`} {
		if !strings.Contains(string(q), want) {
			t.Errorf("query lacks %s: %s", want, q)
		}
	}
	if len(lines) != 2 || lines[0].Level != "WARN" || lines[1].Level != "ERROR" || lines[1].Pod != "cart-6f7-abc" || lines[0].Namespace != "shop" {
		t.Fatalf("hits not mapped oldest first with nested and flat fields: %+v", lines)
	}
}

func TestElasticErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"unauthorized", 401, `{"error":"unauthorized"}`, "credentials rejected"},
		{"missing index", 404, `{"error":{"type":"index_not_found_exception"}}`, "wrong URL or index"},
		{"garbage", 200, `<html>proxy error</html>`, "not a search result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			e := &Elastic{URL: srv.URL, Index: "x", Vendor: "opensearch", Client: srv.Client()}
			_, err := e.SearchLogs(context.Background(), backend.LogQuery{Query: "x"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want %q, got %v", tt.want, err)
			}
		})
	}
}

// lokiResponse is a /loki/api/v1/query_range streams result as Loki 3 returns it.
const lokiResponse = `{"status":"success","data":{"resultType":"streams","result":[
{"stream":{"namespace":"shop","pod":"cart-6f7-abc","app":"cart","container":"cart"},
 "values":[["1773066902120000000","level=error msg=\"dial tcp 10.0.0.7:5432: connect: connection refused\""],["1773066901000000000","level=warn msg=retrying"]]}],
"stats":{}}}`

func TestLoki(t *testing.T) {
	var gotQuery, gotOrg string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery = r.URL.Query().Get("query")
		gotOrg = r.Header.Get("X-Scope-OrgID")
		_, _ = io.WriteString(w, lokiResponse)
	}))
	defer srv.Close()
	cfg, err := integrations.Parse([]byte("logs:\n  type: loki\n  url: " + srv.URL + "\n  tenant_id: team-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Logs(cfg.Logs)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := s.SearchLogs(context.Background(), backend.LogQuery{Query: "refused", Namespace: "shop", Pod: "cart-*"})
	if err != nil {
		t.Fatal(err)
	}
	if gotQuery != `{namespace="shop",pod=~"cart-.*"} |~ "(?i)refused"` {
		t.Fatalf("LogQL: %s", gotQuery)
	}
	if gotOrg != "team-a" {
		t.Fatalf("tenant header: %q", gotOrg)
	}
	if len(lines) != 2 || lines[1].Level != "ERROR" || lines[0].Level != "WARN" || lines[1].Service != "cart" {
		t.Fatalf("lines: %+v", lines)
	}
}

// TestLokiLogQLGroups: a query's alternatives and groups become one line
// filter per clause (an alternation for OR), not a filter per word
// (which would require the literal "OR" in every line); a query with no
// line-filter form is refused before any request.
func TestLokiLogQLGroups(t *testing.T) {
	l := &Loki{URL: "http://127.0.0.1:1"}
	for _, tc := range []struct{ q, want string }{
		{`"approved" OR "scheduled"`, `{namespace=~".+"} |~ "(?i)(approved|scheduled)"`},
		{`(known OR flap*) AND ("core-sw.1" OR uplink) -debug`, `{namespace=~".+"} |~ "(?i)(known|flap)" |~ "(?i)(core-sw\\.1|uplink)" !~ "(?i)debug"`},
	} {
		got, err := l.LogQL(backend.LogQuery{Query: tc.q})
		if err != nil || got != tc.want {
			t.Errorf("%q: LogQL %s (err %v), want %s", tc.q, got, err, tc.want)
		}
	}
	if _, err := l.SearchLogs(context.Background(), backend.LogQuery{Query: "a OR -b"}); err == nil {
		t.Fatal("a query with no line-filter form searched")
	}
}

func TestPrometheusClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query_range" {
			w.WriteHeader(404)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"status":"error","errorType":"unauthorized","error":"no"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"api"},"values":[[1773066900,"1"],[1773066960,"0"]]}]}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tok"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := integrations.Parse([]byte("prometheus:\n  url: " + srv.URL + "\n  auth:\n    bearer_token: {file: " + filepath.Join(dir, "tok") + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := Prometheus(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1773066900, 0)
	v, _, err := m.QueryRange(context.Background(), "up", promv1.Range{Start: start, End: start.Add(time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.String(), "up{job=\"api\"}") {
		t.Fatalf("matrix: %s", v)
	}
	// Wrong credentials: a clear error, no secret in it.
	bad := &integrations.Prometheus{URL: srv.URL, Timeout: time.Second}
	mb, _, _ := Prometheus(bad)
	_, _, err = mb.QueryRange(context.Background(), "up", promv1.Range{Start: start, End: start.Add(time.Minute), Step: time.Minute})
	if err == nil || strings.Contains(err.Error(), "tok") {
		t.Fatalf("want an auth error without the token, got %v", err)
	}
}

func TestGitCommitsClassifiedAndDiff(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	base := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)
	commit := func(msg string, at time.Time, files map[string]string) string {
		for p, c := range files {
			full := filepath.Join(dir, p)
			_ = os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "dev", Email: "dev@example.com", When: at}})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	commit("initial", base.Add(-48*time.Hour), map[string]string{"main.go": "package main\n"})
	mig := commit("add index on orders.status", base, map[string]string{"db/migrations/0042_orders_status.sql": "CREATE INDEX CONCURRENTLY ...;\n"})
	commit("bump pgx", base.Add(time.Hour), map[string]string{"go.mod": "module x\nrequire pgx v5\n"})
	g, err := OpenGit(&integrations.Git{Repositories: []integrations.Repository{{Service: "orders", Path: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := g.Commits(context.Background(), backend.ChangeQuery{Service: "orders", Start: base.Add(-time.Hour), End: base.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].SHA != mig {
		t.Fatalf("want the 2 commits in the window, oldest first: %+v", cs)
	}
	if cs[0].Files[0].ChangeType != facts.ChangeDBMigration || cs[1].Files[0].ChangeType != facts.ChangeDependencyBump {
		t.Fatalf("classification: %+v / %+v", cs[0].Files, cs[1].Files)
	}
	diff, err := g.CommitDiff(context.Background(), mig[:7])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "+CREATE INDEX CONCURRENTLY") {
		t.Fatalf("diff: %s", diff)
	}
	if _, err := g.CommitDiff(context.Background(), "deadbeef"); err == nil {
		t.Fatal("unknown sha must error")
	}
}

func TestDeploysFromReplicaSets(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 3, 9, 10, m, 0, 0, time.UTC)) }
	rs := func(name, rev, image string, created metav1.Time) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: created,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": rev},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "cart"}}},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: image}}}}}}
	}
	cs := fake.NewClientset(rs("cart-a", "1", "cart:v1", at(0)), rs("cart-b", "2", "cart:v2", at(10)), rs("cart-c", "3", "cart:v1", at(20)))
	ch := &Changes{Kube: cs}
	ds, err := ch.Deploys(context.Background(), backend.ChangeQuery{Namespace: "shop", Service: "cart"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 || ds[2].Revision != "3" || !ds[2].IsRollback || ds[1].IsRollback || ds[2].PreviousRevision != "2" {
		t.Fatalf("deploys: %+v", ds)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "prometheus:\n  urll: http://x\n", "field urll not found"},
		{"bad url", "prometheus:\n  url: ftp://x\n", "prometheus.url"},
		{"creds in url", "prometheus:\n  url: http://u:p@x\n", "must not carry credentials"},
		{"logs type", "logs:\n  type: splunk\n  url: http://x\n", `logs.type "splunk"`},
		{"es index", "logs:\n  type: opensearch\n  url: http://x\n", "logs.index is required"},
		{"two auths", "prometheus:\n  url: http://x\n  auth:\n    bearer_token: {env: A}\n    api_key: {env: B}\n", "set one of"},
		{"git path", "git:\n  repositories:\n    - service: a\n", "git.repositories[0].path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := integrations.Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want %q, got %v", tt.want, err)
			}
			if err != nil && strings.Contains(err.Error(), "u:p@") {
				t.Fatalf("credentials leaked into the error: %v", err)
			}
		})
	}
	// A missing secret names its source, not a value.
	_, err := transport(integrations.Auth{BearerToken: integrations.Secret{Env: "RCAMESH_TEST_MISSING"}}, "")
	if err == nil || !strings.Contains(err.Error(), "RCAMESH_TEST_MISSING") {
		t.Fatalf("missing env secret: %v", err)
	}
}

func TestReadOnlyTransportRefusesWrites(t *testing.T) {
	called := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
	defer srv.Close()
	c := &http.Client{Transport: backend.ReadOnlyTransport(http.DefaultTransport)}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/api/v1/namespaces/x/pods/y", strings.NewReader("{}"))
		if _, err := c.Do(req); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("%s not refused: %v", m, err)
		}
	}
	if called {
		t.Fatal("a write reached the server")
	}
	if _, err := c.Get(srv.URL + "/api/v1/pods"); err != nil || !called {
		t.Fatalf("GET must pass: %v", err)
	}
}
