package intake

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/rcamesh/rcamesh/internal/protocheck"
)

// intakeErrors are the errors Parse promises to wrap.
var intakeErrors = []error{ErrEmpty, ErrTooBig, ErrNotJSON, ErrNoAlerts, ErrUnknownFormat, ErrUnknownSource, ErrBadFormat}

// alertSeeds returns real payloads: every alert.json of the scenarios we
// wrote (demo, corpus, held-out) and the payloads of this package's tests.
func alertSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, pattern := range []string{"../../scenarios/demo/alert.json", "../../scenarios/corpus/*/alert.json", "../../scenarios/heldout/*/alert.json"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				out = append(out, b)
			}
		}
	}
	if src, err := os.ReadFile("intake_test.go"); err == nil {
		for _, m := range regexp.MustCompile("(?s)= `(\\{.*?)`").FindAllSubmatch(src, -1) {
			out = append(out, m[1])
		}
	}
	if len(out) < 10 {
		tb.Fatalf("only %d seed payloads found", len(out))
	}
	return out
}

// FuzzParse: any payload, with any source hint, either parses into alerts
// that can be stored and served (fingerprinted, timestamps in range, valid
// protobuf and JSON, incident window in order) or fails with one of the
// documented Err* values; parsing is deterministic.
func FuzzParse(f *testing.F) {
	hints := append([]string{"", SourceAuto, "nagios"}, Sources()...)
	for i, b := range alertSeeds(f) {
		f.Add(b, uint8(i%len(hints)))
		f.Add(b, uint8(0))
	}
	f.Add([]byte(`{"version":"4","alerts":[{"labels":{"alertname":"X"},"startsAt":"9999-12-31T23:59:59Z"}]}`), uint8(0))
	f.Add([]byte(`{"title":"Z","starts_at":1e30}`), uint8(0))
	f.Add([]byte(`[{"title":"A"},{"title":"B","date":"2026-01-02 03:04:05"}]`), uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, hintIdx uint8) {
		hint := hints[int(hintIdx)%len(hints)]
		alerts, err := Parse(raw, hint)
		if err != nil {
			for _, e := range intakeErrors {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("Parse(%q, %q) error %v wraps none of the Err* values", raw, hint, err)
		}
		if len(alerts) == 0 {
			t.Fatalf("Parse(%q, %q) returned no alert and no error", raw, hint)
		}
		again, err := Parse(raw, hint)
		if err != nil || len(again) != len(alerts) {
			t.Fatalf("Parse is not deterministic: %d alerts, then %d, %v", len(alerts), len(again), err)
		}
		for i, a := range alerts {
			if a.GetFingerprint() == "" {
				t.Fatalf("alert %d of %q has no fingerprint", i, raw)
			}
			if again[i].GetFingerprint() != a.GetFingerprint() {
				t.Fatalf("alert %d fingerprint %s, then %s", i, a.GetFingerprint(), again[i].GetFingerprint())
			}
			if err := protocheck.Timestamps(a); err != nil {
				t.Fatalf("alert %d of %q: %v", i, raw, err)
			}
			if _, err := proto.Marshal(a); err != nil {
				t.Fatalf("alert %d of %q does not marshal: %v", i, raw, err)
			}
			if _, err := protojson.Marshal(a); err != nil {
				t.Fatalf("alert %d of %q is not JSON-able: %v", i, raw, err)
			}
			if w := a.GetIncidentWindow(); w != nil && w.GetStart() != nil && w.GetEnd() != nil &&
				w.GetEnd().AsTime().Before(w.GetStart().AsTime()) {
				t.Fatalf("alert %d of %q: window ends %s before it starts %s", i, raw, w.GetEnd().AsTime(), w.GetStart().AsTime())
			}
		}
	})
}
