package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A CronJob whose run hangs behind Forbid, or whose schedule will not fire
// for months after daily runs, stopped its work; one that runs on time, is
// suspended, or has a run shorter than its period did not.
func TestDetectCronJobStalled(t *testing.T) {
	now := time.Date(2027, 6, 2, 7, 40, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	cronJob := func(schedule, policy string, extra ...string) Resource {
		return Resource{Resource: facts.Resource{Kind: "CronJob", Namespace: "shop", Name: "sync", Signals: append([]string{"schedule " + schedule, "concurrencyPolicy " + policy}, extra...)}}
	}
	job := func(name string, started *time.Time, completed *time.Time, active int) Resource {
		return Resource{Resource: facts.Resource{Kind: "Job", Namespace: "shop", Name: name, Owners: []string{"CronJob/sync"}, CreatedAt: started, CompletedAt: completed,
			Signals: []string{"succeeded=0 failed=0 active=" + map[int]string{0: "0", 1: "1"}[active]}}}
	}
	daily := []Resource{job("sync-1", ago(120*time.Hour), ago(119*time.Hour), 0), job("sync-2", ago(96*time.Hour), ago(95*time.Hour), 0), job("sync-3", ago(72*time.Hour), ago(71*time.Hour), 0)}
	for _, tc := range []struct {
		name string
		res  []Resource
		want string // statement fragment, "" for none
	}{
		{"a run hung behind Forbid", []Resource{cronJob("*/15 * * * *", "Forbid"), job("sync-9", ago(3*time.Hour), nil, 1)}, "has been active for"},
		{"a run shorter than its period", []Resource{cronJob("*/15 * * * *", "Forbid"), job("sync-9", ago(5*time.Minute), nil, 1)}, ""},
		{"overlap allowed", []Resource{cronJob("*/15 * * * *", "Allow"), job("sync-9", ago(3*time.Hour), nil, 1)}, ""},
		{"a schedule that excludes the month", append([]Resource{cronJob("0 5 * 1-5 *", "Forbid", "last scheduled 2027-05-31T05:00:00Z")}, daily...), "will not fire again until 2028-01-01"},
		{"a schedule on time", append([]Resource{cronJob("0 5 * * *", "Forbid")}, daily...), ""},
		{"suspended on purpose", append([]Resource{cronJob("0 5 * 1-5 *", "Forbid", "suspended")}, daily...), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Now: now, Resources: tc.res}
			fs := detectCronJobStalled(ev)
			switch {
			case tc.want == "" && len(fs) > 0:
				t.Errorf("want nothing, got %s", fs[0].Statement)
			case tc.want != "" && (len(fs) == 0 || !strings.Contains(fs[0].Statement, tc.want) || fs[0].Category != catConfig || fs[0].Entity != "cronjob/shop/sync"):
				t.Errorf("want a configuration finding on cronjob/shop/sync saying %q, got %+v", tc.want, fs)
			}
		})
	}
}

// A suspended CronJob is stopped on purpose, unless a firing alert expects
// its runs (a check named after it): the suspension is then the cause.
func TestSuspendedCronJobTheAlertExpects(t *testing.T) {
	now := time.Date(2027, 6, 2, 7, 40, 0, 0, time.UTC)
	cj := Resource{Resource: facts.Resource{Kind: "CronJob", Namespace: "shop", Name: "ledger-export", Signals: []string{"schedule 0 0 * * *", "concurrencyPolicy Forbid", "suspended"}}}
	for _, tc := range []struct {
		alert *investigationv1.Alert
		want  bool
	}{
		{&investigationv1.Alert{AlertName: "ledger-export nightly", Title: "check is down: no ping"}, true},
		{&investigationv1.Alert{AlertName: "ledger-export nightly", Resolved: true}, false},
		{&investigationv1.Alert{AlertName: "CheckoutLatencyHigh"}, false},
	} {
		ev := &Evidence{Now: now, Resources: []Resource{cj}, Alert: tc.alert}
		fs := detectCronJobStalled(ev)
		if got := len(fs) == 1 && fs[0].Category == catConfig && fs[0].Entity == "cronjob/shop/ledger-export"; got != tc.want {
			t.Errorf("%q (resolved %v): finding %v, want %v", tc.alert.GetAlertName(), tc.alert.GetResolved(), got, tc.want)
		}
	}
}
