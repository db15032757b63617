package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/server"
)

func TestAlertmanagerConfig(t *testing.T) {
	c := AlertmanagerConfig("http://127.0.0.1:9/api/v4/alerts/alertmanager")
	for _, want := range []string{"group_wait: 1s", "group_interval: 2s", "repeat_interval: 4s",
		`url: "http://127.0.0.1:9/api/v4/alerts/alertmanager"`, "send_resolved: true"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
}

// startRcamesh runs every service in-process on the demo scenario's
// fixture (-target=all, embedded NATS, temp data dir, 127.0.0.1 ports) and
// returns its gRPC address and HTTP URL.
func startRcamesh(ctx context.Context, t *testing.T) (grpcAddr, httpURL string) {
	t.Helper()
	set, _, err := fixture.FromDir(filepath.Join("..", "..", "scenarios", "demo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return startRcameshOn(ctx, t, set)
}

// startRcameshOn runs every service in-process against set until the test ends.
func startRcameshOn(ctx context.Context, t *testing.T, set *backend.Set) (grpcAddr, httpURL string) {
	t.Helper()
	l, err := modules.StartLocal(ctx, modules.Options{Backend: set}, t.TempDir(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("rcamesh stopped with %v", err)
		}
	})
	return l.GRPCAddr, "http://" + l.HTTPAddr
}

// countingProxy forwards Alertmanager's webhooks to rcamesh's intake and
// counts them, so the test knows when a repeat or a resolution arrived.
type countingProxy struct {
	target string
	seen   chan string // the "status" of each notification
}

func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	resp, err := http.Post(p.target, "application/json", strings.NewReader(string(body)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rb)
	st := "firing"
	if strings.Contains(string(body), `"status":"resolved"`) {
		st = "resolved"
	}
	if resp.StatusCode != http.StatusOK {
		st = fmt.Sprintf("error %d: %s", resp.StatusCode, rb)
	}
	p.seen <- st
}

// TestAlertmanagerToBrain runs a real Alertmanager whose webhook receiver is
// rcamesh's alert intake (all services in-process): the first notification
// opens exactly one investigation, a repeat notification of the same group
// attaches to it, and the resolution is recorded on the session.
func TestAlertmanagerToBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Alertmanager and every rcamesh service")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	grpcAddr, httpURL := startRcamesh(ctx, t)

	proxy := &countingProxy{target: httpURL + "/api/v4/alerts/alertmanager", seen: make(chan string, 16)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	defer hs.Close()

	am, err := StartAlertmanager(ctx, t.TempDir(), "http://"+l.Addr().String()+"/")
	skipIfMissing(t, err)
	defer am.Stop()

	cc, err := server.NewClientConn(grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	bc := brainv1.NewBrainServiceClient(cc)

	alert := PostableAlert{
		Labels: map[string]string{"alertname": "HighErrorRate", "severity": "critical", "namespace": "retail",
			"service": "orders-api", "job": "orders-api"},
		Annotations: map[string]string{"summary": "5xx ratio above 5% on orders-api"},
		StartsAt:    time.Now().Add(-time.Minute).UTC(),
	}
	if err := PostAlerts(ctx, am.URL, alert); err != nil {
		t.Fatal(err)
	}
	next := func(what string) string {
		t.Helper()
		select {
		case st := <-proxy.seen:
			if strings.HasPrefix(st, "error") {
				t.Fatalf("%s: intake answered %s", what, st)
			}
			return st
		case <-ctx.Done():
			t.Fatalf("no %s notification from Alertmanager\n%s", what, am.Log())
		}
		return ""
	}
	if st := next("first"); st != "firing" {
		t.Fatalf("first notification is %s", st)
	}

	// Exactly one session, with one investigation.
	var session string
	err = eventually(ctx, 30*time.Second, func() error {
		ls, err := bc.ListSessions(ctx, &brainv1.ListSessionsRequest{Limit: 50})
		if err != nil {
			return err
		}
		var ids []string
		for _, s := range ls.GetSessions() {
			if s.GetState() != "noise" {
				ids = append(ids, s.GetSessionId())
			}
		}
		if len(ids) != 1 {
			return fmt.Errorf("sessions %v, want one", ids)
		}
		session = ids[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	investigations := func() []string {
		t.Helper()
		gs, err := bc.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: session})
		if err != nil {
			t.Fatal(err)
		}
		return gs.GetInvestigationIds()
	}
	if inv := investigations(); len(inv) != 1 {
		t.Fatalf("investigations after the first notification: %v", inv)
	}

	// The repeat notification (repeat_interval) attaches; no new investigation.
	if st := next("repeat"); st != "firing" {
		t.Fatalf("repeat notification is %s", st)
	}
	err = eventually(ctx, 30*time.Second, func() error {
		gs, err := bc.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: session})
		if err != nil {
			return err
		}
		if n := gs.GetSession().GetAttachedAlerts(); n < 1 {
			return fmt.Errorf("attached_alerts = %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv := investigations(); len(inv) != 1 {
		t.Fatalf("investigations after the repeat: %v", inv)
	}

	// Resolve: Alertmanager sends status=resolved, recorded on the session.
	alert.EndsAt = time.Now().UTC()
	if err := PostAlerts(ctx, am.URL, alert); err != nil {
		t.Fatal(err)
	}
	for next("resolution") != "resolved" {
	}
	err = eventually(ctx, 30*time.Second, func() error {
		stream, err := bc.StreamEvents(ctx, &brainv1.StreamEventsRequest{SessionId: session, NoFollow: true})
		if err != nil {
			return err
		}
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return errors.New("no resolution event on the session")
			}
			if err != nil {
				return err
			}
			lc := ev.GetEvent().GetLifecycle()
			if lc.GetKind() == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_ATTACHED &&
				lc.GetDetails().GetFields()["resolved"].GetBoolValue() {
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv := investigations(); len(inv) != 1 {
		t.Fatalf("investigations after the resolution: %v", inv)
	}
}
