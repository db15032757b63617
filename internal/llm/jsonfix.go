package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var fenceRE = regexp.MustCompile("(?s)```[ \\t]*([A-Za-z0-9_-]*)[ \\t]*\\r?\\n?(.*?)```")

// ParseFinalAnswer extracts a JSON object from free model text: the whole
// text, a fenced code block (```json preferred), or the first balanced object
// embedded in prose. Trailing commas are repaired. It errors when no JSON
// object can be found.
func ParseFinalAnswer(text string) (map[string]any, error) {
	obj, _, err := extractObject(text)
	return obj, err
}

// extractObject returns the decoded object and its canonical JSON text.
func extractObject(text string) (map[string]any, string, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, "", errors.New("no JSON object: empty text")
	}
	var cands []string
	cands = append(cands, t)
	var plain []string
	for _, m := range fenceRE.FindAllStringSubmatch(t, -1) {
		if strings.EqualFold(m[1], "json") {
			cands = append(cands, m[2])
		} else {
			plain = append(plain, m[2])
		}
	}
	// An unterminated fence (the model was cut off or forgot to close it).
	if i := strings.Index(t, "```"); i >= 0 && strings.Count(t, "```") == 1 {
		rest := t[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		plain = append(plain, rest)
	}
	cands = append(cands, plain...)
	for _, c := range cands {
		if obj, ok := decodeObject(c); ok {
			return canonical(obj)
		}
	}
	// Scan for an embedded object in prose.
	for _, c := range cands {
		for i := 0; i < len(c); i++ {
			if c[i] != '{' {
				continue
			}
			if obj, ok := decodeFirstObject(c[i:]); ok {
				return canonical(obj)
			}
		}
	}
	return nil, "", fmt.Errorf("no JSON object found in %d bytes of text", len(text))
}

func canonical(obj map[string]any) (map[string]any, string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, "", err
	}
	return obj, string(b), nil
}

// decodeObject decodes s as exactly one JSON object (after trailing-comma
// repair), also unwrapping a JSON string that itself holds an object.
func decodeObject(s string) (map[string]any, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, false
	}
	for _, variant := range []string{s, stripTrailingCommas(s)} {
		dec := json.NewDecoder(strings.NewReader(variant))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		if dec.More() {
			continue
		}
		if _, err := dec.Token(); err == nil {
			continue // trailing garbage that is itself a token
		}
		switch x := v.(type) {
		case map[string]any:
			return x, true
		case string: // double-encoded
			if inner, ok := decodeObject(x); ok {
				return inner, true
			}
		}
	}
	return nil, false
}

// decodeFirstObject decodes the object starting at s[0] == '{', ignoring
// whatever follows it.
func decodeFirstObject(s string) (map[string]any, bool) {
	for _, variant := range []string{s, stripTrailingCommas(s)} {
		dec := json.NewDecoder(strings.NewReader(variant))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err == nil && v != nil {
			return v, true
		}
	}
	return nil, false
}

// stripTrailingCommas removes commas directly before } or ] outside strings.
func stripTrailingCommas(s string) string {
	var b bytes.Buffer
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t' || s[j] == '\r') {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// RepairArguments returns tool-call arguments as canonical JSON object text.
// Empty arguments become "{}"; code fences, prose or trailing text around one
// object and trailing commas are repaired. Anything else is an error.
func RepairArguments(args string) (string, error) {
	t := strings.TrimSpace(args)
	if t == "" || t == "null" {
		return "{}", nil
	}
	if obj, ok := decodeObject(t); ok {
		_, s, err := canonical(obj)
		return s, err
	}
	_, s, err := extractObject(t)
	if err != nil {
		return "", fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	return s, nil
}
