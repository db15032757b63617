package analysis

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// The deciding terms' lines include, besides the log lines and commit
// messages, the best line of what a commit changed (its summary, the lines
// its diff adds or removes): where a setting's own words are written.
func TestDecidingLinesQuoteWhatACommitChanged(t *testing.T) {
	ev := &Evidence{
		Logs: []LogLine{{LogLine: facts.LogLine{Service: "boarding", Message: "ticket date does not match sailing date"}, Cite: Cite{PinIDs: []string{"pin_l"}}}},
		Commits: []Commit{{Commit: facts.Commit{SHA: "4e8a1c7d90", Service: "boarding", Message: "Refactor QR check",
			Diff: "--- a/Dates.java\n+++ b/Dates.java\n-  old line\n+  static final DateTimeFormatter KEY = DateTimeFormatter.ofPattern(\"YYYY-MM-dd\");\n"}, Cite: Cite{PinIDs: []string{"pin_c"}}}},
	}
	top := []catprior.Term{{Term: "formatter", Weight: 2}, {Term: "yyyy", Weight: 1.5}, {Term: "refactor", Weight: 1}, {Term: "date", Weight: 0.5}}
	claims := decidingLines(ev, top, &investigationv1.Diagnosis{})
	var all []string
	for _, c := range claims {
		all = append(all, c.GetClaim())
	}
	text := strings.Join(all, "\n")
	if !strings.Contains(text, `ofPattern("YYYY-MM-dd")`) || !strings.Contains(text, "commit 4e8a1c7d90 changes") {
		t.Errorf("claims %q: want the diff's added line quoted", text)
	}
	if strings.Contains(text, "old line") {
		t.Errorf("claims %q: a changed line without a deciding term quoted", text)
	}
	if !strings.Contains(text, "ticket date does not match") || !strings.Contains(text, "Refactor QR check") {
		t.Errorf("claims %q: the log line and the message are still quoted", text)
	}
}
