package router

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/services/tools"
)

// fuzzRegistry is the registry the tools service serves (every built-in
// tool) merged with this package's test registry.
func fuzzRegistry(tb testing.TB) *Registry {
	tb.Helper()
	treg, err := tools.DefaultRegistry()
	if err != nil {
		tb.Fatal(err)
	}
	seen := map[string]bool{}
	var defs []*evidencev1.ToolDefinition
	for _, intent := range treg.Intents() {
		t, _ := treg.Get(intent)
		defs = append(defs, t.Def)
		seen[intent] = true
	}
	for _, d := range testRegistry() {
		if !seen[d.GetIntent()] {
			defs = append(defs, d)
		}
	}
	return NewRegistry(defs)
}

// commandSeeds are slash commands from the README, the war room and this
// package's tests.
var commandSeeds = []string{
	"/logs namespace=payments pod=auth-*",
	"/logs namespace=retail pod=orders-api-*",
	"/logs auth-5b6q9 previous",
	"/logs pod=auth-5b6q9 previous=yes tail_lines=200",
	"/logs previous=no tail_lines=50",
	"/fetch_pod_logs ns=shop pod=checkout-84d5-xyz12",
	"/events namespace=payments since_minutes=2h",
	"/events since=30m type=Warning",
	"/describe deployment checkout",
	"/describe kind=pod name=auth-5b6q9",
	`/search query="connection refused" level=ERROR`,
	`/search 'a b' "c \"d\""`,
	`/promql rate(http_requests_total{code="5 00"}[5m])`,
	`/promql query="histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))" range_minutes=60 step=30s`,
	`/promql up==1 --previous`,
	`/promql x=~"a.*"`,
	"/pods namespace=shop label_selector=app=web",
	"/deploys service=checkout since=2h",
	"/commits service=auth",
	"/nodes node=worker-a",
	"/dbmetrics instance=orders-db metric=CPUUtilization since=1h",
	"/investigate service=checkout namespace=shop",
	"/lgs pod=x",
	"/logs pod=a pod=b",
	`/search query="unterminated`,
	"/",
	"/logs\tnamespace=\u00a0x",
	"/events namespace=\"a\nb\"",
}

// FuzzParseCommand: any line either parses into a typed call or fails with an
// *InputError (InvalidArgument); a parsed call's CommandString parses back to
// the same call, and its params can be sent (a valid protobuf Struct).
func FuzzParseCommand(f *testing.F) {
	reg := fuzzRegistry(f)
	for _, s := range commandSeeds {
		f.Add(s)
	}
	for _, t := range reg.Tools {
		f.Add(t.GetUsage())
		f.Add(t.GetSlashCommand())
	}
	f.Fuzz(func(t *testing.T, line string) {
		call, err := ParseCommand(reg, line)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("ParseCommand(%q) error %T %v is not an *InputError", line, err, err)
			}
			return
		}
		checkCall(t, reg, call, "ParseCommand("+strconvQuote(line)+")")
		if utf8.ValidString(line) {
			checkSendable(t, call)
		}
		checkRoundTrip(t, reg, call)
	})
}

// FuzzValidateParams: quick-action parameters (JSON, as the war room and the
// API send them) either validate into a typed call or fail with an
// *InputError; validation is idempotent and the call round-trips through its
// slash-command form.
func FuzzValidateParams(f *testing.F) {
	reg := fuzzRegistry(f)
	seeds := []struct {
		intent, params string
	}{
		{"get_events", `{"namespace":"payments"}`},
		{"fetch_pod_logs", `{"namespace":"payments","pod":"auth-*","previous":true,"tail_lines":200}`},
		{"fetch_pod_logs", `{"pod":"x","tail_lines":"many"}`},
		{"query_prometheus", `{"query":"up","range_minutes":60,"step":"30s"}`},
		{"query_prometheus", `{"query":["up"]}`},
		{"query_prometheus", `{"query":"up","start":"2026-03-10T13:00:00Z","end":"2026-03-10T12:00:00Z"}`},
		{"describe_resource", `{"kind":"Deployment","name":"checkout","namespace":"shop"}`},
		{"get_events", `{"type":"Fatal"}`},
		{"search_logs", `{"query":"a\nb","level":"error","since_minutes":"2h"}`},
		{"get_events", `{"namespace":null}`},
		{"get_events", `{"since_minutes":1e308}`},
	}
	for _, s := range seeds {
		f.Add(s.intent, s.params)
	}
	f.Fuzz(func(t *testing.T, intent, params string) {
		var in map[string]any
		if json.Unmarshal([]byte(params), &in) != nil {
			return
		}
		tool, ok := reg.Tool(intent)
		if !ok {
			return
		}
		call, err := ValidateParams(tool, in)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("ValidateParams(%s, %s) error %T %v is not an *InputError", intent, params, err, err)
			}
			return
		}
		checkCall(t, reg, call, "ValidateParams("+intent+", "+params+")")
		again, err := ValidateParams(tool, call.Params)
		if err != nil || !reflect.DeepEqual(again.Params, call.Params) {
			t.Fatalf("ValidateParams is not idempotent on %v: %v, %v", call.Params, again, err)
		}
		checkSendable(t, call)
		checkRoundTrip(t, reg, call)
	})
}

// FuzzParseNatural: plain-language requests give no plan or a plan of
// well-typed calls of registered tools, deterministically; each call
// round-trips through its slash-command form.
func FuzzParseNatural(f *testing.F) {
	reg := fuzzRegistry(f)
	for _, q := range []string{
		"get me the auth pod logs",
		"show logs of the previous container of payments-api",
		"check DNS in this namespace",
		"show warning events for the last 30 minutes",
		"describe deployment checkout",
		"describe the auth pod",
		"what's the status of pods in shop",
		"is the auth pod crashing?",
		"cpu of checkout",
		"p95 latency of checkout over the last hour",
		"error rate of payments-api",
		"any recent deploys?",
		"what changed in checkout in the last 2 hours",
		"show the commits of auth",
		"search logs for connection refused",
		`find "upstream connect error" in the logs`,
		"show me the slow queries on the database",
		"any failover events on the db?",
		"check node health",
		"why is checkout slow?",
		"any errors in auth?",
		"hello there, how are you?",
		"memory of web over the last 99999999999 hours",
		`find "a\" b" in "c`,
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, text string) {
		plan := ParseNatural(reg, text, testContext())
		again := ParseNatural(reg, text, testContext())
		if describePlan(plan) != describePlan(again) {
			t.Fatalf("ParseNatural(%q) is not deterministic: %s vs %s", text, describePlan(plan), describePlan(again))
		}
		if plan == nil {
			return
		}
		if plan.Primary == nil {
			t.Fatalf("ParseNatural(%q) gave a plan without a primary call", text)
		}
		for _, c := range append([]*Call{plan.Primary}, plan.Companions...) {
			checkCall(t, reg, c, "ParseNatural("+strconvQuote(text)+")")
			if _, err := ValidateParams(c.Tool, c.Params); err != nil {
				t.Fatalf("ParseNatural(%q) planned %s with params its schema refuses: %v", text, CommandString(c), err)
			}
			if utf8.ValidString(text) { // a protobuf request carries only valid UTF-8
				checkSendable(t, c)
				checkRoundTrip(t, reg, c) // the tokenizer reads invalid bytes as U+FFFD
			}
		}
	})
}

func describePlan(p *SmartPlan) string {
	if p == nil {
		return "<nil>"
	}
	var parts []string
	for _, c := range append([]*Call{p.Primary}, p.Companions...) {
		if c == nil {
			parts = append(parts, "<nil call>")
			continue
		}
		parts = append(parts, CommandString(c))
	}
	return strings.Join(parts, " | ")
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// checkCall: the tool is registered, every param is in its schema with the
// Go type of its declared type, and a strict select holds one of its options.
func checkCall(t *testing.T, reg *Registry, call *Call, what string) {
	t.Helper()
	if call == nil || call.Tool == nil {
		t.Fatalf("%s returned no tool", what)
	}
	if got, ok := reg.Tool(call.Tool.GetIntent()); !ok || got != call.Tool {
		t.Fatalf("%s returned unregistered tool %q", what, call.Tool.GetIntent())
	}
	for k, v := range call.Params {
		p := findParam(call.Tool, k)
		if p == nil {
			t.Fatalf("%s set %q, not a parameter of %s", what, k, call.Tool.GetIntent())
		}
		switch p.GetType() {
		case evidencev1.ParamType_PARAM_TYPE_NUMBER:
			if _, ok := v.(float64); !ok {
				t.Fatalf("%s: number %q is %T", what, k, v)
			}
		case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
			if _, ok := v.(bool); !ok {
				t.Fatalf("%s: boolean %q is %T", what, k, v)
			}
		default:
			s, ok := v.(string)
			if !ok || s == "" {
				t.Fatalf("%s: string %q is %T %q", what, k, v, v)
			}
			if p.GetType() == evidencev1.ParamType_PARAM_TYPE_SELECT && strictOptions(p) && !slices.Contains(p.GetOptions(), s) {
				t.Fatalf("%s: select %q = %q is not one of %v", what, k, s, p.GetOptions())
			}
		}
	}
}

// checkSendable: the params make a Struct that marshals.
func checkSendable(t *testing.T, call *Call) {
	t.Helper()
	st, err := paramsStruct(call.Params)
	if err != nil {
		t.Fatalf("params %v of %s are not a Struct: %v", call.Params, call.Tool.GetIntent(), err)
	}
	if _, err := proto.Marshal(st); err != nil {
		t.Fatalf("params %v of %s do not marshal: %v", call.Params, call.Tool.GetIntent(), err)
	}
}

// checkRoundTrip: CommandString(call) parses back to the same tool and params.
func checkRoundTrip(t *testing.T, reg *Registry, call *Call) {
	t.Helper()
	line := CommandString(call)
	back, err := ParseCommand(reg, line)
	if err != nil {
		t.Fatalf("CommandString %q of %v does not parse: %v", line, call.Params, err)
	}
	if back.Tool != call.Tool || !reflect.DeepEqual(back.Params, call.Params) {
		t.Fatalf("round trip through %q: %s %v, want %s %v", line, back.Tool.GetIntent(), back.Params, call.Tool.GetIntent(), call.Params)
	}
}
