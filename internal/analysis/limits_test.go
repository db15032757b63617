package analysis

import (
	"fmt"
	"slices"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func flatSeries(name string, labels map[string]string, from, to float64) Series {
	t := time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC)
	var pts []facts.Point
	for i := 0; i < 10; i++ {
		pts = append(pts, facts.Point{T: t.Add(time.Duration(i) * time.Minute), V: from + (to-from)*float64(i)/9})
	}
	return Series{Series: facts.Series{Name: name, Labels: labels, Downsampled: pts, Latest: to, Count: len(pts)}}
}

func TestLimitsReached(t *testing.T) {
	inst := map[string]string{"instance": "10.0.0.1:8000", "job": "meter"}
	other := map[string]string{"instance": "10.0.0.2:8000", "job": "meter"}
	for _, tc := range []struct {
		name   string
		series []Series
		want   string // usage series name at its limit, "" for none
	}{
		{"open fds against max fds", []Series{flatSeries("process_open_fds", inst, 700, 1022), flatSeries("process_max_fds", inst, 1024, 1024)}, "process_open_fds"},
		{"renamed vocabulary: pool active against pool max", []Series{flatSeries("dbpool_connections_active", inst, 5, 50), flatSeries("dbpool_connections_max", inst, 50, 50)}, "dbpool_connections_active"},
		{"free against total (inodes)", []Series{flatSeries("node_filesystem_files_free", inst, 90000, 2000), flatSeries("node_filesystem_files", inst, 100000, 100000)}, "node_filesystem_files_free"},
		{"quota used against hard by label", []Series{flatSeries("kube_resourcequota", map[string]string{"resource": "pods", "type": "used"}, 10, 50), flatSeries("kube_resourcequota", map[string]string{"resource": "pods", "type": "hard"}, 50, 50)}, "kube_resourcequota"},
		{"well below its limit", []Series{flatSeries("process_open_fds", inst, 100, 120), flatSeries("process_max_fds", inst, 1024, 1024)}, ""},
		{"limit of another instance does not pair", []Series{flatSeries("process_open_fds", inst, 700, 1022), flatSeries("process_max_fds", other, 1024, 1024)}, ""},
		{"busy threads against the configured max (a qualifier beside the limit word)", []Series{flatSeries("webpool_threads_busy_threads", inst, 20, 199), flatSeries("webpool_threads_config_max_threads", inst, 200, 200)}, "webpool_threads_busy_threads"},
		{"two limit words are not one bound", []Series{flatSeries("webpool_threads_busy_threads", inst, 20, 199), flatSeries("webpool_threads_max_limit_threads", inst, 200, 200)}, ""},
		{"names differing by two tokens do not pair", []Series{flatSeries("http_requests_total", inst, 1, 99), flatSeries("http_max_inflight_size", inst, 100, 100)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Series: tc.series}
			hits := ev.limitsReached()
			switch {
			case tc.want == "" && len(hits) > 0:
				t.Errorf("want no limit reached, got %s", hits[0].text())
			case tc.want != "" && (len(hits) == 0 || hits[0].usage.Name != tc.want):
				t.Errorf("want %s at its limit, got %d hits", tc.want, len(hits))
			}
		})
	}
}

// A workload's resource that rose to its published bound is a candidate
// naming the owner of its pod; one at its bound from the start, or one
// no workload owns, is not.
func TestDetectLimitReached(t *testing.T) {
	pod := map[string]string{"namespace": "tailor", "pod": "fitting-api-6b7c-x1"}
	node := map[string]string{"instance": "10.0.0.9:9100"}
	for _, tc := range []struct {
		name   string
		series []Series
		want   string
	}{
		{"rose to its bound", []Series{flatSeries("srv_threads_busy_threads", pod, 10, 200), flatSeries("srv_threads_config_max_threads", pod, 200, 200)}, "deployment/tailor/fitting-api"},
		{"free measure fell to nothing", []Series{flatSeries("srv_slots_free", pod, 80, 2), flatSeries("srv_slots_total", pod, 100, 100)}, "deployment/tailor/fitting-api"},
		{"at its bound all along", []Series{flatSeries("srv_threads_busy_threads", pod, 195, 200), flatSeries("srv_threads_config_max_threads", pod, 200, 200)}, ""},
		{"nobody's (a node's)", []Series{flatSeries("process_open_fds", node, 10, 1020), flatSeries("process_max_fds", node, 1024, 1024)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Evidence{Pods: []Pod{{Pod: facts.Pod{Namespace: "tailor", Name: "fitting-api-6b7c-x1", OwnerKind: "ReplicaSet", OwnerName: "fitting-api-6b7c"}}},
				Deployments: []Deployment{{Deployment: facts.Deployment{Namespace: "tailor", Name: "fitting-api"}}}, Series: tc.series}
			fs := detectLimitReached(e)
			switch {
			case tc.want == "" && len(fs) > 0:
				t.Errorf("want no candidate, got %s: %s", fs[0].Entity, fs[0].Statement)
			case tc.want != "" && (len(fs) != 1 || fs[0].Entity != tc.want || fs[0].Category != catResource):
				t.Errorf("want one resource candidate on %s, got %+v", tc.want, fs)
			}
		})
	}
}

// An OOM kill under a memory limit the container never declared (the
// LimitRanger set it from the namespace's LimitRange) is the LimitRange's
// setting: configuration, the LimitRange named when the evidence holds
// one, and its follow-up reads the LimitRange; a declared limit stays
// resource exhaustion of the pod.
func TestOOMUnderDefaultedLimit(t *testing.T) {
	oomPod := func(defaulted ...string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "harvest", Name: "forecaster-7c9-a1", Phase: "Running", OOMKilled: true, Restarts: 4,
			Containers: []facts.Container{{Name: "forecaster", State: "waiting", Reason: "CrashLoopBackOff", LastReason: "OOMKilled", RestartCount: 4, LimitsMemory: "512Mi", DefaultedLimits: defaulted}}}}
	}
	for _, tc := range []struct {
		name       string
		defaulted  []string
		limitRange bool
		wantCat    investigationv1.RootCauseCategory
		wantEntity string
		wantFollow bool
	}{
		{"declared limit", nil, true, catResource, "pod/harvest/forecaster-7c9-a1", false},
		{"defaulted, LimitRange read", []string{"cpu", "memory"}, true, catConfig, "limitrange/harvest/harvest-defaults", false},
		{"defaulted, LimitRange not read yet", []string{"memory"}, false, catConfig, "pod/harvest/forecaster-7c9-a1", true},
		{"only cpu defaulted", []string{"cpu"}, true, catResource, "pod/harvest/forecaster-7c9-a1", false},
	} {
		ev := NewEvidence(nil, nil)
		ev.Pods = []Pod{oomPod(tc.defaulted...)}
		if tc.limitRange {
			ev.Resources = []Resource{{Resource: facts.Resource{Kind: "LimitRange", Namespace: "harvest", Name: "harvest-defaults"}}}
		}
		fs := detectOOM(ev)
		if len(fs) != 1 {
			t.Fatalf("%s: %d findings", tc.name, len(fs))
		}
		f := fs[0]
		f.Detector = ModeOOMKilled
		if f.Category != tc.wantCat || f.Entity != tc.wantEntity {
			t.Errorf("%s: %v %s, want %v %s", tc.name, f.Category, f.Entity, tc.wantCat, tc.wantEntity)
		}
		calls, _ := Result{Findings: []Finding{f}, ev: ev}.LeadFollowUps()
		if got := len(calls) == 1 && calls[0].Params["kind"] == "limitrange"; got != tc.wantFollow {
			t.Errorf("%s: follow-ups %v, want a LimitRange read: %v", tc.name, calls, tc.wantFollow)
		}
	}
}

// A registry that answers "toomanyrequests" while another workload keeps
// pulling from it (a CronJob's runs, seen as pods on the same nodes or as
// the cluster's pull events) is that workload's exhaustion of its limit;
// too few pulls, another registry or pulls after the failures leave it the
// registry's failure.
func TestPullConsumer(t *testing.T) {
	failing := []Pod{{Pod: facts.Pod{Namespace: "web", Name: "api-6a7c-new0", Node: "n1", CreatedAt: at(2)}}}
	run := func(i, min int, node, image string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "sec", Name: fmt.Sprintf("audit-2959140%d-x%d", i, i), Node: node, OwnerKind: "Job", OwnerName: fmt.Sprintf("audit-2959140%d", i), CreatedAt: at(min),
			Containers: []facts.Container{{Name: "scan", Image: image}}}}
	}
	pull := func(i, min int, image string) Event {
		return Event{Event: facts.Event{Namespace: "sec", Reason: "Pulling", InvolvedKind: "Pod", InvolvedName: fmt.Sprintf("audit-2959140%d-b%d", i, i), Message: `Pulling image "` + image + `"`, LastSeen: at(min)}}
	}
	hub := "docker.io/aquasec/trivy:0.58.1"
	for _, tc := range []struct {
		name   string
		pods   []Pod
		events []Event
		want   string
	}{
		{"runs on the same nodes", []Pod{run(1, -40, "n1", hub), run(2, -30, "n1", hub), run(3, -20, "n1", hub)}, nil, "cronjob/sec/audit"},
		{"pull events", nil, []Event{pull(1, -10, hub), pull(2, 0, hub), pull(3, 10, hub)}, "cronjob/sec/audit"},
		{"two runs only", []Pod{run(1, -40, "n1", hub), run(2, -30, "n1", hub)}, nil, ""},
		{"another registry", []Pod{run(1, -40, "n1", "ghcr.io/x/y:1"), run(2, -30, "n1", "ghcr.io/x/y:1"), run(3, -20, "n1", "ghcr.io/x/y:1")}, nil, ""},
		{"other nodes", []Pod{run(1, -40, "n7", hub), run(2, -30, "n7", hub), run(3, -20, "n7", hub)}, nil, ""},
		{"pulls after the last refusal", nil, []Event{pull(1, 30, hub), pull(2, 40, hub), pull(3, 50, hub)}, ""},
	} {
		ev := NewEvidence(nil, nil)
		ev.Pods = append(slices.Clone(failing), tc.pods...)
		ev.Events = tc.events
		c, ok := ev.pullConsumer(failing, "docker.io", at(20))
		if got := map[bool]string{true: c.entity}[ok]; got != tc.want {
			t.Errorf("%s: consumer %q, want %q", tc.name, got, tc.want)
		}
	}
}
