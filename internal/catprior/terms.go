// Package catprior is a learned prior over root-cause categories: a
// one-vs-rest naive Bayes model over the terms of an incident's evidence,
// trained on labelled incidents (our own scenario sets, or a team's own
// history). The detectors read a failure's mechanism when they know it; on
// an incident none of them knows, the words its logs, events, commits and
// objects use (overflow, certificate, quota, malformed, unreachable) still
// say which kind of failure it is. The analysis weighs this prior together
// with the mechanism reading and cites the terms that decided it and where
// they occur; it reads "most likely no action needed" from it only when no
// detector established a failure (internal/analysis/prior.go).
package catprior

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Terms is a set of evidence terms (a document for the model).
type Terms map[string]struct{}

// maxTerm is the longest term; a longer word gives several.
const maxTerm = 31

// AddText adds the terms of a free text: lower-cased words of 3 to 31
// ASCII letters, digits and underscores starting with a letter (a longer
// run gives the next term where a letter follows), hex ids left out; a
// snake_case word also gives its parts of 3 letters or more.
func (t Terms) AddText(s string) {
	var buf [maxTerm]byte
	for i := 0; i < len(s); {
		if !isLetter(lower(s[i])) {
			i++
			continue
		}
		k, j := 0, i
		for j < len(s) && k < maxTerm {
			c := lower(s[j])
			if !isLetter(c) && (c < '0' || c > '9') && c != '_' {
				break
			}
			buf[k] = c
			k++
			j++
		}
		if k < 3 {
			i++
			continue
		}
		t.addWord(buf[:k])
		i = j
	}
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }

// addWord adds one word (and its snake_case parts) unless it is a hex id.
func (t Terms) addWord(w []byte) {
	if len(w) >= 6 && isHex(w) {
		return
	}
	t.add(w)
	if bytes.IndexByte(w, '_') < 0 {
		return
	}
	for _, p := range bytes.Split(w, []byte("_")) {
		if len(p) >= 3 {
			t.add(p)
		}
	}
}

func (t Terms) add(w []byte) {
	if _, ok := t[string(w)]; !ok { // the lookup does not allocate
		t[string(w)] = struct{}{}
	}
}

func isHex(w []byte) bool {
	for _, c := range w {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AddJSON adds the terms of the string values of a JSON document (keys are
// the format's, not the incident's); text that is not JSON is read as text.
func (t Terms) AddJSON(b []byte) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.AddText(string(b))
		return
	}
	t.addValue(v)
}

func (t Terms) addValue(v any) {
	switch x := v.(type) {
	case string:
		t.AddText(x)
	case []any:
		for _, e := range x {
			t.addValue(e)
		}
	case map[string]any:
		for _, e := range x {
			t.addValue(e)
		}
	}
}

// reYAMLKey is a YAML line's key (and list dash): what AddYAML drops.
var reYAMLKey = regexp.MustCompile(`^\s*(?:-\s+)?[\w./-]+:\s?`)

// AddYAML adds the terms of a YAML document's values, line by line (a
// block scalar's lines are values too).
func (t Terms) AddYAML(s string) {
	for _, line := range strings.Split(s, "\n") {
		t.AddText(reYAMLKey.ReplaceAllString(line, ""))
	}
}

// AddStruct adds the terms of a protobuf Struct's string values.
func (t Terms) AddStruct(s *structpb.Struct) {
	for _, v := range s.GetFields() {
		t.AddValue(v)
	}
}

// AddValue adds the terms of a protobuf Value's strings.
func (t Terms) AddValue(v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		t.AddText(k.StringValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			t.AddValue(e)
		}
	case *structpb.Value_StructValue:
		t.AddStruct(k.StructValue)
	}
}
