package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/target"
)

func TestNamesTarget(t *testing.T) {
	tests := []struct {
		text  string
		names []string
		want  bool
	}{
		{"CHG-12 started: rolling update of ledger-kafka to 3.9", []string{"ledger-kafka"}, true},
		{"Gala night: expect 5x donation traffic from 19:00", []string{"donation-intake"}, true},
		{"new api keys issued for the web team", []string{"orders-api"}, false}, // a structural word is no name
		{"pledges are up 3%", []string{"pledge-intake"}, false},                 // a word inside another is no mention
		{"restoring snapshot into board-db", []string{"board"}, true},           // the whole name, however short
	}
	for _, tc := range tests {
		if got := namesTarget(tc.text, tc.names); got != tc.want {
			t.Errorf("namesTarget(%q, %v) = %v, want %v", tc.text, tc.names, got, tc.want)
		}
	}
}

// A healthy reading quotes the change record, announcement or other
// system's line about its target around the alert, and nothing unrelated,
// too old, or logged by the target about its own routine work.
func TestExplainHealthQuotesTheRecordAroundTheAlert(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 4, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, pod, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Pod: pod, Level: level, Message: msg}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "UnderReplicated", Namespace: "race", Service: "timing-bus", StartsAt: timestamppb.New(*at(10, 20))}, nil)
	ev.Logs = []LogLine{
		line(at(10, 0), "change-calendar", "", "INFO", "OPS-4410 started: broker upgrade of timing-bus to 4.1"),
		line(at(10, 40), "change-calendar", "", "INFO", "OPS-4410 completed: timing-bus on 4.1"),
		line(at(10, 5), "change-calendar", "", "INFO", "OPS-4411 started: upgrade of billing-db"),                // another target
		line(at(7, 0), "timing-bus", "timing-bus-0", "INFO", "partition reassignment completed"),                 // its own routine line
		line(at(10, 10), "timing-bus", "timing-bus-1", "ERROR", "OPS-4410 broker restart failed for timing-bus"), // an error is no context
		line(&time.Time{}, "ops", "", "INFO", "timing-bus maintenance announced"),                                // far too old
		line(at(10, 35), "alarms", "", "INFO", `Alarm "UnderReplicated" state changed from ALARM to OK`),         // the alert's own record
	}
	f := healthyFinding(ModeHealthy, "deployment/race/timing-bus", 0.7)
	f.Statement = "No failure detected"
	ev.explainHealth(&f)
	quotes(t, f.Statement, []string{"OPS-4410 started", "OPS-4410 completed", "state changed from ALARM to OK"}, true)
	quotes(t, f.Statement, []string{"OPS-4411", "reassignment", "failed", "announced"}, false)
	if len(f.Validated) != 3 {
		t.Errorf("claims = %d, want one per quoted line (3)", len(f.Validated))
	}
	// Without an alert time nothing is placed "around" it.
	ev.Alert.StartsAt = nil
	g := healthyFinding(ModeHealthy, "deployment/race/timing-bus", 0.7)
	ev.explainHealth(&g)
	if g.Statement != "" || len(g.Validated) != 0 {
		t.Errorf("without an alert time: %q, %d claims", g.Statement, len(g.Validated))
	}
}

// A series is told from its siblings by what it measures, not where it was
// scraped.
func TestSeriesSelector(t *testing.T) {
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"state": "idle in transaction", "datname": "pickup", "server": "pg:5432"}, "{state=idle in transaction}"},
		{map[string]string{"pod": "api-1", "namespace": "shop", "job": "api", "code": "503"}, "{pod=api-1, code=503}"},
		{map[string]string{"instance": "10.0.0.1:9100", "job": "node"}, "{instance=10.0.0.1:9100}"},
		{map[string]string{"namespace": "shop"}, ""},
	}
	for _, tc := range tests {
		if got := seriesSelector(facts.Series{Name: "m", Labels: tc.labels}); got != tc.want {
			t.Errorf("seriesSelector(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// A commit is quoted with its description and files.
func TestCommitText(t *testing.T) {
	c := Commit{Commit: facts.Commit{SHA: "9e41c0771075", Service: "booker", Message: "bookings: check postcode in tx",
		Summary: "Returns early without rollback: the connection stays idle in transaction.", Files: []facts.CommitFile{{Path: "internal/bookings/create.go"}}}}
	got := commitText(c)
	for _, want := range []string{"9e41c07", "booker", "check postcode in tx", "idle in transaction", "internal/bookings/create.go"} {
		if !strings.Contains(got, want) {
			t.Errorf("commitText = %q, lacks %q", got, want)
		}
	}
}

// The settings quoted are those of the workload the conclusion is about
// that its words name; others, and other workloads', are not.
func TestRelevantSettings(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "MeterRestarts", Namespace: "metering", Service: "tariff-engine"}, nil)
	pod := func(wl string, settings ...string) Pod {
		return Pod{Pod: facts.Pod{Name: wl + "-7d9f-abcde", Workload: wl, Containers: []facts.Container{{Name: wl, Settings: settings}}}}
	}
	ev.Pods = []Pod{
		pod("tariff-engine", "flag -XX:MaxMetaspaceSize=192m", "env LOG_FORMAT=json", "mount /data from persistentvolumeclaim meter-data"),
		pod("billing-api", "flag -XX:MaxMetaspaceSize=64m"),
	}
	claims := []*investigationv1.Claim{{Claim: "tariff-engine restarted 5 times: java.lang.OutOfMemoryError: Metaspace"}}
	got := ev.relevantSettings(claims)
	if len(got) != 1 || !strings.Contains(got[0].text, "MaxMetaspaceSize=192m") {
		t.Fatalf("settings = %+v, want only tariff-engine's metaspace flag", got)
	}
	// A config file in a ConfigMap: the line the failure names.
	ev.Resources = []Resource{{Resource: facts.Resource{Kind: "ConfigMap", Namespace: "metering", Name: "cache-conf",
		Data: map[string]string{"redis.conf": "maxmemory 2gb\nmaxmemory-policy allkeys-lru\n# comment\nappendonly no"}}}}
	claims = append(claims, &investigationv1.Claim{Claim: "redis evicted_keys rose: OOM command not allowed when used memory > 'maxmemory'"})
	got = ev.relevantSettings(claims)
	var lines []string
	for _, g := range got {
		lines = append(lines, g.text)
	}
	if all := strings.Join(lines, "\n"); !strings.Contains(all, "“maxmemory 2gb”") || strings.Contains(all, "appendonly") {
		t.Errorf("settings = %s, want the maxmemory line and not the others", all)
	}
	if got := ev.relevantSettings(nil); len(got) != 0 {
		t.Errorf("settings without a conclusion: %+v", got)
	}
}

// Every replica crashing in the same minute is a common cause, not a
// transient restart; one pod's, a graceful stop, or crashes far apart are.
func TestCorrelatedCrash(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2028, 1, 1, 0, m, 0, 0, time.UTC); return &x }
	pod := func(name string, m int, code int32) Pod {
		return Pod{Pod: facts.Pod{Name: name, Restarts: 1, Containers: []facts.Container{{Name: "app", LastFinishedAt: at(m), LastExitCode: &code, RestartCount: 1}}}}
	}
	tests := []struct {
		name  string
		pods  []Pod
		total int
		want  bool
	}{
		{"all three in one minute, exit 2", []Pod{pod("a", 0, 2), pod("b", 0, 2), pod("c", 1, 2)}, 3, true},
		{"one pod", []Pod{pod("a", 0, 2)}, 3, false},
		{"two of three", []Pod{pod("a", 0, 2), pod("b", 0, 2)}, 3, false},
		{"far apart", []Pod{pod("a", 0, 2), pod("b", 20, 2)}, 2, false},
		{"graceful stops", []Pod{pod("a", 0, 143), pod("b", 0, 143)}, 2, false},
	}
	for _, tc := range tests {
		if got := correlatedCrash(tc.pods, tc.total); got != tc.want {
			t.Errorf("%s: correlated %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A readiness probe refused because the process crashed on its own is the
// crash's symptom; refused after the kubelet killed it, or with no crash,
// it is the probe's.
func TestReadinessRefusedAfterACrash(t *testing.T) {
	code := func(c int32) *int32 { return &c }
	mk := func(exit *int32) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "Restarts", Namespace: "m", Service: "api"}, nil)
		p := facts.Pod{Namespace: "m", Name: "api-1", Phase: "Running", Restarts: 2, Containers: []facts.Container{{Name: "api", RestartCount: 2, LastExitCode: exit, ReadinessProbe: "http-get :8080/ready"}}}
		ev.Pods = []Pod{{Pod: p}}
		now := time.Now()
		ev.Events = []Event{{Event: facts.Event{Namespace: "m", Type: "Warning", Reason: "Unhealthy", InvolvedKind: "Pod", InvolvedName: "api-1", Count: 9, LastSeen: &now,
			Message: `Readiness probe failed: Get "http://10.0.0.1:8080/ready": dial tcp 10.0.0.1:8080: connect: connection refused`}}}
		ev.Now = now
		return ev
	}
	for _, tc := range []struct {
		name string
		exit *int32
		want bool
	}{{"crashed with exit 3", code(3), false}, {"killed by the kubelet", code(137), true}, {"never terminated", nil, true}} {
		got := len(detectProbeFailure(mk(tc.exit))) > 0
		if got != tc.want {
			t.Errorf("%s: probe finding %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The crash site is the first frame of the program's own code after a
// crash header, in every runtime's frame syntax.
func TestCrashSites(t *testing.T) {
	lines := func(pod string, msgs ...string) []LogLine {
		var out []LogLine
		for _, m := range msgs {
			out = append(out, LogLine{LogLine: facts.LogLine{Pod: pod, Message: m}})
		}
		return out
	}
	var logs []LogLine
	logs = append(logs, lines("go-1", "level=info msg=ok", "panic: invalid argument to Int63n", "", "goroutine 7 [running]:",
		"math/rand.(*Rand).Int63n(0xc0001a6000, 0xff)", "\t/usr/local/go/src/math/rand/rand.go:122 +0xc5",
		"example.org/app/internal/pick.(*Weighted).Pick(0xc000412280)", "\t/src/internal/pick/weights.go:88 +0x1d4")...)
	logs = append(logs, lines("java-1", `Exception in thread "main" java.lang.IllegalStateException: bad`,
		"\tat java.base/java.util.Objects.requireNonNull(Objects.java:233)", "\tat com.acme.billing.Pricer.price(Pricer.java:57)")...)
	logs = append(logs, lines("py-1", "Traceback (most recent call last):", `  File "/app/orders/server.py", line 12, in main`, "    app.run()",
		`  File "/usr/lib/python3.12/site-packages/flask/app.py", line 880, in full_dispatch`, "    rv = self.dispatch_request()",
		`  File "/app/orders/views.py", line 142, in create`, "    code = body['code']", "KeyError: 'code'")...)
	ev := NewEvidence(&investigationv1.Alert{}, nil)
	ev.Logs = logs
	var got []string
	for _, c := range ev.crashSites() {
		got = append(got, c.site+"|"+c.function)
	}
	want := []string{"/src/internal/pick/weights.go:88|example.org/app/internal/pick.(*Weighted).Pick", "Pricer.java:57|", "/app/orders/views.py:142|"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("crash sites:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The alert's own expression, measured, decides whether its condition
// holds: with its threshold, or against its pre-incident level.
func TestAlertExprHeld(t *testing.T) {
	pts := func(vs ...float64) []facts.Point {
		var out []facts.Point
		for i, v := range vs {
			out = append(out, facts.Point{T: time.Date(2026, 9, 9, 9, i, 0, 0, time.UTC), V: v})
		}
		return out
	}
	build := func(ann map[string]string, vs ...float64) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "LessonApi401", Namespace: "lingo", Service: "lesson-api", Annotations: ann}, nil)
		q := `sum(rate(http_requests_total{code="401",service="lesson-api"}[5m]))`
		ev.Queries = map[string]string{"pin_q": q}
		peak := 0.0
		for _, v := range vs {
			peak = max(peak, v)
		}
		ev.Series = []Series{{Series: facts.Series{Name: q, Count: len(vs), Latest: vs[len(vs)-1], Peak: peak, Downsampled: pts(vs...)}, Cite: Cite{PinIDs: []string{"pin_q"}}}}
		return ev
	}
	noThreshold := map[string]string{"description": `sum(rate(http_requests_total{service="lesson-api",code="401"}[5m]))`}
	withThreshold := map[string]string{"expr": `sum(rate(http_requests_total{service="lesson-api",code="401"}[5m])) > 10`}
	tests := []struct {
		name           string
		ann            map[string]string
		vs             []float64
		holds, measure bool
	}{
		{"still high, no threshold", noThreshold, []float64{2, 2, 2, 2, 150, 180, 190, 189}, true, true},
		{"back to its level, no threshold", noThreshold, []float64{2, 2, 2, 2, 150, 180, 3, 2}, false, true},
		{"above its threshold", withThreshold, []float64{2, 2, 2, 2, 12, 14, 15, 16}, true, true},
		{"under its threshold again", withThreshold, []float64{2, 2, 2, 2, 12, 14, 15, 4}, false, true},
		{"no expression in the alert", map[string]string{"summary": "401s up"}, []float64{2, 2, 190}, false, false},
		{"the rule's generator URL", map[string]string{"generator_url": `http://prometheus:9090/graph?g0.expr=sum%28rate%28http_requests_total%7Bservice%3D%22lesson-api%22%2Ccode%3D%22401%22%7D%5B5m%5D%29%29+%3E+10`}, []float64{2, 2, 2, 2, 12, 14, 15, 4}, false, true},
	}
	for _, tc := range tests {
		h, holds, measured := build(tc.ann, tc.vs...).alertExprHeld()
		if holds != tc.holds || measured != tc.measure {
			t.Errorf("%s: holds %v measured %v (%s), want %v %v", tc.name, holds, measured, h.what, tc.holds, tc.measure)
		}
	}
}

// A healthy reading also quotes the target's own account of its state
// around the alert (a mode it entered), one line per template, never a
// request line, an error, or a line of another workload or long before.
func TestExplainHealthQuotesTheTargetsOwnAccount(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 4, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, pod, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Pod: pod, Level: level, Message: msg}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "LowThroughput", Namespace: "kiosk", Service: "ticket-desk", StartsAt: timestamppb.New(*at(10, 20))}, nil)
	ev.Logs = []LogLine{
		line(at(10, 1), "ticket-desk", "ticket-desk-7c9-a1", "INFO", "venue V-12 closed for the season, sales paused until 2026-06-01"),
		line(at(10, 1), "ticket-desk", "ticket-desk-7c9-b2", "INFO", "venue V-14 closed for the season, sales paused until 2026-06-01"), // same template
		line(at(10, 22), "ticket-desk", "ticket-desk-7c9-a1", "INFO", "POST /api/tickets 201 31ms"),                                     // a request
		line(at(10, 18), "ticket-desk", "ticket-desk-7c9-a1", "ERROR", "payment token refresh failed"),                                  // an error
		line(at(10, 19), "box-office", "box-office-5d-x1", "INFO", "reconciled 40 orders"),                                              // another workload
		line(at(8, 0), "ticket-desk", "ticket-desk-7c9-a1", "INFO", "cache warmed in 2s"),                                               // long before
	}
	f := healthyFinding(ModeHealthy, "deployment/kiosk/ticket-desk", 0.7)
	f.Statement = "No failure detected"
	ev.explainHealth(&f)
	if !strings.Contains(f.Statement, "closed for the season") {
		t.Errorf("statement %q lacks the target's own account", f.Statement)
	}
	quotes(t, f.Statement, []string{"POST /api", "token refresh", "reconciled", "cache warmed"}, false)
	if n := strings.Count(f.Statement, "closed for the season"); n != 1 {
		t.Errorf("the account is quoted %d times, want once per template", n)
	}
}

// A peer the target's own lines name (a cache it reconnected to) makes
// another system's record about that peer context of a healthy reading;
// the target's own name, an address and a prose word are no peer, and a
// peer named inside a longer word is no mention.
func TestExplainHealthQuotesAPeersRecord(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 4, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, pod, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Pod: pod, Level: level, Message: msg}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "SlowCheckout", Namespace: "shop", Service: "basket", StartsAt: timestamppb.New(*at(2, 15))}, nil)
	ev.Logs = []LogLine{
		line(at(2, 11), "basket", "basket-6d-a1", "INFO", "redis client: reconnected basket-store.cache.example.net:6380 after 2 retries"),
		line(at(2, 12), "basket", "basket-6d-a1", "INFO", "calling http://basket.shop.svc/health and 10.0.3.4:8080 timed:200"),
		line(at(2, 10), "provider-health", "", "INFO", "basket-store: planned patching started (replica failover)"),
		line(at(2, 13), "provider-health", "", "INFO", "ledger-store: planned patching started"), // another system's peer
	}
	peers := ev.peerNames(*at(2, 15))
	if strings.Join(peers, ",") != "basket-store" {
		t.Fatalf("peers = %v, want [basket-store]", peers)
	}
	f := healthyFinding(ModeHealthy, "deployment/shop/basket", 0.7)
	f.Statement = "No failure detected"
	ev.explainHealth(&f)
	if !strings.Contains(f.Statement, "basket-store: planned patching started") {
		t.Errorf("statement %q lacks the peer's record", f.Statement)
	}
	if strings.Contains(f.Statement, "ledger-store") {
		t.Errorf("statement %q quotes a line that names no peer", f.Statement)
	}
	for text, want := range map[string]bool{"basket-store: patched": true, "at basket-store.": true, "xbasket-store: patched": false, "basket-store-2 patched": false, "basket-stores": false} {
		if got := namesPeer(text, peers); got != want {
			t.Errorf("namesPeer(%q) = %v, want %v", text, got, want)
		}
	}
}

// A notice of planned work is sent days ahead: one a week before the alert
// that names its target is quoted; another system's line about it from
// five days before is not (past the look-back, and no notice).
func TestExplainHealthQuotesAWeekOldNotice(t *testing.T) {
	alertAt := time.Date(2026, 5, 10, 2, 12, 0, 0, time.UTC)
	before := func(d time.Duration) *time.Time { x := alertAt.Add(-d); return &x }
	ev := NewEvidence(&investigationv1.Alert{AlertName: "CacheErrors", Namespace: "huts", Service: "rate-cache", StartsAt: timestamppb.New(alertAt)}, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: before(7 * 24 * time.Hour), Service: "provider-health", Level: "INFO", Message: "Planned maintenance notice: rate-cache patching in the Sunday 02:00-03:00 window"}},
		{LogLine: facts.LogLine{Timestamp: before(5 * 24 * time.Hour), Service: "inventory", Level: "INFO", Message: "rate-cache warmed with 40k keys"}},
		{LogLine: facts.LogLine{Timestamp: before(10 * 24 * time.Hour), Service: "provider-health", Level: "INFO", Message: "Planned maintenance notice: rate-cache patching next month"}},
		{LogLine: facts.LogLine{Timestamp: before(6 * 24 * time.Hour), Service: "change-log", Level: "INFO", Message: "DEC-55 decommission of the old rate-cache host: traffic moved to the new cluster"}},
	}
	f := healthyFinding(ModeHealthy, "deployment/huts/rate-cache", 0.7)
	ev.explainHealth(&f)
	for _, want := range []string{"Sunday 02:00-03:00", "DEC-55 decommission"} {
		if !strings.Contains(f.Statement, want) {
			t.Errorf("statement %q lacks the week-old notice %q", f.Statement, want)
		}
	}
	quotes(t, f.Statement, []string{"warmed", "next month"}, false)
}

// A line that names the target's compound namespace whole (a janitor that
// deletes a preview environment) is context of a healthy reading; a
// generic namespace's name is no such mention.
func TestExplainHealthQuotesItsNamespacesRecord(t *testing.T) {
	alertAt := time.Date(2026, 7, 9, 12, 16, 0, 0, time.UTC)
	before := func(m int) *time.Time { x := alertAt.Add(-time.Duration(m) * time.Minute); return &x }
	for _, tc := range []struct {
		ns, line string
		want     bool
	}{
		{"review-app-311", "kube-janitor: namespace review-app-311 TTL 48h expired; deleting StatefulSet ra-311-db", true},
		{"tenant-acme", "billing-sync: tenant-acme suspended for non-payment, workloads scaled down", true},
		{"shop", "janitor: shop cleanup finished", false},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "CrashLooping", Namespace: tc.ns, Service: "web-portal", StartsAt: timestamppb.New(alertAt)}, nil)
			ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: before(20), Service: "ops-bot", Level: "INFO", Message: tc.line}}}
			f := healthyFinding(ModeHealthy, "deployment/"+tc.ns+"/web-portal", 0.7)
			ev.explainHealth(&f)
			if got := strings.Contains(f.Statement, tc.line[len(tc.line)-12:]); got != tc.want {
				t.Errorf("quoted %v, want %v: %q", got, tc.want, f.Statement)
			}
		})
	}
}

// The records around an alert are quoted whatever they name: a change
// record, an audit record of a write, planned work announced days ahead;
// not an error line, not routine lines, not a record from weeks before or
// long after, and a record with an id before one without.
func TestRecordsAround(t *testing.T) {
	alertAt := time.Date(2026, 6, 7, 6, 20, 0, 0, time.UTC)
	ts := func(d time.Duration) *time.Time { x := alertAt.Add(d); return &x }
	line := func(d time.Duration, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts(d), Service: svc, Level: level, Message: msg}}
	}
	ev := &Evidence{Logs: []LogLine{
		line(-3*24*time.Hour, "calendar", "INFO", "OPS-4410 announced: platform upgrade of cluster east-1, Sunday 06:00-06:40 UTC"),
		line(-40*time.Minute, "apiserver-audit", "INFO", `audit: user=j.doe verb=patch objectRef=deployments/shop/cart`),
		line(-5*time.Minute, "cart", "INFO", "GET /cart 200 12ms"),
		line(-2*time.Minute, "cart", "ERROR", "OPS-4410 upgrade broke the cart"),
		line(-20*24*time.Hour, "calendar", "INFO", "OPS-1 scheduled maintenance of the old cluster"),
		line(3*time.Hour, "calendar", "INFO", "OPS-4411 approved: next week's maintenance"),
		line(-4*24*time.Hour, "crm", "INFO", "newsletter sent to 20k customers"),
	}}
	got := ev.recordsAround(alertAt, 4)
	var msgs []string
	for _, l := range got {
		msgs = append(msgs, l.Message)
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"OPS-4410 announced", "verb=patch"} {
		if !strings.Contains(joined, want) {
			t.Errorf("records lack %q:\n%s", want, joined)
		}
	}
	for _, not := range []string{"GET /cart", "broke the cart", "OPS-1 ", "OPS-4411", "newsletter"} {
		if strings.Contains(joined, not) {
			t.Errorf("records hold %q:\n%s", not, joined)
		}
	}
	if one := ev.recordsAround(alertAt, 1); len(one) != 1 || !strings.Contains(one[0].Message, "OPS-4410") {
		t.Errorf("a record with an id goes first: %v", one)
	}
}

// The record search's query is one disjunction of quoted words, each of
// which a record of planned work says.
func TestRecordQuery(t *testing.T) {
	q := RecordQuery(nil)
	if strings.Count(q, " OR ") != len(recordWords)-1 || !strings.HasPrefix(q, `"`) {
		t.Fatalf("query %q", q)
	}
	for _, w := range recordWords {
		if !strings.Contains(q, `"`+w+`"`) {
			t.Errorf("query lacks %q", w)
		}
	}
	// The names the alert's texts give what it watches are searched too.
	q = RecordQuery(&investigationv1.Alert{AlertName: "invoice-render-depth", Summary: "invoice-render queue above 5000 visible messages", Labels: map[string]string{"host": "pg-standby-2"}})
	for _, w := range []string{`"invoice-render-depth"`, `"invoice-render"`, `"pg-standby-2"`} {
		if !strings.Contains(q, w) {
			t.Errorf("query %q lacks %s", q, w)
		}
	}
	// The service's name and its distinctive words, under any label
	// spelling; a consumer group that intake resolved from a selector in the
	// summary (an annotation under its canonical key) is searched too;
	// structural words are not.
	q = RecordQuery(&investigationv1.Alert{AlertName: "LagHigh", Labels: map[string]string{"app_kubernetes_io_name": "score-ingest-api"},
		Annotations: map[string]string{target.CanonicalKey(target.ConsumerGroup): "tally-group"}})
	for _, w := range []string{`"score-ingest-api"`, `"score"`, `"ingest"`, `"tally-group"`, `"tally"`} {
		if !strings.Contains(q, w) {
			t.Errorf("query %q lacks %s", q, w)
		}
	}
	if strings.Contains(q, `"api"`) || strings.Contains(q, `"group"`) {
		t.Errorf("query %q searches a structural word", q)
	}
}

// A healthy reading quotes how the stories it quotes ended: the latest
// later line of each system it quotes (the target caught up, the operator
// finished), not a line of a system it does not quote, not a warning or
// an error, not one past contextAfter, not a template it already quotes;
// and a line read twice (a raw pod log with its level, the log store's
// record without) is quoted once.
func TestExplainHealthQuotesHowItEnded(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 7, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, pod, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Pod: pod, Level: level, Message: msg}}
	}
	a := &investigationv1.Alert{AlertName: "LagHigh", Summary: `consumer lag {consumergroup="tally"} = 9200`, StartsAt: timestamppb.New(*at(22, 9)),
		Annotations: map[string]string{target.CanonicalKey(target.ConsumerGroup): "tally"}}
	ev := NewEvidence(a, nil)
	ev.Logs = []LogLine{
		line(at(22, 2), "kafka-operator", "", "INFO", "rolling broker tally-kafka-0 for a planned CA renewal"),
		line(at(22, 3), "tally", "tally-77f7-np7m5", "INFO", "heartbeat failed since group is rebalancing"),
		line(at(22, 3), "", "tally-77f7-np7m5", "", "INFO heartbeat failed since group is rebalancing"), // the same line, read raw
		line(at(22, 10), "kafka-operator", "", "INFO", "rolling broker tally-kafka-2 for a planned CA renewal"),
		line(at(22, 12), "tally", "tally-77f7-np7m5", "WARN", "slow commit of offsets"),
		line(at(22, 17), "tally", "tally-77f7-np7m5", "INFO", "caught up: lag 0 on all partitions"),
		line(at(22, 18), "ledger", "ledger-5d-x1", "INFO", "ledger compacted"),
		line(at(23, 30), "tally", "tally-77f7-np7m5", "INFO", "hourly totals published"),
	}
	f := healthyFinding(ModeHealthy, "deployment/results/tally", 0.7)
	f.Statement = "No failure detected"
	ctx := ev.healthContext()
	f.explainWith(append(ctx, ev.outcomeLines(ctx)...), ev.alertTime())
	quotes(t, f.Statement, []string{"planned CA renewal", "rebalancing", "caught up"}, true)
	quotes(t, f.Statement, []string{"slow commit", "ledger compacted", "hourly totals"}, false)
	if n := strings.Count(f.Statement, "rebalancing"); n != 1 {
		t.Errorf("one line is quoted %d times", n)
	}
	if n := strings.Count(f.Statement, "rolling broker"); n != 1 {
		t.Errorf("the operator's template is quoted %d times, want once", n)
	}
}

// A record of planned, approved work on the alert's target, made before the
// alert, is found; one about another target, one made after the alert, one
// without a record id, or one that records no plan is not.
func TestPlannedRecord(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 4, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: "change-calendar", Level: "INFO", Message: msg}}
	}
	for _, tc := range []struct {
		name string
		l    LogLine
		want bool
	}{
		{"approved work on the target", line(at(9, 30), "OPS-7120 approved: add a fourth replica to ledger-store (initial copy ~2h)"), true},
		{"scheduled maintenance of the target", line(at(8, 0), "RFC-311 scheduled maintenance of ledger-store storage, 09:00-11:00"), true},
		{"approved work on another target", line(at(9, 30), "OPS-7121 approved: add a replica to billing-db"), false},
		{"recorded after the alert", line(at(10, 40), "OPS-7122 approved: resize ledger-store"), false},
		{"no record id", line(at(9, 30), "approved: add a fourth replica to ledger-store"), false},
		{"a record of no plan", line(at(9, 30), "OPS-7123 ledger-store replica count is 4"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "ReplicationLagHigh", Namespace: "books", Service: "ledger-store", StartsAt: timestamppb.New(*at(10, 20))}, nil)
			ev.Logs = []LogLine{tc.l}
			if _, got := ev.plannedRecord(); got != tc.want {
				t.Errorf("plannedRecord = %v, want %v", got, tc.want)
			}
		})
	}
}

// The records around the alert that name its target are followed by their
// ids; a record about another target is not.
func TestRecordIDs(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 5, 4, h, m, 0, 0, time.UTC); return &x }
	ev := NewEvidence(&investigationv1.Alert{AlertName: "PickErrors", Namespace: "wms", Service: "pick-api", StartsAt: timestamppb.New(*at(10, 20))}, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: at(9, 0), Service: "change-calendar", Level: "INFO", Message: "CHG-7781 announced: planned failover test (expected 5xx on pick-api)"}},
		{LogLine: facts.LogLine{Timestamp: at(9, 5), Service: "change-calendar", Level: "INFO", Message: "CHG-7790 announced: upgrade of billing-db"}},
	}
	got := Result{ev: ev}.RecordIDs()
	if len(got) != 1 || got[0] != "CHG-7781" {
		t.Errorf("RecordIDs = %v, want [CHG-7781]", got)
	}
	if ids := (Result{}).RecordIDs(); ids != nil {
		t.Errorf("no evidence: %v", ids)
	}
}

// A healthy reading quotes what other systems logged last before the
// onset (the first warning): the nearest systems first, at most two, not
// a warning, not the target's own line, not one from before the window;
// and then how each of those stories ended.
func TestExplainHealthQuotesWhatSetItOff(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 9, 27, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Level: level, Message: msg}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "BrokenPipes", Service: "hls-edge", StartsAt: timestamppb.New(*at(17, 0))}, nil)
	ev.Logs = []LogLine{
		line(at(16, 30), "ticketing", "INFO", "sales closed for match 88-2211"),  // before the window
		line(at(16, 48), "scoreboard", "INFO", "match 88-2211: 90+3 added time"), // superseded by its later line
		line(at(16, 49), "cdn-config", "INFO", "edge rule purge done"),           // a third system, farther
		line(at(16, 50), "scoreboard", "INFO", "match 88-2211 Harbour Rovers v Mill Lane: full time"),
		line(at(16, 50), "hls-edge", "INFO", "viewers 8800 (live matches: 4)"),                  // the target's own
		line(at(16, 50), "chat", "WARN", "moderation queue slow"),                               // a warning
		line(at(16, 51), "hls-edge", "WARN", "ClientAbortException: Broken pipe while writing"), // the onset
		line(at(16, 52), "chat", "INFO", "room 88-2211 archived"),
		line(at(17, 5), "scoreboard", "INFO", "match 88-2211 report published"),
	}
	f := healthyFinding(ModeHealthy, "deployment/streaming/hls-edge", 0.7)
	f.Statement = "No failure detected"
	ctx := ev.healthContext()
	ctx = append(ctx, ev.precursorLines(ctx)...)
	f.explainWith(append(ctx, ev.outcomeLines(ctx)...), ev.alertTime())
	quotes(t, f.Statement, []string{"full time", "edge rule purge", "report published"}, true)
	quotes(t, f.Statement, []string{"sales closed", "added time", "moderation queue", "room 88-2211 archived"}, false)
}

// quotes asserts that the statement quotes every text of texts (want) or
// none of them (!want).
func quotes(t *testing.T, statement string, texts []string, want bool) {
	t.Helper()
	for _, x := range texts {
		if got := strings.Contains(statement, x); got != want {
			if want {
				t.Errorf("statement %q lacks %q", statement, x)
			} else {
				t.Errorf("statement %q quotes %q", statement, x)
			}
		}
	}
}
