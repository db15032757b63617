package redact

import (
	"fmt"
	"strings"
	"testing"
)

// A corpus of secret shapes as they arrive in alert payloads, logs and
// describe output; each secret must be gone, the rest of the text kept.
func TestTextSecretShapes(t *testing.T) {
	tests := []struct {
		in, secret, keep string
	}{
		{"DB_PASS=Sup3rS3cret! failed to connect", "Sup3rS3cret!", "failed to connect"},
		{"SMTP_PWD: 'mail-pw-42'", "mail-pw-42", "SMTP_PWD"},
		{"notify https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx failed", "abcdefghijklmnopqrstuvwx", "hooks.slack.com"},
		{"Cookie: session=8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c; theme=dark", "8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c", "Cookie"},
		{"GET /export?user=ann&token=abcd1234efgh5678 200", "abcd1234efgh5678", "user=ann"},
		{"postgres://app:hunter22@db:5432/x", "hunter22", "db:5432"},
		{"CLIENT_SECRET=\"z9y8x7w6\" loaded", "z9y8x7w6", "loaded"},
		{"password=hunter2 and api_key: k-123456789", "hunter2", "and"},
		{"password: correcthorse", "correcthorse", "password"},
		{"password=letmein now", "letmein", "now"},
		{"auth: \"opensesame\" sent", "opensesame", "sent"},
	}
	for _, tc := range tests {
		got := Text(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("Text(%q) = %q: secret %q kept", tc.in, got, tc.secret)
		}
		if !strings.Contains(got, tc.keep) {
			t.Errorf("Text(%q) = %q: lost %q", tc.in, got, tc.keep)
		}
	}
	for _, plain := range []string{"bypass mode on", "tests passed", "GET /healthz 200", "session started for user ann",
		// An error chain's wording after a credential word is prose.
		"get identity: get credentials: failed to refresh cached credentials, operation error STS: AssumeRoleWithWebIdentity"} {
		if got := Text(plain); got != plain {
			t.Errorf("Text(%q) = %q: plain text changed", plain, got)
		}
	}
}

// Value redacts in place at every depth and reports a change only when
// something was redacted.
func TestValue(t *testing.T) {
	tests := []struct {
		name    string
		in      func() any
		changed bool
		secret  string
	}{
		{"plain", func() any {
			return map[string]any{"pods": []any{map[string]any{"name": "web-1", "ready": true, "restarts": 2.0}}, "note": "all good"}
		}, false, ""},
		{"nested text", func() any {
			return map[string]any{"pods": []any{map[string]any{"name": "web-1", "logs": []any{"ok", "DB_PASS=Sup3rS3cret! failed"}}}}
		}, true, "Sup3rS3cret!"},
		{"sensitive key", func() any {
			return map[string]any{"env": map[string]any{"API_KEY": "k-123456789", "mode": "x"}}
		}, true, "k-123456789"},
		{"secret data", func() any {
			return []any{map[string]any{"kind": "Secret", "data": map[string]any{"pw": "aHVudGVyMg=="}}}
		}, true, "aHVudGVyMg=="},
	}
	for _, tt := range tests {
		in := tt.in()
		out, changed := Value(in)
		if changed != tt.changed {
			t.Errorf("%s: changed = %v, want %v", tt.name, changed, tt.changed)
		}
		got := fmt.Sprint(out)
		if tt.secret != "" && (strings.Contains(got, tt.secret) || strings.Contains(fmt.Sprint(in), tt.secret)) {
			t.Errorf("%s: secret %q kept: %s", tt.name, tt.secret, got)
		}
		if !tt.changed && got != fmt.Sprint(tt.in()) {
			t.Errorf("%s: plain value changed: %s", tt.name, got)
		}
	}
}

// BenchmarkValue: the redaction walk over the facts of 40 pods as a tool
// call carries them (nothing to redact, the usual case).
func BenchmarkValue(b *testing.B) {
	pods := make([]any, 40)
	for i := range pods {
		pods[i] = map[string]any{"namespace": "retail", "name": fmt.Sprintf("checkout-7d9f8c6b5-x%d", i), "node": "node-1", "phase": "Running",
			"restarts": 4.0, "labels": map[string]any{"app": "checkout", "tier": "web"},
			"containers": []any{map[string]any{"name": "app", "image": "registry/checkout:1.4.2", "restart_count": 4.0, "state": "running",
				"last_reason": "OOMKilled", "liveness_probe": "http-get :8080/healthz delay=0s period=10s timeout=1s failure=3"}},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	}
	v := map[string]any{"pods": pods, "window_start": "2026-01-02T03:04:05Z"}
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := Value(v); changed {
			b.Fatal("changed")
		}
	}
}
