package intake

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
)

const amPayload = `{
  "version": "4",
  "groupKey": "{}:{alertname=\"KubePodCrashLooping\"}",
  "status": "firing",
  "receiver": "rcamesh",
  "groupLabels": {"alertname": "KubePodCrashLooping"},
  "commonLabels": {"alertname": "KubePodCrashLooping", "namespace": "shop", "severity": "critical", "cluster": "prod-1"},
  "commonAnnotations": {"summary": "Pod is crash looping."},
  "externalURL": "http://am.example:9093",
  "alerts": [
    {"status": "firing",
     "labels": {"pod": "cart-7d9f-abcde", "deployment": "cart", "container": "cart"},
     "annotations": {"description": "cart-7d9f-abcde restarted 5 times in 10 minutes", "error": "exit code 137"},
     "startsAt": "2026-01-03T10:05:00Z", "endsAt": "0001-01-01T00:00:00Z",
     "generatorURL": "http://prom/graph", "fingerprint": "a1"},
    {"status": "firing",
     "labels": {"pod": "cart-7d9f-fghij", "deployment": "cart", "container": "cart"},
     "annotations": {"description": "cart-7d9f-fghij restarted 3 times"},
     "startsAt": "2026-01-03T10:06:00Z", "endsAt": "0001-01-01T00:00:00Z"},
    {"status": "resolved",
     "labels": {"pod": "cart-7d9f-zzzzz", "deployment": "cart"},
     "annotations": {},
     "startsAt": "2026-01-03T09:00:00Z", "endsAt": "2026-01-03T09:30:00Z"}
  ]
}`

const grafanaPayload = `{
  "receiver": "rcamesh", "status": "firing", "orgId": 1, "version": "1",
  "groupLabels": {"alertname": "HighErrorRate"},
  "commonLabels": {"alertname": "HighErrorRate", "grafana_folder": "svc"},
  "commonAnnotations": {},
  "externalURL": "http://grafana:3000/",
  "title": "[FIRING:1] HighErrorRate",
  "alerts": [{
    "status": "firing",
    "labels": {"alertname": "HighErrorRate", "service": "checkout", "namespace": "shop", "severity": "warning"},
    "annotations": {"summary": "5xx ratio above 5%", "description": "checkout returns 500s"},
    "startsAt": "2026-01-03T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
    "fingerprint": "f00", "dashboardURL": "http://grafana/d/x", "valueString": "[ var='A' value=0.12 ]"
  }]
}`

const datadogPayload = `{
  "id": "712345",
  "title": "[Triggered] High latency on api-gateway",
  "body": "p99 latency above 2s for 10 minutes",
  "alert_type": "error",
  "alert_transition": "Triggered",
  "alert_id": "998877",
  "tags": ["env:prod", "service:api-gateway", "kube_namespace:edge", "kube_cluster_name:eu-1", "team:core"],
  "date": 1767434700000,
  "last_updated": 1767434760000,
  "priority": "normal",
  "hostname": "ip-10-9-9-9"
}`

const pagerdutyPayload = `{
  "event": {
    "id": "01ABC", "event_type": "incident.triggered", "resource_type": "incident",
    "occurred_at": "2026-01-03T10:07:00Z",
    "data": {
      "id": "PXYZ", "type": "incident", "number": 42, "status": "triggered",
      "title": "Database connections exhausted on orders-db",
      "urgency": "high",
      "created_at": "2026-01-03T10:06:30Z",
      "html_url": "https://acme.pagerduty.com/incidents/PXYZ",
      "service": {"id": "S1", "summary": "orders", "type": "service_reference"},
      "priority": {"summary": "P1"},
      "body": {"details": "too many clients already"}
    }
  }
}`

const opensrePayload = `{
  "title": "[synthetic] CrashLoopBackOff — web-5f6d-q2w3e",
  "state": "alerting",
  "alert_source": "datadog",
  "commonLabels": {"alertname": "KubernetesPodCrashLooping", "severity": "critical", "service": "web",
                   "cluster_name": "c1", "namespace": "front", "workload_type": "deployment", "workload_name": "web"},
  "commonAnnotations": {"summary": "Pod web-5f6d-q2w3e restarted 8 times.", "error": "exit code 1",
                        "kube_pod": "web-5f6d-q2w3e", "description": "one replica restarting"}
}`

const genericPayload = `{
  "alert_name": "DiskAlmostFull", "title": "Disk almost full on node-7", "severity": "WARNING",
  "namespace": "storage", "service": "minio", "labels": {"node": "node-7", "env": "staging"},
  "annotations": {"summary": "disk at 93%"}, "starts_at": "2026-01-03T08:00:00Z"
}`

func TestParseFormats(t *testing.T) {
	t.Parallel()
	ts := func(s string) time.Time { tt, _ := time.Parse(time.RFC3339, s); return tt }
	tests := []struct {
		name, payload, hint string
		wantN               int
		check               func(t *testing.T, as []*investigationv1.Alert)
	}{
		{"alertmanager", amPayload, "", 3, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_ALERTMANAGER")
			eq(t, "alert_name", a.AlertName, "KubePodCrashLooping")
			eq(t, "namespace", a.Namespace, "shop")
			eq(t, "pod", a.Pod, "cart-7d9f-abcde")
			eq(t, "service", a.Service, "cart")
			eq(t, "cluster", a.Cluster, "prod-1")
			eq(t, "severity", a.Severity, "critical")
			eq(t, "error", a.ErrorMessage, "exit code 137")
			eq(t, "summary", a.Summary, "Pod is crash looping.")
			eq(t, "resource", a.ResourceKind+"/"+a.ResourceName, "pod/cart-7d9f-abcde")
			eq(t, "window start", a.IncidentWindow.Start.AsTime().Format(time.RFC3339), "2026-01-03T09:35:00Z")
			eq(t, "window end", a.IncidentWindow.End.AsTime().Format(time.RFC3339), "2026-01-03T10:20:00Z")
			if a.IsNoise || a.Resolved {
				t.Errorf("first alert is firing, got noise=%v resolved=%v", a.IsNoise, a.Resolved)
			}
			if as[0].Fingerprint != as[1].Fingerprint {
				t.Errorf("replicas of one deployment must share a fingerprint: %s vs %s", as[0].Fingerprint, as[1].Fingerprint)
			}
			if !as[2].Resolved || as[2].IsNoise {
				t.Errorf("third alert: resolved=%v noise=%v reason=%q (a resolution is no noise: it attaches to its incident or is investigated)", as[2].Resolved, as[2].IsNoise, as[2].NoiseReason)
			}
		}},
		{"grafana", grafanaPayload, "", 1, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_GRAFANA")
			eq(t, "source", a.AlertSource, "grafana")
			eq(t, "service", a.Service, "checkout")
			eq(t, "severity", a.Severity, "warning")
			eq(t, "title", a.Title, "5xx ratio above 5%")
			eq(t, "description", a.Description, "checkout returns 500s")
			eq(t, "value", a.Annotations["value_string"], "[ var='A' value=0.12 ]")
		}},
		{"datadog", datadogPayload, "", 1, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_DATADOG")
			eq(t, "title", a.Title, "High latency on api-gateway")
			eq(t, "service", a.Service, "api-gateway")
			eq(t, "namespace", a.Namespace, "edge")
			eq(t, "cluster", a.Cluster, "eu-1")
			eq(t, "severity", a.Severity, "critical")
			eq(t, "description", a.Description, "p99 latency above 2s for 10 minutes")
			if !a.StartsAt.AsTime().Equal(time.UnixMilli(1767434700000)) {
				t.Errorf("starts_at = %v", a.StartsAt.AsTime())
			}
		}},
		{"pagerduty", pagerdutyPayload, "", 1, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_PAGERDUTY")
			eq(t, "title", a.Title, "Database connections exhausted on orders-db")
			eq(t, "service", a.Service, "orders")
			eq(t, "severity", a.Severity, "critical")
			eq(t, "state", a.State, "triggered")
			eq(t, "description", a.Description, "too many clients already")
			if !a.StartsAt.AsTime().Equal(ts("2026-01-03T10:06:30Z")) {
				t.Errorf("starts_at = %v", a.StartsAt.AsTime())
			}
		}},
		{"opensre", opensrePayload, "", 1, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_OPENSRE")
			eq(t, "source", a.AlertSource, "datadog")
			eq(t, "alert_name", a.AlertName, "KubernetesPodCrashLooping")
			eq(t, "pod", a.Pod, "web-5f6d-q2w3e")
			eq(t, "service", a.Service, "web")
			eq(t, "cluster", a.Cluster, "c1")
			eq(t, "error", a.ErrorMessage, "exit code 1")
			eq(t, "resource", a.ResourceKind+"/"+a.ResourceName, "pod/web-5f6d-q2w3e")
			if a.IncidentWindow != nil {
				t.Errorf("no time in the payload: want no window, got %v", a.IncidentWindow)
			}
		}},
		{"generic", genericPayload, "", 1, func(t *testing.T, as []*investigationv1.Alert) {
			a := as[0]
			eq(t, "format", a.Format.String(), "ALERT_FORMAT_GENERIC")
			eq(t, "severity", a.Severity, "warning")
			eq(t, "resource", a.ResourceKind+"/"+a.ResourceName, "node/node-7")
			eq(t, "summary", a.Summary, "disk at 93%")
		}},
		{"generic by hint", `{"title": "queue backlog growing", "severity": "high"}`, "generic", 1, func(t *testing.T, as []*investigationv1.Alert) {
			eq(t, "alert_name", as[0].AlertName, "queue backlog growing")
		}},
		{"opensre via hint wins over detection", opensrePayload, "opensre", 1, nil},
		{"array of generic alerts", `[{"alert_name":"A","severity":"critical","summary":"x"},{"alert_name":"B","severity":"critical","summary":"y"}]`, "", 2, nil},
		{"explicit window annotation", `{"alert_name":"X","annotations":{"summary":"s","incident_window_start":"2026-01-01T00:00:00Z","incident_window_end":"2026-01-01T02:00:00Z"}}`, "", 1,
			func(t *testing.T, as []*investigationv1.Alert) {
				eq(t, "end", as[0].IncidentWindow.End.AsTime().Format(time.RFC3339), "2026-01-01T02:00:00Z")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as, err := Parse([]byte(tc.payload), tc.hint)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(as) != tc.wantN {
				t.Fatalf("got %d alerts, want %d", len(as), tc.wantN)
			}
			for _, a := range as {
				if len(a.Fingerprint) != 24 {
					t.Errorf("fingerprint %q", a.Fingerprint)
				}
			}
			if tc.check != nil {
				tc.check(t, as)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	big := `{"title":"` + strings.Repeat("x", MaxPayloadBytes) + `"}`
	tests := []struct {
		name, payload, hint string
		want                error
		mention             string
	}{
		{"empty", "  \n", "", ErrEmpty, "no alert"},
		{"empty object", "{}", "", ErrEmpty, "no fields"},
		{"not json", "alert: yes", "", ErrNotJSON, "not JSON"},
		{"trailing", `{"title":"a"} {"title":"b"}`, "", ErrNotJSON, "trailing"},
		{"too big", big, "", ErrTooBig, "1 MiB"},
		{"scalar", `42`, "", ErrBadFormat, "number"},
		{"no alerts", `{"version":"4","alerts":[]}`, "", ErrNoAlerts, "alerts[] is empty"},
		{"alerts not array", `{"version":"4","alerts":{}}`, "", ErrBadFormat, "want an array"},
		{"unknown format", `{"foo":1,"bar":2}`, "", ErrUnknownFormat, "found keys [bar, foo]"},
		{"unknown source", `{"title":"x"}`, "nagios", ErrUnknownSource, "want one of"},
		{"hint mismatch", `{"title":"x"}`, "alertmanager", ErrBadFormat, "alerts[]"},
		{"pagerduty without data", `{"event":{"event_type":"incident.triggered"}}`, "", ErrBadFormat, "event.data"},
		{"datadog without title", `{"alert_type":"error","tags":[]}`, "", ErrBadFormat, "needs title"},
		{"am wrong version", `{"version":"3","alerts":[{"labels":{"alertname":"x"}}]}`, "", ErrBadFormat, "version"},
		{"empty array", `[]`, "", ErrNoAlerts, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.payload), tc.hint)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestNoise(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, payload string
		noise         bool
		reason        string
	}{
		{"watchdog", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"Watchdog","severity":"none"}}]}`, true, "heartbeat"},
		{"deadmansswitch", `{"alert_name":"DeadMansSwitch","severity":"critical","summary":"always firing"}`, true, "heartbeat"},
		{"test notification", `{"title":"[Triggered] Test notification","alert_type":"info","tags":[]}`, true, "test"},
		{"resolved only", `{"version":"4","status":"resolved","alerts":[{"status":"resolved","labels":{"alertname":"HighCPU"}}]}`, false, ""},
		{"datadog recovered, informational", `{"title":"[Recovered] CPU","alert_type":"success","alert_transition":"Recovered","tags":[]}`, true, "informational"},
		{"pagerduty resolved", `{"event":{"event_type":"incident.resolved","data":{"title":"x","status":"resolved"}}}`, false, ""},
		{"info without symptom", `{"alert_name":"Deploy","severity":"info"}`, true, "informational"},
		{"chat", `{"text":"hello!"}`, true, "chat"},
		{"info with symptom text is real", `{"alert_name":"ScheduledCheck","severity":"info","summary":"scheduled check of db metrics"}`, false, ""},
		{"normal state is not resolved", `{"title":"check","state":"normal","commonLabels":{"alertname":"C","severity":"info"},"commonAnnotations":{"summary":"periodic check"}}`, false, ""},
		{"critical is real", opensrePayload, false, ""},
		{"a heartbeat metric is a real signal", `{"alert_name":"SignallingSlow","severity":"critical","title":"Video visits: signalling heartbeat p99 2.1s"}`, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as, err := Parse([]byte(tc.payload), "")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			a := as[0]
			if a.IsNoise != tc.noise {
				t.Fatalf("noise = %v (%q), want %v", a.IsNoise, a.NoiseReason, tc.noise)
			}
			if tc.noise && !strings.Contains(strings.ToLower(a.NoiseReason), tc.reason) {
				t.Errorf("reason %q does not mention %q", a.NoiseReason, tc.reason)
			}
		})
	}
}

// A resolution is flagged resolved in every format that says so, and is
// no noise: the brain attaches it to the incident it ends or investigates
// why it fired.
func TestResolvedIsNotNoise(t *testing.T) {
	for name, payload := range map[string]string{
		"alertmanager": `{"version":"4","status":"resolved","alerts":[{"status":"resolved","labels":{"alertname":"HighCPU"}}]}`,
		"pagerduty":    `{"event":{"event_type":"incident.resolved","data":{"title":"x","status":"resolved"}}}`,
	} {
		as, err := Parse([]byte(payload), "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !as[0].Resolved || as[0].IsNoise {
			t.Errorf("%s: resolved=%v noise=%v (%q)", name, as[0].Resolved, as[0].IsNoise, as[0].NoiseReason)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := `{"alert_name":"HighLatency","severity":"critical","namespace":"shop","service":"cart","labels":{"cluster":"c1","env":"prod"},"summary":"%s","starts_at":"%s"}`
	fp := func(t *testing.T, p string) string {
		t.Helper()
		as, err := Parse([]byte(p), "")
		if err != nil {
			t.Fatal(err)
		}
		return as[0].Fingerprint
	}
	a := fp(t, sprintf(base, "p99 2s", "2026-01-01T00:00:00Z"))
	if b := fp(t, sprintf(base, "p99 5s now", "2026-01-01T00:10:00Z")); a != b {
		t.Errorf("wording or time changed the fingerprint")
	}
	if c := fp(t, strings.Replace(sprintf(base, "x", "2026-01-01T00:00:00Z"), `"env":"prod"`, `"env":"staging"`, 1)); a == c {
		t.Errorf("environment must scope the fingerprint")
	}
	if c := fp(t, strings.Replace(sprintf(base, "x", "2026-01-01T00:00:00Z"), `"cluster":"c1"`, `"cluster":"c2"`, 1)); a == c {
		t.Errorf("cluster must scope the fingerprint")
	}
	if c := fp(t, strings.Replace(sprintf(base, "x", "2026-01-01T00:00:00Z"), `"service":"cart"`, `"service":"orders"`, 1)); a == c {
		t.Errorf("service must scope the fingerprint")
	}
}

func sprintf(f string, a ...any) string {
	r := f
	for _, v := range a {
		r = strings.Replace(r, "%s", v.(string), 1)
	}
	return r
}

// TestBenchmarkAlerts parses every alert.json of the benchmark suites the
// repository is evaluated on (read in place): each must parse, none is noise.
func TestBenchmarkAlerts(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(benchdata.Dir(t), "*", "*", "*", "alert.json"))
	if len(files) == 0 {
		t.Fatal("no alert.json in the benchmark suites")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		as, err := Parse(raw, "")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, a := range as {
			if a.IsNoise {
				t.Errorf("%s: classified noise: %s", f, a.NoiseReason)
			}
			if a.AlertName == "" || a.Title == "" || a.ResourceName == "" {
				t.Errorf("%s: missing identity: name=%q title=%q resource=%q", f, a.AlertName, a.Title, a.ResourceName)
			}
		}
	}
}

func eq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func BenchmarkParseAlertmanager(b *testing.B) {
	raw := []byte(amPayload)
	for b.Loop() {
		if _, err := Parse(raw, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// A PagerDuty service's display name is a routing entity, not a workload;
// one named like a workload stands for it when the details name none.
func TestPagerDutyServiceNameIsAWorkloadOnlyWhenNamedLikeOne(t *testing.T) {
	for _, tc := range []struct{ pd, want string }{{"Scores platform", ""}, {"score-ingest", "score-ingest"}} {
		raw := `{"event":{"event_type":"incident.triggered","data":{"title":"[FIRING:1] IngestLag","status":"triggered",` +
			`"service":{"summary":"` + tc.pd + `"},"body":{"details":{"alertname":"IngestLag","namespace":"scores"}}}}}`
		as, err := Parse([]byte(raw), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := as[0].GetLabels()["service"]; got != tc.want {
			t.Errorf("PagerDuty service %q: workload service = %q, want %q", tc.pd, got, tc.want)
		}
		if got := as[0].GetAnnotations()["pagerduty_service"]; got != tc.pd {
			t.Errorf("pagerduty_service annotation = %q, want %q", got, tc.pd)
		}
	}
}

// A notifier with no state field leads its text with the state it reports:
// read from brackets (an emoji allowed) or a leading word, never from a
// word in the middle of a sentence.
func TestStateInText(t *testing.T) {
	for _, tc := range []struct {
		payload  string
		state    string
		resolved bool
	}{
		{`{"heartbeat":{"status":1},"monitor":{"name":"Booking"},"msg":"[Booking] [✅ Up] 200 - OK"}`, "up", true},
		{`{"heartbeat":{"status":0},"monitor":{"name":"Booking"},"msg":"[Booking] [🔴 Down] timeout of 48000ms exceeded"}`, "down", false},
		{`{"subject":"RESOLVED: disk usage on db-3","name":"disk"}`, "resolved", true},
		{`{"title":"Problem: queue depth over 10k","name":"queue"}`, "problem", false},
		{`{"name":"api","message":"the check went up to 4s and is not ok"}`, "", false},
		{`{"monitorFriendlyName":"Booking","alertTypeFriendlyName":"Up","alertDetails":"HTTP 200 - OK"}`, "up", true},
		{`{"monitorFriendlyName":"Booking","alertTypeFriendlyName":"Down","alertDetails":"Connection Timeout"}`, "down", false},
		{`{"name":"api","result":"ok","summary":"disk 91%"}`, "", false},
		{`{"notification_type":"PROBLEM","host_name":"node-4","host_state":"UP","service_state":"CRITICAL","service_name":"node-ready"}`, "problem", false},
		// A state word in bold at the head of a chat notifier's text.
		{`{"chat_id":-100,"parse_mode":"HTML","text":"<b>RESOLVED</b> KubePodNotReady\nnamespace=farm pod=feeder-0"}`, "resolved", true},
		{`{"text":"**FIRING** QueueDepthHigh queue=orders"}`, "firing", false},
		{`{"text":"<b>Deploy</b> of feeder 1.2 is ok"}`, "", false},
	} {
		as, err := Parse([]byte(tc.payload), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		if as[0].State != tc.state || as[0].Resolved != tc.resolved {
			t.Errorf("%s: state %q resolved %v, want %q %v", tc.payload, as[0].State, as[0].Resolved, tc.state, tc.resolved)
		}
	}
}
