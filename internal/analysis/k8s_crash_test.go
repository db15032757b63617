package analysis

import (
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
