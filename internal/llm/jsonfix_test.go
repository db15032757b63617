package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseFinalAnswer(t *testing.T) {
	cases := []struct {
		name string
		text string
		want string // canonical JSON; "" = error expected
	}{
		{"plain", `{"root_cause":"OOM","confidence":0.8}`, `{"confidence":0.8,"root_cause":"OOM"}`},
		{"json fence with prose", "Final answer:\n```json\n{\"root_cause\": \"disk full\"}\n```\nLet me know.", `{"root_cause":"disk full"}`},
		{"bare fence", "```\n{\"a\": 1}\n```", `{"a":1}`},
		{"prose around", `Based on the evidence the answer is {"root_cause": "bad deploy", "chain": ["deploy", "errors"]} and nothing else.`, `{"chain":["deploy","errors"],"root_cause":"bad deploy"}`},
		{"braces in prose before", `I checked {some} things. {"a": "b"}`, `{"a":"b"}`},
		{"trailing commas", "{\"a\": [1, 2,], \"b\": {\"c\": \"x,}\",},}", `{"a":[1,2],"b":{"c":"x,}"}}`},
		{"unterminated fence", "```json\n{\"a\": true}\n", `{"a":true}`},
		{"double encoded", `"{\"a\": 2}"`, `{"a":2}`},
		{"nested braces in strings", `answer: {"msg": "use {x} here", "n": 1}`, `{"msg":"use {x} here","n":1}`},
		{"large ints kept", `{"n": 12345678901234567890}`, `{"n":12345678901234567890}`},
		{"no object", "The root cause is OOM.", ""},
		{"array only", `[1,2,3]`, ""},
		{"truncated", `{"root_cause": "OO`, ""},
		{"empty", "  ", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := ParseFinalAnswer(tc.text)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("want error, got %v", obj)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(obj)
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
		})
	}
}

func TestRepairArguments(t *testing.T) {
	cases := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "", want: "{}"},
		{in: "null", want: "{}"},
		{in: `{"b":1,"a":"x"}`, want: `{"a":"x","b":1}`},
		{in: `{"a":1} trailing words`, want: `{"a":1}`},
		{in: "```json\n{\"a\":1}\n```", want: `{"a":1}`},
		{in: `{"a":1,}`, want: `{"a":1}`},
		{in: `{"a":`, wantErr: true},
		{in: `[1]`, wantErr: true},
		{in: `pod=web-1`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := RepairArguments(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got %s", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestStripTrailingCommasKeepsStrings(t *testing.T) {
	in := `{"s": "a,}", "e": "q\",]"}`
	if got := stripTrailingCommas(in); got != in {
		t.Errorf("modified string content: %s", got)
	}
	if !strings.Contains(stripTrailingCommas(`[1,2, ]`), "[1,2 ]") {
		t.Errorf("trailing comma kept: %s", stripTrailingCommas(`[1,2, ]`))
	}
}
