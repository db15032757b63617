package tools

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestRedactText(t *testing.T) {
	tests := []struct {
		name, in string
		secret   string // must be gone; "" means the input must be unchanged
	}{
		{"bearer", "GET /api Authorization: Bearer abc.DEF-123_xyz456", "abc.DEF-123_xyz456"},
		{"bearer lowercase", "sent bearer eyJhbGciOi1234567890abc", "eyJhbGciOi1234567890abc"},
		{"basic header", "authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="},
		{"password kv", "connecting with password=hunter2 to db", "hunter2"},
		{"password colon", "DB_PASSWORD: s3cr3t!", "s3cr3t!"},
		{"json password", `{"user":"app","password":"p@ss w0rd"}`, "p@ss w0rd"},
		{"api key", "api_key='k-12345'", "k-12345"},
		{"client secret", "client_secret = zzTopSecret", "zzTopSecret"},
		{"aws access key", "using AKIAIOSFODNN7EXAMPLE for s3", "AKIAIOSFODNN7EXAMPLE"},
		{"aws secret", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"},
		{"private key", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----\nafter", "MIIEpAIBAAKCAQEA7"},
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U seen", "dozjgNryP4J3jVmNHl0w5N"},
		{"basic auth url", "dial postgres://cart:hunter2@db:5432/cart failed", "hunter2"},
		{"github token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		{"secret yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: aHVudGVyMg==\n  user: YXBw\ntype: Opaque\n", "aHVudGVyMg=="},
		{"secret json", `{"kind":"Secret","data":{"token":"c2VjcmV0","ca.crt":"Q0VSVA=="}}`, "Q0VSVA=="},
		{"prose: password auth", "FATAL: password authentication failed for user app", ""},
		{"prose: bearer word", "Bearer authentication required", ""},
		{"prose: author", "author: dev@example.com", ""},
		{"prose: secrets list", "Secrets (names only): db-creds", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := RedactText(tc.in)
			if tc.secret == "" {
				if out != tc.in {
					t.Errorf("changed prose:\n in: %q\nout: %q", tc.in, out)
				}
				return
			}
			if strings.Contains(out, tc.secret) || !strings.Contains(out, Redacted) {
				t.Errorf("not redacted:\n in: %q\nout: %q", tc.in, out)
			}
			if again := RedactText(out); again != out {
				t.Errorf("not idempotent:\n1: %q\n2: %q", out, again)
			}
		})
	}
	// The secret yaml keeps the keys, and the document after it.
	out := RedactText("kind: Secret\ndata:\n  password: aHVudGVyMg==\ntype: Opaque\n---\nkind: ConfigMap\ndata:\n  mode: fast\n")
	if !strings.Contains(out, "password: "+Redacted) || !strings.Contains(out, "mode: fast") || !strings.Contains(out, "type: Opaque") {
		t.Errorf("secret manifest redaction too broad or too narrow:\n%s", out)
	}
}

func TestRedactionEndToEnd(t *testing.T) {
	ts := newTestSet()
	ts.podLogs.logs["shop/web-1"] = "2026-03-10T11:59:00Z ERROR login failed password=hunter2 token=abcdef123456\n" +
		"2026-03-10T11:59:01Z ERROR upstream postgres://svc:pa55word@db/x refused, Authorization: Bearer tok_9f8e7d6c5b4a\n"
	s := newService(t, ts.set, nil)
	resp := run(t, s, "fetch_pod_logs", map[string]any{"pod": "web-1"})
	r := resp.GetResult()
	md, _ := r.GetMetadata().MarshalJSON()
	pinMD, _ := resp.GetPin().GetMetadata().MarshalJSON()
	all := strings.Join([]string{r.GetRawOutput(), r.GetSummary(), strings.Join(r.GetEvidenceSnippets(), "\n"), string(md),
		resp.GetPin().GetClaim(), resp.GetPin().GetRawOutput(), strings.Join(resp.GetPin().GetSupportingEvidence(), "\n"), string(pinMD)}, "\n")
	for _, secret := range []string{"hunter2", "abcdef123456", "pa55word", "tok_9f8e7d6c5b4a"} {
		if strings.Contains(all, secret) {
			t.Errorf("secret %q leaked", secret)
		}
	}
	if !strings.Contains(string(md), Redacted) || !strings.Contains(r.GetRawOutput(), "login failed") {
		t.Errorf("redaction lost the evidence or missed metadata:\n%s", md)
	}
	if hasTrip(resp.GetTrips(), TripRedacted) == nil {
		t.Errorf("no %s trip", TripRedacted)
	}
	lines := decode[[]facts.LogLine](t, r, facts.KeyLogLines)
	if len(lines) != 2 || lines[0].Level != "ERROR" {
		t.Errorf("facts damaged by redaction: %+v", lines)
	}
}

func TestRedactValue(t *testing.T) {
	v := map[string]any{
		"kind": "Secret", "data": map[string]any{"k": "dmFsdWU="},
		"nested": []any{map[string]any{"api_key": "zzz", "note": "password=abc"}},
		"count":  3.0,
	}
	res, changed := redactValue(v)
	out := res.(map[string]any)
	if !changed {
		t.Error("change not reported")
	}
	if _, again := redactValue(out); again {
		t.Error("second pass reported a change")
	}
	if out["data"].(map[string]any)["k"] != Redacted {
		t.Errorf("secret data kept: %v", out)
	}
	n := out["nested"].([]any)[0].(map[string]any)
	if n["api_key"] != Redacted || strings.Contains(n["note"].(string), "abc") || out["count"] != 3.0 {
		t.Errorf("nested = %v", out)
	}
}
