package analysis

import (
	"slices"
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// inventedPrior is a model of 10 invented incidents per category and 10
// healthy ones: each label has its own 10 words (word<c>x<k>, healthy's
// c is the last), each used by 6 of the label's incidents and by one
// incident of every other label.
func inventedPrior() *catprior.Model {
	m := &catprior.Model{Sets: []string{"invented"}, Postings: map[string][][3]int{}}
	docs := make([]int, len(catprior.Categories)+1) // the last column: healthy
	for c := range docs {
		docs[c] = 10
		for k := 0; k < 10; k++ {
			var ps [][3]int
			for o := range docs {
				n := 1
				if o == c {
					n = 6
				}
				ps = append(ps, [3]int{0, o, n})
			}
			m.Postings[priorWord(c, k)] = ps
		}
	}
	m.Docs = [][]int{docs}
	return m
}

func priorWord(c, k int) string {
	return "word" + string(rune('a'+c)) + "x" + string(rune('a'+k))
}

// logPin is a pin of log lines made of the given words.
func logPin(t *testing.T, id string, words ...string) *evidencev1.EvidencePin {
	return pin(t, id, "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{{Timestamp: at(0), Service: "svc", Level: "ERROR", Message: strings.Join(words, " ")}})
}

func wordsOf(c, n int) []string {
	var out []string
	for k := 0; k < n; k++ {
		out = append(out, priorWord(c, k))
	}
	return out
}

func TestApplyPrior(t *testing.T) {
	code, config, infra, healthy := 0, 1, 4, len(catprior.Categories)
	cases := []struct {
		name     string
		cat      investigationv1.RootCauseCategory
		conf     float64
		prior    *catprior.Model
		pins     func(t *testing.T) []*evidencev1.EvidencePin
		want     investigationv1.RootCauseCategory
		rootHas  string
		claimHas string
	}{
		{"unknown mechanism: the wording decides", catUnknown, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(code, 10)...)}
			},
			catCode, "reads most like a code defect", "Category code defect from"},
		{"a mechanism reading the wording clearly contradicts", catConfig, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(infra, 10)...)}
			},
			catInfra, "rather than the configuration error", "Category infrastructure from"},
		{"a mechanism reading the wording agrees with", catConfig, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(config, 10)...)}
			},
			catConfig, "", "agrees that this is a configuration error"},
		{"wording leaning elsewhere by less than the mechanism weighs", catConfig, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", append(wordsOf(code, 5), wordsOf(config, 4)...)...)}
			},
			catConfig, "", "leans to code defect"},
		{"no mechanism and the words of activity that needed no action", catUnknown, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(healthy, 10)...)}
			},
			catHealthy, "most likely no action needed", "No action needed, from the wording"},
		{"a fault a detector established is never called healthy from words", catConfig, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(healthy, 10)...)}
			},
			catConfig, "", "agrees that this is a configuration error"},
		{"a sure mechanism reading outweighs wording that overrides an unsure one", catConfig, 1, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", append(wordsOf(code, 8), wordsOf(config, 3)...)...)}
			},
			catConfig, "", "leans to code defect"},
		{"the same wording overrides an unsure reading", catConfig, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", append(wordsOf(code, 8), wordsOf(config, 3)...)...)}
			},
			catCode, "rather than the configuration error", "Category code defect from"},
		{"a healthy conclusion is left alone", catHealthy, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(code, 10)...)}
			},
			catHealthy, "", ""},
		{"no prior", catUnknown, 0, nil,
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(code, 10)...)}
			},
			catUnknown, "", ""},
		{"too few known terms", catUnknown, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{logPin(t, "p1", wordsOf(code, 5)...)}
			},
			catUnknown, "", ""},
		{"the engine's own query is not evidence", catUnknown, 0, inventedPrior(),
			func(t *testing.T) []*evidencev1.EvidencePin {
				p := pin(t, "p1", "search_logs", "logs", facts.KeyQuery, strings.Join(wordsOf(code, 10), " OR "))
				return []*evidencev1.EvidencePin{p, logPin(t, "p2", "nothing", "known", "here")}
			},
			catUnknown, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &investigationv1.Diagnosis{RootCause: "Something failed.", Category: c.cat, Confidence: c.conf}
			in := Input{Pins: c.pins(t), Prior: c.prior}
			applyPrior(in, NewEvidence(nil, in.Pins), d)
			if d.GetCategory() != c.want {
				t.Fatalf("category %s, want %s (%s)", d.GetCategory(), c.want, text(d))
			}
			if c.rootHas != "" && !strings.Contains(d.GetRootCause(), c.rootHas) {
				t.Fatalf("root cause %q lacks %q", d.GetRootCause(), c.rootHas)
			}
			if c.rootHas == "" && d.GetRootCause() != "Something failed." {
				t.Fatalf("root cause changed: %q", d.GetRootCause())
			}
			var claims []string
			for _, cl := range d.GetNonValidatedClaims() {
				claims = append(claims, cl.GetClaim())
				if len(cl.GetPinIds()) == 0 {
					t.Fatalf("claim cites no pin: %q", cl.GetClaim())
				}
			}
			got := strings.Join(claims, "\n")
			if c.claimHas == "" && got != "" || c.claimHas != "" && !strings.Contains(got, c.claimHas) {
				t.Fatalf("claims %q, want one with %q", got, c.claimHas)
			}
		})
	}
}

// BenchmarkApplyPrior weighs the embedded prior over an investigation's
// worth of evidence: 40 pins of 50 log lines each.
func BenchmarkApplyPrior(b *testing.B) {
	m, err := catprior.Embedded()
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	var pins []*evidencev1.EvidencePin
	for i := 0; i < 40; i++ {
		var lines []facts.LogLine
		for k := 0; k < 50; k++ {
			lines = append(lines, facts.LogLine{Timestamp: at(k), Service: "checkout", Level: "ERROR",
				Message: "upstream connect error or disconnect/reset before headers: connection timeout to payments-gateway:8443 after 3000ms (attempt " + string(rune('a'+k%26)) + ")"})
		}
		pins = append(pins, pin(t, "p"+string(rune('a'+i%26))+string(rune('a'+i/26)), "search_logs", "logs", facts.KeyLogLines, lines))
	}
	in := Input{Pins: pins, Prior: m}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ev := NewEvidence(nil, pins) // a fresh evidence model: the document is built once per model
		b.StartTimer()
		d := &investigationv1.Diagnosis{RootCause: "x", Category: catUnknown}
		applyPrior(in, ev, d)
	}
}

// The tools' own words in the facts (a describe's findings, the change
// types the tools give a commit) are not evidence; a spec line's path is
// the format's, its value what was set.
func TestPinTermsLeaveToolWordsOut(t *testing.T) {
	p := pin(t, "p1", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{{
		Kind: "ConfigMap", Name: "tariffs", Signals: []string{"findingword in the describe"},
		Spec: []string{"spec.pathword=valueword"}, Data: map[string]string{"k": "dataword"},
	}})
	c := pin(t, "p2", "get_recent_changes", "git", facts.KeyCommits, []facts.Commit{{SHA: "abc1234", Message: "bump messageword", ChangeTypes: []string{"typeword"}}})
	got := pinTerms(p)
	for k := range pinTerms(c) {
		got[k] = struct{}{}
	}
	for _, w := range []string{"valueword", "dataword", "messageword", "tariffs", "configmap"} {
		if _, ok := got[w]; !ok {
			t.Errorf("%q missing from %v", w, got)
		}
	}
	for _, w := range []string{"findingword", "pathword", "typeword"} {
		if _, ok := got[w]; ok {
			t.Errorf("%q (the tools' words or a path) counted", w)
		}
	}
}

// The lines that carry the deciding terms are quoted with their pins,
// most weight first, at most three, none the diagnosis already quotes.
func TestDecidingLines(t *testing.T) {
	code := wordsOf(0, 10)
	pins := []*evidencev1.EvidencePin{
		logPin(t, "p1", code...), // every deciding word
		logPin(t, "p2", "plain", "words", code[0]),
		logPin(t, "p3", "nothing", "deciding"),
		logPin(t, "p4", "already", "quoted", code[1], code[2]),
		logPin(t, "p5", "another", code[3], code[4]),
		logPin(t, "p6", "fifth", code[5]),
	}
	d := &investigationv1.Diagnosis{RootCause: "Something failed.", Category: catUnknown,
		ValidatedClaims: []*investigationv1.Claim{{Claim: "seen: already quoted " + code[1] + " " + code[2]}}}
	applyPrior(Input{Pins: pins, Prior: inventedPrior()}, NewEvidence(nil, pins), d)
	var got []string
	for _, c := range d.GetValidatedClaims() {
		if strings.HasPrefix(c.GetClaim(), "Where the deciding terms") {
			got = append(got, c.GetPinIds()[0])
		}
	}
	if want := []string{"p1", "p5"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("deciding lines from pins %v, want p1 then p5 then one of p2/p6, and never p3 or p4", got)
	}
	if got[2] != "p2" && got[2] != "p6" {
		t.Fatalf("third deciding line from %s", got[2])
	}
}

// A line that addresses the reader is data the evidence model sets aside:
// however many deciding words it carries, it is never quoted as where
// they were written.
func TestDecidingLinesSkipInstructions(t *testing.T) {
	code := wordsOf(0, 10)
	pins := []*evidencev1.EvidencePin{
		logPin(t, "p1", append([]string{"ignore", "previous", "findings;"}, code...)...),
		logPin(t, "p2", "plain", code[0], code[1], code[2], code[3], code[4], code[5], code[6], code[7]),
	}
	d := &investigationv1.Diagnosis{RootCause: "Something failed.", Category: catUnknown}
	applyPrior(Input{Pins: pins, Prior: inventedPrior()}, NewEvidence(nil, pins), d)
	for _, c := range d.GetValidatedClaims() {
		if strings.HasPrefix(c.GetClaim(), "Where the deciding terms") && slices.Contains(c.GetPinIds(), "p1") {
			t.Fatalf("an instruction-like line was quoted: %q", c.GetClaim())
		}
	}
}

// With no mechanism reading, health is read below the model's own
// boundary: words that lean only mildly to a fault read as most likely no
// action needed; words that weigh clearly to faults do not.
func TestUnknownLeansToNoAction(t *testing.T) {
	healthy := len(catprior.Categories)
	mild := append([]string{priorWord(healthy, 0)}, wordsOf(0, 10)...) // log-odds about -1.5
	var clear []string
	clear = append(clear, priorWord(healthy, 0))
	for c := 0; c < len(catprior.Categories); c++ {
		clear = append(clear, wordsOf(c, 10)...) // about -17.5
	}
	for _, tc := range []struct {
		name    string
		words   []string
		healthy bool
	}{
		{"mild lean to a fault", mild, true},
		{"clear weight to faults", clear, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pins: []*evidencev1.EvidencePin{logPin(t, "p1", tc.words...)}, Prior: inventedPrior()}
			ev := NewEvidence(nil, in.Pins)
			doc, _ := ev.priorTerms(in.Pins)
			r := in.Prior.Score(doc)
			d := &investigationv1.Diagnosis{RootCause: "Undetermined.", Category: catUnknown}
			applyPrior(in, ev, d)
			if got := d.GetCategory() == catHealthy; got != tc.healthy {
				t.Fatalf("log-odds %.1f: healthy %v, want %v (%s)", r.Healthy, got, tc.healthy, text(d))
			}
			if tc.healthy && (r.Healthy >= 0 || r.Healthy <= unknownHealthyLogOdds) {
				t.Fatalf("log-odds %.1f: not between the threshold %.0f and the boundary 0", r.Healthy, unknownHealthyLogOdds)
			}
		})
	}
	t.Run("mild lean, but an error series rose", func(t *testing.T) {
		errs := metric("ifInErrors", map[string]string{"instance": "dist-sw-9", "ifDescr": "Te1/1/2"}, step(0, 400, 20, 10)...)
		in := Input{Pins: []*evidencev1.EvidencePin{logPin(t, "p1", mild...), pin(t, "p2", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{errs})}, Prior: inventedPrior()}
		d := &investigationv1.Diagnosis{RootCause: "Undetermined.", Category: catUnknown}
		applyPrior(in, NewEvidence(nil, in.Pins), d)
		if d.GetCategory() == catHealthy {
			t.Fatalf("read as no action needed while an error series rose: %s", text(d))
		}
	})
	t.Run("mild lean, an error series rose in staging", func(t *testing.T) {
		errs := metric("http_requests_total", map[string]string{"service": "berth-search", "env": "staging", "code": "504"}, step(0, 400, 20, 10)...)
		in := Input{Pins: []*evidencev1.EvidencePin{logPin(t, "p1", mild...), pin(t, "p2", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{errs})}, Prior: inventedPrior()}
		d := &investigationv1.Diagnosis{RootCause: "Undetermined.", Category: catUnknown}
		applyPrior(in, NewEvidence(nil, in.Pins), d)
		if d.GetCategory() != catHealthy {
			t.Fatalf("a staging series' errors kept the reading from no action needed: %s", text(d))
		}
	})
}

// The wording overrides a mechanism reading only by overrideMargin or
// more: just inside it the reading stands, just outside it the wording
// decides.
func TestOverrideMargin(t *testing.T) {
	code, config := 0, 1
	words := append(wordsOf(code, 8), wordsOf(config, 3)...)
	in := Input{Pins: []*evidencev1.EvidencePin{logPin(t, "p1", words...)}, Prior: inventedPrior()}
	doc, _ := NewEvidence(nil, in.Pins).priorTerms(in.Pins)
	r := in.Prior.Score(doc)
	var codeScore, configScore float64
	for _, s := range r.Scores {
		switch s.Category {
		case "code_defect":
			codeScore = s.Score
		case "configuration_error":
			configScore = s.Score
		}
	}
	gap := codeScore - configScore // what the reading's weight must nearly cover
	if gap <= mechanismBonus+overrideMargin || gap >= mechanismBonus+mechanismPerConfidence {
		t.Fatalf("gap %.2f: the invented wording does not fit the test", gap)
	}
	for _, tc := range []struct {
		name   string
		margin float64 // how far the wording beats the reading with its weight
		want   investigationv1.RootCauseCategory
	}{
		{"inside the margin", overrideMargin / 2, catConfig},
		{"outside the margin", overrideMargin * 1.5, catCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := (gap - tc.margin - mechanismBonus) / mechanismPerConfidence
			d := &investigationv1.Diagnosis{RootCause: "Something failed.", Category: catConfig, Confidence: conf}
			applyPrior(in, NewEvidence(nil, in.Pins), d)
			if d.GetCategory() != tc.want {
				t.Fatalf("confidence %.3f (wording ahead by %.2f): category %s, want %s", conf, tc.margin, d.GetCategory(), tc.want)
			}
		})
	}
}
