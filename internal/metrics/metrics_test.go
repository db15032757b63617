package metrics

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestIdentifier(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"max_loops", true},
		{"tool_timeout", true},
		{"", false},
		{"Max_loops", false},
		{"_x", false},
		{"inc-0f3a9c21b7d4e5f6", false},
		{"pod/checkout-7d9f", false},
		{"has space", false},
		{strings.Repeat("a", 48), true},
		{strings.Repeat("a", 49), false},
	} {
		if got := Identifier(tc.in); got != tc.want {
			t.Errorf("Identifier(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestLabelsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"max_loops", "max_loops"},
		{"", "none"},
		{"session inc-42 blew up", Other},
	} {
		if got := Label(tc.in, Identifier); got != tc.want {
			t.Errorf("Label(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name, prefix, want string
	}{
		{"DIAGNOSIS_STATUS_CONCLUDED", "DIAGNOSIS_STATUS_", "concluded"},
		{"ROOT_CAUSE_CATEGORY_CODE_DEFECT", "ROOT_CAUSE_CATEGORY_", "code_defect"},
		{"ROOT_CAUSE_CATEGORY_UNSPECIFIED", "ROOT_CAUSE_CATEGORY_", "unspecified"},
		{"CRITIC_ACTION_GATHER_MORE", "CRITIC_ACTION_", "gather_more"},
	} {
		if got := EnumLabel(tc.name, tc.prefix); got != tc.want {
			t.Errorf("EnumLabel(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestObserveHelpers(t *testing.T) {
	before := testutil.ToFloat64(ModelTokens.WithLabelValues("openai", "m-test", "input"))
	ObserveModelCall("openai", "m-test", 120, 30, 40*time.Millisecond, nil)
	ObserveModelCall("openai", "m-test", 0, 0, time.Millisecond, errors.New("boom"))
	if got := testutil.ToFloat64(ModelTokens.WithLabelValues("openai", "m-test", "input")) - before; got != 120 {
		t.Errorf("input tokens moved by %v, want 120", got)
	}
	if got := testutil.ToFloat64(ModelCalls.WithLabelValues("openai", "m-test", "error")); got < 1 {
		t.Errorf("error calls = %v", got)
	}
	replayedBefore := testutil.CollectAndCount(ToolCallDuration)
	ObserveToolCall("get_events", ToolReplayed, time.Second)
	if got := testutil.CollectAndCount(ToolCallDuration); got != replayedBefore {
		t.Errorf("a replayed call was observed in the latency histogram (%d series, was %d)", got, replayedBefore)
	}
}

// TestMetricNamesFollowConventions lints every rcamesh metric (units,
// _total suffixes, help texts) with client_golang's promlint.
func TestMetricNamesFollowConventions(t *testing.T) {
	ObserveToolCall("get_events", ToolSuccess, time.Millisecond) // vectors gather only once they have a series
	ObserveInvestigation(OutcomeConcluded, "code_defect", time.Second)
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), namespace+"_") {
			seen++
		}
	}
	if seen < 10 {
		t.Fatalf("only %d rcamesh metrics gathered", seen)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, namespace+"_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	// The default registry carries the Go and process collectors.
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !names[want] && (want != "process_cpu_seconds_total" || processCollectorSupported()) {
			t.Errorf("%s not exported", want)
		}
	}
}

func processCollectorSupported() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// TestAlertRules checks deploy/prometheus/rcamesh-rules.yaml with promtool
// and runs its unit tests (alerts that must fire on given series).
func TestAlertRules(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not installed (Debian package prometheus; scripts/setup.sh installs it)")
		}
		t.Skip("promtool not installed")
	}
	dir := filepath.Join("..", "..", "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "rcamesh-rules.yaml"},
		{"test", "rules", "rcamesh-rules.test.yaml"},
	} {
		cmd := exec.Command("promtool", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
