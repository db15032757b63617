package live

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Answers in the shape of the Atlassian Statuspage public API v2.
const (
	spIncidents = `{"page":{"id":"y2j98763l56q","name":"Mailvolt","url":"https://status.mailvolt.example","time_zone":"Etc/UTC","updated_at":"2027-03-02T09:41:00.000Z"},
"incidents":[{"id":"cp306tmzcl0y","name":"Delayed delivery in EU","status":"identified","impact":"major","created_at":"2027-03-02T09:04:00.000Z","updated_at":"2027-03-02T09:40:00.000Z","monitoring_at":null,"resolved_at":null,"shortlink":"http://stspg.io/x",
"incident_updates":[{"id":"u2","status":"identified","body":"A storage node of the EU queue failed.","created_at":"2027-03-02T09:40:00.000Z","updated_at":"2027-03-02T09:40:00.000Z","display_at":"2027-03-02T09:40:00.000Z"},
{"id":"u1","status":"investigating","body":"We are investigating delays.","created_at":"2027-03-02T09:10:00.000Z"}],
"components":[{"id":"c1","name":"SMTP relay EU","status":"major_outage"}]},
{"id":"old1","name":"API latency","status":"resolved","impact":"minor","created_at":"2027-02-20T08:00:00.000Z","resolved_at":"2027-02-20T09:00:00.000Z","incident_updates":[]}]}`
	spSummary = `{"page":{"id":"y2j98763l56q","name":"Mailvolt","url":"https://status.mailvolt.example"},
"status":{"indicator":"major","description":"Partial System Outage"},
"components":[{"id":"c1","name":"SMTP relay EU","status":"major_outage"},{"id":"c2","name":"Webhooks","status":"operational"}],
"incidents":[{"id":"cp306tmzcl0y","name":"Delayed delivery in EU","status":"identified","impact":"major","created_at":"2027-03-02T09:04:00.000Z","components":[{"name":"SMTP relay EU","status":"major_outage"}]}],
"scheduled_maintenances":[]}`
)

// statusServer serves a status page; fail answers instead while it
// returns a status code (0: serve normally). It counts requests per path.
func statusServer(t *testing.T, fail func(path string, n int64) int) (*httptest.Server, map[string]*atomic.Int64) {
	t.Helper()
	counts := map[string]*atomic.Int64{}
	for _, p := range statusEndpoints {
		counts[p] = &atomic.Int64{}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := counts[r.URL.Path]
		if !ok || r.Method != http.MethodGet || r.Header.Get("Authorization") != "" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		n := c.Add(1)
		if fail != nil {
			if code := fail(r.URL.Path, n); code != 0 {
				http.Error(w, "failing", code)
				return
			}
		}
		switch r.URL.Path {
		case "/api/v2/incidents.json":
			_, _ = io.WriteString(w, spIncidents)
		case "/api/v2/summary.json":
			_, _ = io.WriteString(w, spSummary)
		default:
			http.NotFound(w, r) // this page has no maintenance endpoint
		}
	}))
	t.Cleanup(srv.Close)
	return srv, counts
}

func newStatusReader(urls ...string) *StatusPages {
	sp := NewStatusPages(&integrations.StatusPage{URLs: urls, Timeout: 2 * time.Second})
	sp.RetryWait = time.Millisecond
	return sp
}

func TestStatusPagesRead(t *testing.T) {
	srv, counts := statusServer(t, nil)
	sp := newStatusReader(srv.URL + "/")
	got, err := sp.StatusIncidents(t.Context(), "mailvolt")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("incidents = %+v, want the open one (reported twice) once and the resolved one", got)
	}
	open := got[0]
	if open.Name != "Delayed delivery in EU" || !open.Open() || open.Page != "Mailvolt" || open.LatestUpdate != "A storage node of the EU queue failed." ||
		strings.Join(open.Components, ",") != "SMTP relay EU (major_outage)" {
		t.Errorf("open incident = %+v", open)
	}
	if got[1].Open() {
		t.Errorf("resolved incident read as open: %+v", got[1])
	}
	for p, c := range counts {
		if c.Load() != 1 {
			t.Errorf("%s requested %d times, want once", p, c.Load())
		}
	}
	// The client cannot write, whoever uses it.
	if resp, err := sp.Client.Post(srv.URL+"/api/v2/incidents.json", "application/json", strings.NewReader("{}")); !errors.Is(err, backend.ErrReadOnly) {
		if resp != nil {
			resp.Body.Close()
		}
		t.Errorf("POST through the status-page client: err = %v, want ErrReadOnly", err)
	}
	// Another provider's name matches neither the page nor its address.
	if other, err := sp.StatusIncidents(t.Context(), "paynorth"); err != nil || len(other) != 0 {
		t.Errorf("paynorth: %v %v, want nothing", other, err)
	}
}

func TestStatusPagesRetries(t *testing.T) {
	srv, counts := statusServer(t, func(path string, n int64) int {
		if path == "/api/v2/incidents.json" && n <= 2 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	got, err := newStatusReader(srv.URL).StatusIncidents(t.Context(), "")
	if err != nil || len(got) == 0 {
		t.Fatalf("after two 503s: %v %v", got, err)
	}
	if n := counts["/api/v2/incidents.json"].Load(); n != 3 {
		t.Errorf("incidents.json requested %d times, want 3", n)
	}
}

func TestStatusPagesFailures(t *testing.T) {
	tests := []struct {
		name     string
		fail     func(path string, n int64) int
		want     string
		attempts int64
	}{
		{"always 503", func(string, int64) int { return http.StatusServiceUnavailable }, "HTTP 503", 3},
		{"404 is not retried", func(p string, _ int64) int {
			if p == "/api/v2/incidents.json" {
				return http.StatusNotFound
			}
			return 0
		}, "HTTP 404", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, counts := statusServer(t, tc.fail)
			_, err := newStatusReader(srv.URL).StatusIncidents(t.Context(), "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if n := counts["/api/v2/incidents.json"].Load(); n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

func TestStatusPagesOversize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"page":{"name":"Big"},"incidents":[{"name":"`)
		_, _ = io.WriteString(w, strings.Repeat("x", maxStatusBody))
		_, _ = io.WriteString(w, `"}]}`)
	}))
	defer srv.Close()
	_, err := newStatusReader(srv.URL).StatusIncidents(t.Context(), "")
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want the answer refused as too large", err)
	}
}

func TestStatusPagesTimeout(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select { // a page that never answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	sp := newStatusReader(srv.URL)
	sp.Client.Timeout = 50 * time.Millisecond
	_, err := sp.StatusIncidents(t.Context(), "")
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if hits.Load() != statusAttempts {
		t.Errorf("%d attempts, want %d", hits.Load(), statusAttempts)
	}
}

func TestStatusPagesOnePageDown(t *testing.T) {
	up, _ := statusServer(t, nil)
	down, _ := statusServer(t, func(string, int64) int { return http.StatusBadGateway })
	got, err := newStatusReader(down.URL, up.URL).StatusIncidents(t.Context(), "")
	if err != nil || len(got) != 2 {
		t.Errorf("one page down: %d incidents, err %v; want the other page's", len(got), err)
	}
}

func TestBuildStatusPage(t *testing.T) {
	srv, _ := statusServer(t, nil)
	cfg, err := integrations.Parse([]byte("statuspage:\n  urls: [" + srv.URL + "]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StatusPage.Timeout != 10*time.Second {
		t.Errorf("default timeout = %v", cfg.StatusPage.Timeout)
	}
	if c, err := integrations.Parse([]byte("statuspage: {urls: [" + srv.URL + "], timeout: 3s}\n")); err != nil || c.StatusPage.Timeout != 3*time.Second {
		t.Errorf("timeout: 3s read as %v (%v)", c, err)
	}
	set, st := Build(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if set.Status == nil || set.Source(backend.AreaStatusPage) != "statuspage" || len(st) != 1 || !st[0].Available {
		t.Fatalf("set = %+v, status %+v", set, st)
	}
	if h := set.Health(t.Context()); h["statuspage"] != nil {
		t.Errorf("health = %v", h)
	}
	for _, bad := range []string{"statuspage: {urls: []}\n", "statuspage: {urls: [ftp://x]}\n", "statuspage: {urls: [\"https://u:p@status.x.example\"]}\n"} {
		if _, err := integrations.Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "statuspage.urls") {
			t.Errorf("%q: err = %v, want one naming statuspage.urls", bad, err)
		}
	}
}
