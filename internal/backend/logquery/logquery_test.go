package logquery

import (
	"slices"
	"strings"
	"testing"
)

// holdsIn decides a term by containment in line (field terms on the whole
// line too).
func holdsIn(line string) func(Term) bool {
	return func(t Term) bool { return t.Contains(line) }
}

func TestMatch(t *testing.T) {
	lines := []string{
		"known issue NET-7: uplink threshold flaps during copies",
		"uplink copy finished",
		"ERROR disk full on db-3",
		"flapping alert on db-3 acknowledged",
	}
	for _, tc := range []struct {
		q    string
		want []int
	}{
		{"", []int{0, 1, 2, 3}},
		{"uplink", []int{0, 1}},
		{"uplink copy", []int{1}},
		{"uplink AND copy", []int{1}},
		{"copy OR disk", []int{1, 2}},
		{"uplink copy OR disk", []int{1, 2}}, // AND binds tighter than OR
		{`("known issue" OR flap*) AND (uplink OR "db-3")`, []int{0, 3}},
		{`(flap OR known) (db-3)`, []int{3}},
		{"uplink -copy", []int{0}},
		{"uplink NOT copy", []int{0}},
		{"NOT (uplink OR db-3)", nil},
		{`NOT (flap AND db-3) db-3`, []int{2}},
		{`((uplink))`, []int{0, 1}},
	} {
		e, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%q: %v", tc.q, err)
		}
		var got []int
		for i, l := range lines {
			if Match(e, holdsIn(l)) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q matched %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, q := range []string{`"open`, `(a OR b`, `a) OR b`, `a NOT`, strings.Repeat("(", maxDepth+1) + "a" + strings.Repeat(")", maxDepth+1)} {
		if _, err := Parse(q); err == nil {
			t.Errorf("%q parsed, want an error", q)
		}
	}
}

func TestFieldTerm(t *testing.T) {
	e, err := Parse(`service:"checkout web" -@level:debug`)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := e.(And)
	if !ok || len(a) != 2 {
		t.Fatalf("parsed %#v", e)
	}
	if tm, ok := a[0].(Term); !ok || tm.Field != "service" || tm.Text != "checkout web" {
		t.Fatalf("field term %#v", a[0])
	}
	if n, ok := a[1].(Not); !ok || n.X.(Term).Field != "level" {
		t.Fatalf("negated field term %#v", a[1])
	}
}

func TestLineFilters(t *testing.T) {
	for _, tc := range []struct {
		q, want string // want: filters joined by " ; ", "!" for an exclusion; "ERR" for an error
	}{
		{"refused", "(?i)refused"},
		{"a b", "(?i)a ; (?i)b"},
		{`"no such host" OR refused`, "(?i)(no such host|refused)"},
		{`(known OR flap*) AND ("db.3" OR uplink)`, `(?i)(known|flap) ; (?i)(db\.3|uplink)`},
		{"a b OR c", "(?i)(a|c) ; (?i)(b|c)"},
		{"a -b", "(?i)a ; !(?i)b"},
		{"NOT (a OR b)", "!(?i)a ; !(?i)b"},
		{"a OR -b", "ERR"},
		{"* OR a", ""},
		{"", ""},
	} {
		e, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%q: %v", tc.q, err)
		}
		fs, err := LineFilters(e)
		var parts []string
		for _, f := range fs {
			s := f.Regexp
			if f.Exclude {
				s = "!" + s
			}
			parts = append(parts, s)
		}
		got := strings.Join(parts, " ; ")
		if err != nil {
			got = "ERR"
		}
		if got != tc.want {
			t.Errorf("%q: filters %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestLineFiltersBounded(t *testing.T) {
	// (a1 OR b1) ... ANDed is small; its OR of ANDs explodes in CNF.
	var alts []string
	for i := range 8 {
		alts = append(alts, "(x"+string(rune('a'+i))+" y"+string(rune('a'+i))+")")
	}
	e, err := Parse(strings.Join(alts, " OR "))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LineFilters(e); err == nil || !strings.Contains(err.Error(), "too complex") {
		t.Fatalf("2^8 clauses: err %v, want too complex", err)
	}
}
