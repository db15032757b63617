package llm

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/schema")

// TestNormalizerGolden runs both normalizers over testdata/schema/*.in.json.
// The output is compared with NAME.<mode>.json, or, when the normalizer
// must refuse the schema, the error with NAME.<mode>.err.
func TestNormalizerGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/schema/*.in.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	modes := []struct {
		name string
		fn   func(map[string]any) (map[string]any, error)
	}{
		{"strict", NormalizeStrict},
		{"compatible", NormalizeCompatible},
	}
	for _, in := range inputs {
		base := strings.TrimSuffix(in, ".in.json")
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			t.Run(filepath.Base(base)+"/"+m.name, func(t *testing.T) {
				var schema map[string]any
				if err := json.Unmarshal(raw, &schema); err != nil {
					t.Fatal(err)
				}
				before, _ := json.Marshal(schema)
				out, nerr := m.fn(schema)
				after, _ := json.Marshal(schema)
				if !bytes.Equal(before, after) {
					t.Error("normalizer modified its input")
				}
				var got []byte
				goldenPath := base + "." + m.name + ".json"
				errPath := base + "." + m.name + ".err"
				if nerr != nil {
					got, goldenPath = []byte(nerr.Error()+"\n"), errPath
				} else {
					got, _ = json.MarshalIndent(out, "", "  ")
					got = append(got, '\n')
					if m.name == "strict" {
						if err := ValidateStrict(out); err != nil {
							t.Errorf("strict output fails ValidateStrict: %v", err)
						}
					}
				}
				if *update {
					_ = os.Remove(base + "." + m.name + ".json")
					_ = os.Remove(errPath)
					if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(goldenPath)
				if err != nil {
					t.Fatalf("golden %s missing (run with -update and review): %v\ngot:\n%s", goldenPath, err, got)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s mismatch\ngot:\n%s\nwant:\n%s", goldenPath, got, want)
				}
			})
		}
	}
}

func TestValidateStrict(t *testing.T) {
	ok := map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"a"},
		"properties": map[string]any{"a": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"x"}}}},
	}
	cases := []struct {
		name   string
		schema map[string]any
		want   string // substring of the error; "" = valid
	}{
		{"valid", ok, ""},
		{"nil", nil, "nil schema"},
		{"top not object", map[string]any{"type": "string"}, "top level"},
		{"type array", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
			"properties": map[string]any{"a": map[string]any{"type": []any{"string", "null"}}}}, "properties.a: type must be a single string"},
		{"open object", map[string]any{"type": "object", "required": []any{}, "properties": map[string]any{}}, "additionalProperties: false"},
		{"optional property", map[string]any{"type": "object", "additionalProperties": false, "required": []any{},
			"properties": map[string]any{"a": map[string]any{"type": "string"}}}, `property "a" is not in required`},
		{"anyOf", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
			"properties": map[string]any{"a": map[string]any{"type": "string", "anyOf": []any{}}}}, `keyword "anyOf"`},
		{"bare items", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
			"properties": map[string]any{"a": map[string]any{"type": "array", "items": map[string]any{}}}}, "explicit items"},
		{"enum type mismatch", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
			"properties": map[string]any{"a": map[string]any{"type": "integer", "enum": []any{"x"}}}}, "does not match"},
		{"required ghost", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"b"},
			"properties": map[string]any{}}, `"b" which is not a property`},
		{"null type", map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
			"properties": map[string]any{"a": map[string]any{"type": "null"}}}, `type "null" is not allowed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateStrict(tc.schema)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateStrictDepthLimit(t *testing.T) {
	leaf := map[string]any{"type": "string"}
	node := leaf
	for range StrictMaxDepth + 1 {
		node = map[string]any{"type": "object", "additionalProperties": false, "required": []any{"x"}, "properties": map[string]any{"x": node}}
	}
	if err := ValidateStrict(node); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Fatalf("err = %v, want depth error", err)
	}
}

// Go-typed schemas (as tool registries often build them) normalize the same.
func TestNormalizeGoTypedSchema(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []string{"kind"},
		"properties": map[string]map[string]any{
			"kind":  {"type": "string", "enum": []string{"pod", "node"}},
			"limit": {"type": "integer"},
		},
	}
	out, err := NormalizeStrict(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	want := `{"additionalProperties":false,"properties":{"kind":{"enum":["pod","node"],"type":"string"},"limit":{"description":"Optional: 0 means unset.","type":"integer"}},"required":["kind","limit"],"type":"object"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func BenchmarkNormalizeStrict(b *testing.B) {
	raw, err := os.ReadFile("testdata/schema/ref_defs.in.json")
	if err != nil {
		b.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := NormalizeStrict(schema); err != nil {
			b.Fatal(err)
		}
	}
}
