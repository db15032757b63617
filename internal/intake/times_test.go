package intake

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTimesOutOfRange: a time no record can hold (after 9999-12-31, or whose
// incident window would end after it) is the sender's error (ErrBadFormat,
// 400 at the API), never a 500 later when the record is read.
func TestTimesOutOfRange(t *testing.T) {
	tests := []struct {
		name, payload string
		ok            bool
		wantStart     string // RFC 3339 when ok
	}{
		{"alertmanager last second", `{"version":"4","alerts":[{"labels":{"alertname":"X"},"startsAt":"9999-12-31T23:59:59Z"}]}`, false, ""},
		{"alertmanager year 9000", `{"version":"4","alerts":[{"labels":{"alertname":"X"},"startsAt":"9000-01-01T00:00:00Z"}]}`, true, "9000-01-01T00:00:00Z"},
		{"generic epoch ms overflow", `{"title":"Z","starts_at":1e30}`, false, ""},
		{"datadog date overflow", `{"title":"Z","alert_type":"error","date":1e30}`, false, ""},
		{"generic epoch ms max int64", `{"title":"Z","starts_at":9223372036854775807}`, false, ""},
		{"generic epoch ms in range", `{"title":"Z","starts_at":1700000000000}`, true, "2023-11-14T22:13:20Z"},
		{"generic epoch seconds", `{"title":"Z","starts_at":1700000000}`, true, "2023-11-14T22:13:20Z"},
		{"generic epoch microseconds", `{"title":"Z","timestamp":1700000000000000}`, true, "2023-11-14T22:13:20Z"},
		{"generic epoch seconds year 5000", `{"title":"Z","starts_at":95617584000}`, true, "5000-01-01T00:00:00Z"},
		{"generic string +10000", `{"title":"Z","timestamp":"+10000-01-01T00:00:00Z"}`, true, ""}, // not RFC 3339: ignored
		{"two alerts one bad", `[{"title":"A","starts_at":1700000000},{"title":"B","starts_at":1e30}]`, false, ""},
	}
	for _, tt := range tests {
		as, err := Parse([]byte(tt.payload), "")
		if !tt.ok {
			if !errors.Is(err, ErrBadFormat) || !strings.Contains(err.Error(), "9999") {
				t.Errorf("%s: Parse = %v, want ErrBadFormat naming the range", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Parse = %v", tt.name, err)
			continue
		}
		if tt.wantStart != "" {
			if got := as[0].GetStartsAt().AsTime().UTC().Format(time.RFC3339); got != tt.wantStart {
				t.Errorf("%s: starts_at %s, want %s", tt.name, got, tt.wantStart)
			}
		}
	}
}
