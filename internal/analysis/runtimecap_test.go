package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestRuntimeCapAboveLimit(t *testing.T) {
	for _, tc := range []struct {
		limit string
		flags []string
		want  bool
	}{
		{"1536Mi", []string{"-Xms512m", "-Xmx2g"}, true},
		{"2Gi", []string{"-Xmx1536m"}, false}, // 75%: room for the rest
		{"2Gi", []string{"-Xmx1900m"}, true},  // over 90%
		{"512Mi", []string{"--max-old-space-size=1024"}, true},
		{"1Gi", []string{"--max-old-space-size=600"}, false},
		{"1Gi", []string{"GOMEMLIMIT=1GiB"}, true},
		{"1Gi", []string{"GOMEMLIMIT=700MiB"}, false},
		{"", []string{"-Xmx2g"}, false}, // no limit to exceed
		{"2Gi", []string{"-XX:MaxRAMPercentage=75"}, false},
	} {
		_, _, _, got := runtimeCapAboveLimit(facts.Container{LimitsMemory: tc.limit, RuntimeLimits: tc.flags})
		if got != tc.want {
			t.Errorf("limit %s flags %v: above = %v, want %v", tc.limit, tc.flags, got, tc.want)
		}
	}
}
