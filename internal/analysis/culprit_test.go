package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func culpritEvidence() *Evidence {
	ev := NewEvidence(nil, nil)
	ev.Pods = []Pod{
		{Pod: facts.Pod{Namespace: "yard", Name: "crane-api-7d9f-abcde", Workload: "crane-api", Containers: []facts.Container{{Name: "app", Image: "reg/crane-api:4.1",
			Settings: []string{"env JAVA_TOOL_OPTIONS=-Xmx6g -XX:+UseSerialGC", "mount /etc/tls/ca.crt from secret crane-ca subPath ca.crt"}}}}, Cite: Cite{PinIDs: []string{"pin_pods"}}},
		{Pod: facts.Pod{Namespace: "yard", Name: "berth-web-1", Workload: "berth-web", Containers: []facts.Container{{Name: "web",
			Settings: []string{"env OTHER_SETTING=unrelated"}}}}, Cite: Cite{PinIDs: []string{"pin_pods"}}},
	}
	ev.Deployments = []Deployment{{Deployment: facts.Deployment{Namespace: "yard", Name: "crane-api", Notes: []string{"ops.example/scaled-down-by=night-saver"},
		Conditions: []facts.Condition{{Type: "Available", Status: "True", Reason: "MinimumReplicasAvailable"}},
		Autoscalers: []facts.Resource{{Kind: "HorizontalPodAutoscaler", Namespace: "yard", Name: "crane-api",
			Conditions: []facts.Condition{{Type: "AbleToScale", Status: "True", Reason: "ScaleUpLimit", Message: "the desired replica count is increasing faster than the maximum scale rate"}},
			Spec:       []string{"spec.behavior.scaleUp.policies[0].periodSeconds=90"}}}}, Cite: Cite{PinIDs: []string{"pin_dep"}}}}
	ev.Resources = []Resource{
		{Resource: facts.Resource{Kind: "GRPCRoute", Namespace: "yard", Name: "crane-api", Signals: []string{"spec.rules[0].matches[0].method.service=crane.v2.Lift"}}, Cite: Cite{PinIDs: []string{"pin_route"}}},
		{Resource: facts.Resource{Kind: "CronJob", Namespace: "yard", Name: "tide-sync", Spec: []string{"spec.timeZone=Pacific/Auckland", "spec.jobTemplate.spec.backoffLimit=0"}}, Cite: Cite{PinIDs: []string{"pin_cj"}}},
		{Resource: facts.Resource{Kind: "ConfigMap", Namespace: "yard", Name: "berth-web", Data: map[string]string{"cache.conf": "evict = fifo\n"}}, Cite: Cite{PinIDs: []string{"pin_cm"}}},
	}
	return ev
}

// The culprit's configuration is quoted: its containers' settings, its
// notes, its autoscaler's spec and conditions, a same-named object of
// another kind (a route), a Job's owning CronJob; a Deployment's met
// rollout conditions, other workloads' settings and what is already said
// are not.
func TestCulpritConfigQuotesTheBlamedObject(t *testing.T) {
	cases := []struct {
		entity, known string
		want, not     []string
	}{
		{"deployment/yard/crane-api", "", []string{"UseSerialGC", "subPath ca.crt", "reg/crane-api:4.1", "scaled-down-by=night-saver", "periodSeconds=90", "ScaleUpLimit", "crane.v2.Lift"},
			[]string{"OTHER_SETTING", "MinimumReplicasAvailable", "evict = fifo", "Pacific/Auckland"}},
		{"statefulset/yard/crane-api", "the heap: env java_tool_options=-xmx6g -xx:+useserialgc", []string{"subPath ca.crt", "crane.v2.Lift"}, []string{"UseSerialGC"}},
		{"job/yard/tide-sync-29300160", "", []string{"Pacific/Auckland", "backoffLimit=0"}, []string{"UseSerialGC", "crane.v2.Lift"}},
		{"configmap/yard/berth-web", "", []string{"evict = fifo", "OTHER_SETTING"}, []string{"UseSerialGC"}},
		{"commit/abc1234", "", nil, []string{"UseSerialGC", "crane.v2.Lift", "evict"}},
		{"deployment/other/crane-api", "", nil, []string{"UseSerialGC", "crane.v2.Lift"}},
	}
	ev := culpritEvidence()
	for _, c := range cases {
		var got []string
		for _, r := range ev.culpritConfig(c.entity, c.known) {
			got = append(got, r.text)
			if len(r.cite.PinIDs) == 0 {
				t.Errorf("%s: %q cites no pin", c.entity, r.text)
			}
		}
		checkQuoted(t, c.entity, got, c.want, c.not)
	}
}

func clock(hhmm string) *time.Time {
	t, _ := time.Parse(time.RFC3339, "2027-03-04T"+hhmm+":00Z")
	return &t
}

// The culprit's own log is quoted beside the failures: a workload's pods,
// a node's host lines; for an object that logs nothing, the lines of the
// writers that name it and what they wrote around them. Debug lines, far
// lines of the same writer and lines already said are not.
func TestCulpritLogs(t *testing.T) {
	ev := NewEvidence(nil, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: clock("10:00"), Namespace: "yard", Pod: "crane-api-7d9f-abcde", Level: "INFO", Message: "[gc] Pause Full (Ergonomics) 5800M->5100M 7.2s"}},
		{LogLine: facts.LogLine{Timestamp: clock("10:01"), Namespace: "yard", Pod: "crane-api-7d9f-abcde", Level: "ERROR", Message: "lift request timed out after 5s"}},
		{LogLine: facts.LogLine{Timestamp: clock("10:02"), Namespace: "yard", Pod: "crane-api-7d9f-abcde", Level: "DEBUG", Message: "heap histogram dumped"}},
		{LogLine: facts.LogLine{Timestamp: clock("09:40"), Namespace: "ops", Service: "tls-renewer", Level: "INFO", Message: "chain written to bundle-full.pem (3 certificates)"}},
		{LogLine: facts.LogLine{Timestamp: clock("09:41"), Namespace: "ops", Service: "tls-renewer", Level: "INFO", Message: "applying secret quay-gateway-tls from leaf.pem"}},
		{LogLine: facts.LogLine{Timestamp: clock("06:00"), Namespace: "ops", Service: "tls-renewer", Level: "INFO", Message: "renewer idle, next run in 3h"}},
		{LogLine: facts.LogLine{Timestamp: clock("09:58"), Host: "wk-07", Level: "WARN", Message: "image_gc_manager: disk usage 91% over high threshold 85%"}},
	}
	cases := []struct {
		entity, known string
		want, not     []string
	}{
		{"deployment/yard/crane-api", "", []string{"Pause Full", "lift request timed out"}, []string{"heap histogram", "bundle-full"}},
		{"deployment/yard/crane-api", "lift request timed out after 5s", []string{"Pause Full"}, []string{"lift request timed out"}},
		{"secret/ops/quay-gateway-tls", "", []string{"bundle-full.pem", "leaf.pem"}, []string{"renewer idle", "Pause Full"}},
		{"node/wk-07", "", []string{"image_gc_manager"}, []string{"Pause Full"}},
		{"commit/abc1234", "", nil, []string{"Pause Full", "leaf.pem"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range ev.culpritLogs(c.entity, c.known) {
			got = append(got, r.text)
		}
		checkQuoted(t, c.entity, got, c.want, c.not)
	}
}

// The commits whose diff the reading needs: those its lead names, else the
// latest of the blamed object's service before the alert; never one whose
// diff was read, one without a diff, or one after the alert.
func TestCulpritCommitsAndWriters(t *testing.T) {
	ev := NewEvidence(nil, nil)
	ev.windowEnd = *clock("10:30")
	ev.Commits = []Commit{
		{Commit: facts.Commit{SHA: "1111111aaaa", Service: "crane-api", Timestamp: clock("09:00"), HasDiff: true}},
		{Commit: facts.Commit{SHA: "2222222bbbb", Service: "crane-api", Timestamp: clock("09:30"), HasDiff: true}},
		{Commit: facts.Commit{SHA: "3333333cccc", Service: "crane-api", Timestamp: clock("09:45"), HasDiff: false}},
		{Commit: facts.Commit{SHA: "4444444dddd", Service: "berth-web", Timestamp: clock("09:50"), HasDiff: true, Diff: "+x"}},
	}
	ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: clock("09:41"), Namespace: "ops", Service: "tls-renewer", Message: "applying secret quay-gateway-tls from leaf.pem"}}}
	res := func(entity, statement string) Result {
		return Result{ev: ev, Hypotheses: []*investigationv1.Hypothesis{{Entity: entity, Statement: statement}}}
	}
	cases := []struct {
		r    Result
		want string
	}{
		{res("deployment/yard/crane-api", "the release broke lifts"), "2222222bbbb"},
		{res("deployment/yard/crane-api", "commit 1111111 changed the pool"), "1111111aaaa"},
		{res("commit/4444444", "commit 4444444 of berth-web"), ""},
		{res("deployment/yard/berth-web", "x"), ""},
	}
	for _, c := range cases {
		if got := strings.Join(c.r.CulpritCommits(), ","); got != c.want {
			t.Errorf("%s / %q: commits %q, want %q", c.r.Hypotheses[0].GetEntity(), c.r.Hypotheses[0].GetStatement(), got, c.want)
		}
	}
	w := res("secret/ops/quay-gateway-tls", "x").CulpritWriters()
	if len(w) != 1 || w[0].Service != "tls-renewer" || w[0].SinceMinutes < 49 {
		t.Errorf("writers of the secret: %+v, want tls-renewer from 49+ minutes back", w)
	}
	if w := res("deployment/yard/crane-api", "x").CulpritWriters(); len(w) != 0 {
		t.Errorf("a workload's writers: %+v, want none (it logs itself)", w)
	}
}

// Fields every object carries with the API server's default are left out
// of the culprit's configuration; its own settings are kept.
func TestDefaultFieldsLeftOut(t *testing.T) {
	for line, want := range map[string]bool{
		"spec.jobTemplate.spec.template.spec.containers[0].terminationMessagePath=/dev/termination-log": true,
		"spec.template.spec.schedulerName=default-scheduler":                                            true,
		"spec.jobTemplate.spec.template.spec.containers[0].name=run":                                    true,
		"status.completionTime=2026-11-01T02:33:00Z":                                                    true,
		"spec.timeZone=Europe/Lisbon":                                                                   false,
		"spec.schedule=30 2 * * *":                                                                      false,
		"spec.template.spec.containers[0].env[0].name=TZ":                                               false,
		"spec.volumes[0].secret.secretName=bank-tls":                                                    false,
		"replicas current 3, desired 3, minReplicas 2, maxReplicas 3":                                   false,
	} {
		if got := defaultField(line); got != want {
			t.Errorf("defaultField(%q) = %v, want %v", line, got, want)
		}
	}
}

// A line that reports its operation succeeded once retried is no failure,
// whatever level it was logged at; a retry that failed, or a success
// without a retry, is read as before.
func TestRetrySucceededIsNoFailure(t *testing.T) {
	ev := NewEvidence(nil, nil)
	for msg, failing := range map[string]bool{
		"chunk 41/60 upload retried after 502 from partner SFTP gateway, succeeded on retry": false,
		"payment capture ok after 2 retries (timeout from psp)":                              false,
		"retry succeeded for order 8812 after connection reset":                              false,
		"upload failed after 3 retries: 502 from partner gateway":                            true,
		"retrying in 5s: connection refused":                                                 true,
	} {
		l := LogLine{LogLine: facts.LogLine{Level: "ERROR", Message: msg}}
		if got := ev.failingLine(l); got != failing {
			t.Errorf("failingLine(%q) = %v, want %v", msg, got, failing)
		}
	}
}

// A commit's diff is quoted as a reviewer reads it: changed lines and the
// few unchanged lines after them (the call a new value reaches), without
// headers or elisions.
func TestDiffLinesKeepNearbyContext(t *testing.T) {
	diff := "--- a/src/sched.ts\n+++ b/src/sched.ts\n@@ -3,7 +3,7 @@\n-export const MAX_LEAD_DAYS = 21;\n+export const MAX_LEAD_DAYS = 60;\n ...\n   const delay = exam.at - Date.now(); // may exceed 2147483647 ms\n   setTimeout(send, delay);\n   log(delay);\n   return;\n"
	got := diffLines(diff, 10)
	for _, w := range []string{"- export const MAX_LEAD_DAYS = 21;", "+export const MAX_LEAD_DAYS = 60;", "2147483647", "setTimeout(send, delay);"} {
		if !strings.Contains(got, strings.TrimPrefix(w, "- ")) {
			t.Errorf("diffLines = %q: %q missing", got, w)
		}
	}
	for _, n := range []string{"+++", "@@", "...", "return;"} {
		if strings.Contains(got, n) {
			t.Errorf("diffLines = %q: %q kept", got, n)
		}
	}
}

// checkQuoted: every want is in the quotes got of entity, no not is.
func checkQuoted(t *testing.T, entity string, got, want, not []string) {
	t.Helper()
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: %q missing from %q", entity, w, got)
		}
	}
	for _, n := range not {
		if strings.Contains(all, n) {
			t.Errorf("%s: %q quoted in %q", entity, n, got)
		}
	}
}
