package catprior

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func keys(t Terms) []string {
	var out []string
	for k := range t {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestTerms(t *testing.T) {
	cases := []struct {
		name, kind, in string
		want           []string
	}{
		{"words lowered, short and hex dropped", "text", "ERROR: Quota of db exceeded at deadbeef id=9f3c2a1b", []string{"error", "exceeded", "quota"}},
		{"snake case parts", "text", "pool_wait_seconds rose", []string{"pool_wait_seconds", "pool", "rose", "seconds", "wait"}},
		{"json values, not keys", "json", `{"message":"disk full","level":"warn","labels":{"severity_tier":"gold"}}`, []string{"disk", "full", "gold", "warn"}},
		{"not json read as text", "json", `half {"broken`, []string{"broken", "half"}},
		{"yaml values, not keys", "yaml", "kind: Deployment\nspec:\n  image: shop/cart:2.1\n  - name: STRICT_MODE\n", []string{"cart", "deployment", "mode", "shop", "strict", "strict_mode"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Terms{}
			switch c.kind {
			case "json":
				d.AddJSON([]byte(c.in))
			case "yaml":
				d.AddYAML(c.in)
			default:
				d.AddText(c.in)
			}
			want := slices.Clone(c.want)
			slices.Sort(want)
			if got := keys(d); !slices.Equal(got, want) {
				t.Fatalf("terms = %v, want %v", got, want)
			}
		})
	}
	s, err := structpb.NewStruct(map[string]any{"reason": "BackOff", "n": 3.0, "list": []any{"conntrack table"}, "sub": map[string]any{"k": "overflow"}})
	if err != nil {
		t.Fatal(err)
	}
	d := Terms{}
	d.AddStruct(s)
	if got, want := keys(d), []string{"backoff", "conntrack", "overflow", "table"}; !slices.Equal(got, want) {
		t.Fatalf("struct terms = %v, want %v", got, want)
	}
}

// writeScenario writes an invented scenario folder: its label and one log
// file of the given lines.
func writeScenario(t *testing.T, root, set, name, category string, lines ...string) {
	t.Helper()
	dir := filepath.Join(root, set, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "answer.yml"), []byte("root_cause_category: "+category+"\nrequired_keywords: [secretanswerword]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("the answer is readmeword"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.log"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// invented builds two sets of invented incidents: code defects say
// "segfault", configuration errors "misconfigured", resource exhaustion
// "exhausted", healthy ones "planned drill", each with shared filler
// words; one incident per set has a label the model does not know.
func invented(t *testing.T) string {
	root := t.TempDir()
	for _, set := range []string{"alpha", "beta"} {
		for i, w := range []string{"one", "two", "three"} {
			writeScenario(t, root, set, "c"+w, "code_defect", "worker "+w+" segfault in parser", "request served")
			writeScenario(t, root, set, "m"+w, "configuration_error", "listener misconfigured on start", "request served")
			writeScenario(t, root, set, "r"+w, "resource_exhaustion", "connection pool exhausted", "request served")
			writeScenario(t, root, set, "h"+w, "healthy", "planned drill window "+w, "request served")
			if i == 0 {
				writeScenario(t, root, set, "u"+w, "unknown", "segfault segfault")
			}
		}
	}
	return root
}

func TestTrainAndScore(t *testing.T) {
	root := invented(t)
	m, err := Train(root, []string{"beta", "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Incidents(); got != 24 {
		t.Fatalf("incidents = %d, want 24 (18 faults, 6 healthy; unknown labels are not read)", got)
	}
	if !slices.Equal(m.Sets, []string{"alpha", "beta"}) {
		t.Fatalf("sets = %v, want sorted", m.Sets)
	}
	for _, bad := range []string{"secretanswerword", "readmeword"} {
		if _, ok := m.Postings[bad]; ok {
			t.Fatalf("%q from the answer or the README was learned", bad)
		}
	}
	cases := []struct{ text, want string }{
		{"checkout segfault at startup", "code_defect"},
		{"gateway misconfigured", "configuration_error"},
		{"thread pool exhausted again", "resource_exhaustion"},
	}
	for _, c := range cases {
		d := Terms{}
		d.AddText(c.text)
		r := m.Score(d)
		if r.Known == 0 || r.Scores[0].Category != c.want {
			t.Fatalf("%q read as %+v, want %s first", c.text, r.Scores, c.want)
		}
		if len(r.Scores[0].Top) == 0 {
			t.Fatalf("%q: no deciding term", c.text)
		}
	}
	// Health is read against all faults: a planned drill's words weigh
	// toward it, a segfault's against it.
	for _, c := range []struct {
		text    string
		healthy bool
	}{{"planned drill finished", true}, {"segfault in parser", false}} {
		d := Terms{}
		d.AddText(c.text)
		r := m.Score(d)
		if (r.Healthy > 0) != c.healthy || c.healthy && (len(r.HealthyTop) == 0 || r.HealthyTop[0].Term != "drill" && r.HealthyTop[0].Term != "planned") {
			t.Fatalf("%q: healthy log-odds %.2f (%v), want healthy=%v", c.text, r.Healthy, r.HealthyTop, c.healthy)
		}
	}
	// "request" and "served" occur in every incident: they weigh nothing.
	d := Terms{}
	d.AddText("request served")
	if r := m.Score(d); r.Known != 0 {
		t.Fatalf("words of every incident counted: %+v", r)
	}
}

func TestWithout(t *testing.T) {
	m, err := Train(invented(t), []string{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	w := m.Without("alpha", "nosuchset")
	if w.Incidents() != 12 || !slices.Equal(w.Sets, []string{"beta"}) {
		t.Fatalf("without alpha: %d incidents, sets %v", w.Incidents(), w.Sets)
	}
	if m.Without("alpha") != w {
		t.Fatal("derived model not cached")
	}
	if m.Without("nosuchset") != m {
		t.Fatal("unknown set changed the model")
	}
	// With both sets gone nothing is counted.
	if got := m.Without("alpha", "beta").Incidents(); got != 0 {
		t.Fatalf("without every set: %d incidents", got)
	}
	d := Terms{}
	d.AddText("segfault")
	if r := m.Without("alpha", "beta").Score(d); r.Known != 0 || len(r.Scores) != 0 {
		t.Fatalf("empty model read something: %+v", r)
	}
}

func TestMarshal(t *testing.T) {
	m, err := Train(invented(t), []string{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := back.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("marshal is not stable across a round trip")
	}
	bad := []struct{ name, json string }{
		{"rows", `{"sets":["a"],"docs":[],"terms":{}}`},
		{"labels", `{"sets":["a"],"docs":[[1,1,1,1,1,1]],"terms":{}}`},
		{"posting set", `{"sets":["a"],"docs":[[1,1,1,1,1,1,1]],"terms":{"x":[[3,0,1]]}}`},
		{"posting label", `{"sets":["a"],"docs":[[1,1,1,1,1,1,1]],"terms":{"x":[[0,7,1]]}}`},
	}
	for _, c := range bad {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(c.json))
		zw.Close()
		if _, err := Unmarshal(buf.Bytes()); err == nil {
			t.Fatalf("%s: bad model accepted", c.name)
		}
	}
	if _, err := Unmarshal([]byte("not gzip")); err == nil {
		t.Fatal("non-gzip accepted")
	}
	if m, err := Open("off", nil); m != nil || err != nil {
		t.Fatalf("off: %v %v", m, err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gz"), nil); err == nil {
		t.Fatal("missing file accepted")
	}
}
