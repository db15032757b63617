package analysis

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestAbsorbedRetry(t *testing.T) {
	retry := facts.LogLine{Timestamp: at(0), Service: "tide-sync", Level: "ERROR", Message: "gauge 4471 read timeout (retry 1 of 4)"}
	for _, tc := range []struct {
		name  string
		later []facts.LogLine
		want  bool
	}{
		{"its own success follows", []facts.LogLine{
			{Timestamp: at(2), Service: "tide-sync", Level: "INFO", Message: "gauge 4471 read ok"}}, true},
		{"the success names the retry", []facts.LogLine{
			{Timestamp: at(1), Service: "tide-sync", Level: "INFO", Message: "gauge 4471 read succeeded on retry 2"}}, true},
		{"it fails again after the success", []facts.LogLine{
			{Timestamp: at(2), Service: "tide-sync", Level: "INFO", Message: "batch complete"},
			{Timestamp: at(5), Service: "tide-sync", Level: "ERROR", Message: "gauge 4472 read timeout, giving up"}}, false},
		{"no success follows", []facts.LogLine{
			{Timestamp: at(2), Service: "tide-sync", Level: "INFO", Message: "waiting for gauge 4471"}}, false},
		{"another service's success", []facts.LogLine{
			{Timestamp: at(2), Service: "harbour-web", Level: "INFO", Message: "render ok"}}, false},
		{"the success comes too late", []facts.LogLine{
			{Timestamp: at(45), Service: "tide-sync", Level: "INFO", Message: "gauge 4471 read ok"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := append([]facts.LogLine{retry}, tc.later...)
			ev := NewEvidence(&investigationv1.Alert{AlertName: "TideGaugeStale", StartsAt: nil}, []*evidencev1.EvidencePin{pin(t, "p", "search_logs", "logs", facts.KeyLogLines, logs)})
			var l LogLine
			for _, x := range ev.Logs {
				if x.Message == retry.Message {
					l = x
				}
			}
			if got := ev.absorbedRetry(l); got != tc.want {
				t.Fatalf("absorbed %v, want %v", got, tc.want)
			}
			if got := ev.failingLine(l); got == tc.want {
				t.Fatalf("failing line %v with absorbed %v", got, tc.want)
			}
		})
	}
	// A line that announces no retry is never absorbed.
	plain := facts.LogLine{Timestamp: at(0), Service: "tide-sync", Level: "ERROR", Message: "gauge 4471 read timeout"}
	ev := NewEvidence(nil, []*evidencev1.EvidencePin{pin(t, "p", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{plain,
		{Timestamp: at(2), Service: "tide-sync", Level: "INFO", Message: "gauge 4471 read ok"}})})
	for _, l := range ev.Logs {
		if l.Message == plain.Message && ev.absorbedRetry(l) {
			t.Error("a failure that announces no retry was absorbed")
		}
	}
}
