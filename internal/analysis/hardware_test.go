package analysis

import "testing"

// A machine's hardware fault (a sensor over its threshold, a fan or a
// power supply failed) is the infrastructure row of the cause table, even
// when the line also says what it throttled; a workload's own throttling
// stays a capacity.
func TestHardwareFaultFamily(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
	}{
		{"CPU3: Core temperature above threshold, cpu clock throttled (total events = 18811)", "infrastructure"},
		{"ipmi-sel: Fan 2 | Lower Critical going low | 0 RPM, fan failure asserted", "infrastructure"},
		{"PSU1 power supply failure detected, running on redundant supply", "infrastructure"},
		{"thermal event: package temperature 98C", "infrastructure"},
		{"requests throttled: too many requests for tenant acme (limit 50/s)", "resource_exhaustion"},
	} {
		f, ok := familyOf(tc.text)
		if !ok || categoryWord(f.cat) != tc.want {
			t.Errorf("familyOf(%q) = %v (%v), want %s", tc.text, f.cat, ok, tc.want)
		}
	}
}
