package analysis

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A crashing container's last line read through the cause-to-effect
// table: a limit it ran out of is resource exhaustion, not the default
// reading of a crash on startup (configuration).
func TestCrashCauseReadsTheEffectRows(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want investigationv1.RootCauseCategory
	}{
		{"FATAL config watcher: failed to create fsnotify watcher: too many open files", catResource},
		{"FATAL cannot start: required setting LEDGER_URL is not set", catConfig},
		{"FATAL boot: i/o error reading /data/segments/000412", catInfra},
	} {
		c, ok := classifyLogs([]LogLine{{LogLine: facts.LogLine{Level: "FATAL", Message: tc.msg}}})
		if !ok || c.category != tc.want {
			t.Errorf("%q: %v (%v), want %v", tc.msg, c.category, ok, tc.want)
		}
	}
}

// A container the runtime could not start never ran its process: the
// runtime's refusal (containerd, Docker, CRI-O wording, a binary built for
// another architecture) is the crash's cause and a configuration error,
// even when the pod's other container logs a dependency it cannot reach.
func TestStartFailureIsTheCrashCause(t *testing.T) {
	depLine := LogLine{LogLine: facts.LogLine{Level: "ERROR", Message: "db pool: dial tcp 127.0.0.1:5432: connect: connection refused"}}
	for _, tc := range []struct {
		name   string
		c      facts.Container
		event  string
		log    string
		want   bool
		substr string
	}{
		{name: "containerd event", c: facts.Container{Name: "proxy", Reason: "CrashLoopBackOff", LastReason: "StartError", LastExitCode: i32(128)},
			event: `Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/bin/relay": stat /bin/relay: no such file or directory: unknown`,
			want:  true, substr: "/bin/relay"},
		{name: "docker status", c: facts.Container{Name: "agent", Reason: "CrashLoopBackOff", LastReason: "ContainerCannotRun", LastExitCode: i32(127),
			LastMessage: `OCI runtime create failed: container_linux.go:380: starting container process caused: exec: "shipper": executable file not found in $PATH: unknown`},
			want: true, substr: "executable file not found"},
		{name: "crio event", c: facts.Container{Name: "sync", Reason: "CrashLoopBackOff", LastReason: "StartError"},
			event: `Error: container create failed: cannot start container: exec: "/opt/sync/run.sh": permission denied`,
			want:  true, substr: "permission denied"},
		{name: "wrong architecture", c: facts.Container{Name: "cni", Reason: "CrashLoopBackOff", LastReason: "Error", LastExitCode: i32(1)},
			log: "exec /usr/local/bin/cni-agent: exec format error", want: true, substr: "exec format error"},
		{name: "process ran and exited", c: facts.Container{Name: "api", Reason: "CrashLoopBackOff", LastReason: "Error", LastExitCode: i32(1)},
			want: false},
		{name: "no such file read by the process", c: facts.Container{Name: "api", Reason: "CrashLoopBackOff", LastReason: "Error", LastExitCode: i32(1)},
			event: "Back-off restarting failed container api in pod api-0: open /etc/app/conf.yaml: no such file or directory", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pod{Pod: facts.Pod{Namespace: "lab", Name: "svc-6f7d8c9b5-x2k4m", Phase: "Running", Containers: []facts.Container{tc.c}}}
			var events []Event
			if tc.event != "" {
				events = append(events, Event{Event: facts.Event{Type: "Warning", Reason: "Failed", Message: tc.event}})
			}
			logs := []LogLine{depLine}
			if tc.log != "" {
				logs = append(logs, LogLine{LogLine: facts.LogLine{Message: tc.log}})
			}
			c, ok := startFailure([]Pod{p}, events, logs)
			if ok != tc.want {
				t.Fatalf("start failure %v (%q), want %v", ok, c.line.Message, tc.want)
			}
			if ok && (c.category != catConfig || !strings.Contains(c.line.Message, tc.substr)) {
				t.Fatalf("cause %v %q, want a configuration error quoting %q", c.category, c.line.Message, tc.substr)
			}
		})
	}
}

// A Job's finished pod explains a readiness alert, or one that names the
// batch it ran for, as noise; never a business signal that only fired near
// it (its run's output may be the very cause).
func TestCompletedPodNeedsAnAlertOnIt(t *testing.T) {
	exit0 := int32(0)
	pod := Pod{Pod: facts.Pod{Namespace: "lab", Name: "lot-import-29350440-kq8zt", Phase: "Succeeded", OwnerKind: "Job", OwnerName: "lot-import-29350440",
		Conditions: []facts.Condition{{Type: "Ready", Status: "False", Reason: "PodCompleted"}},
		Containers: []facts.Container{{Name: "lot-import", State: "terminated", Reason: "Completed", ExitCode: &exit0}}}}
	for _, tc := range []struct {
		alert *investigationv1.Alert
		want  bool
	}{
		{&investigationv1.Alert{AlertName: "KubePodNotReady", Namespace: "lab"}, true},
		{&investigationv1.Alert{AlertName: "check-in missing", Title: "lot-import (prod) did not report"}, true},
		{&investigationv1.Alert{AlertName: "Monthly lot import", Description: "Monthly lot import is late"}, true},
		{&investigationv1.Alert{AlertName: "Unsold lot ratio high", Summary: "share of lots closing unsold over 15 min"}, false},
	} {
		ev := NewEvidence(tc.alert, nil)
		ev.Pods = []Pod{pod}
		if got := len(detectCompletedPod(ev)) > 0; got != tc.want {
			t.Errorf("%q: completed-pod reading %v, want %v", tc.alert.GetAlertName(), got, tc.want)
		}
	}
}

// A pod no workload owns whose container completes its command (exit 0)
// and is restarted is a leftover one-off, no service failure; not a bare
// pod that fails (exit 1), not a workload's pod exiting 0 (its command is
// wrong), not one never restarted.
func TestBarePodCompletes(t *testing.T) {
	zero, one := int32(0), int32(1)
	pod := func(owner string, exit *int32, restarts int32) Pod {
		p := facts.Pod{Namespace: "lab", Name: "debug-box", Phase: "Running", Labels: map[string]string{"run": "debug-box"},
			Containers: []facts.Container{{Name: "debug-box", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: restarts, LastReason: "Completed", LastExitCode: exit}}}
		if owner != "" {
			p.OwnerKind, p.OwnerName = "ReplicaSet", owner
		}
		return Pod{Pod: p}
	}
	for _, tc := range []struct {
		name string
		p    Pod
		want bool
	}{
		{"bare pod completing", pod("", &zero, 9), true},
		{"bare pod failing", pod("", &one, 9), false},
		{"a workload's pod exiting 0", pod("tools-7c9f", &zero, 9), false},
		{"never restarted", pod("", &zero, 0), false},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "KubePodCrashLooping", Namespace: "lab"}, nil)
		ev.Pods = []Pod{tc.p}
		fs := detectBarePodCompletes(ev)
		if got := len(fs) == 1 && fs[0].Healthy; got != tc.want {
			t.Errorf("%s: healthy reading %v, want %v", tc.name, got, tc.want)
		}
	}
}
