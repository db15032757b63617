package tools

import (
	"slices"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestCalledHosts(t *testing.T) {
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		env  []corev1.EnvVar
		want []string
	}{
		{"url with credentials: host only", env("DATABASE_URL", "postgres://app:s3cret@pgbouncer.escrow.svc.cluster.local:6432/deposits"), []string{"pgbouncer"}},
		{"host:port of a bare Service", env("KAFKA_BROKERS", "kafka-0:9092,kafka-1:9092"), []string{"kafka-0", "kafka-1"}},
		{"outside host kept whole", env("PAYMENTS_URL", "https://api.paygate.example/v2"), []string{"api.paygate.example"}},
		{"svc without cluster suffix", env("REDIS", "redis://sessions.cache.svc:6379/0"), []string{"sessions"}},
		{"loopback and addresses dropped", env("A", "http://localhost:8080", "B", "10.0.0.4:5432"), nil},
		{"plain values are no host", env("RAILS_ENV", "production", "TIMEOUT", "30s", "RATIO", "3:1"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: tt.env}}}
			got := calledHosts(spec)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("calledHosts = %q, want %q", got, tt.want)
			}
			for _, h := range got {
				if h == "s3cret" || h == "app" {
					t.Fatalf("credentials leaked into call edges: %q", got)
				}
			}
		})
	}
	// A value from a Secret is never read.
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "DB", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "url"}}}}}}}
	if got := calledHosts(spec); got != nil {
		t.Fatalf("secret-sourced value read: %q", got)
	}
}

// A commit names a service when it is the service's own (its history past
// the window), when a file path names it, or when its words name it; an
// unrelated repository's commit does not.
func TestCommitNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		cm   facts.Commit
		want bool
	}{
		{"the service's own commit", facts.Commit{Service: "event-indexer", Message: "per-tenant daily indices"}, true},
		{"a path names it", facts.Commit{Service: "platform", Message: "bump", Files: []facts.CommitFile{{Path: "apps/event-indexer/values.yaml"}}}, true},
		{"its words name it", facts.Commit{Service: "platform", Message: "raise event-indexer replicas"}, true},
		{"another service's commit", facts.Commit{Service: "billing", Message: "invoice layout"}, false},
	} {
		if got := commitNames(tc.cm, "event-indexer"); got != tc.want {
			t.Errorf("%s: commitNames = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A spec names an object by a name field equal to it, or by a host field
// (a mesh route's destination or mirror) that names its Service, short or
// qualified; a host of another Service or a plain field does not.
func TestNamesObjectByHost(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]any
		want bool
	}{
		{"mirror host", map[string]any{"http": []any{map[string]any{"mirror": map[string]any{"host": "pricing-shadow"}}}}, true},
		{"qualified host", map[string]any{"route": map[string]any{"host": "pricing-shadow.sleds.svc.cluster.local"}}, true},
		{"a name field", map[string]any{"backendRef": map[string]any{"name": "pricing-shadow"}}, true},
		{"another host", map[string]any{"host": "pricing-shadow-v3"}, false},
		{"a plain field", map[string]any{"description": "pricing-shadow"}, false},
	} {
		if got := namesObject(tc.spec, "pricing-shadow"); got != tc.want {
			t.Errorf("%s: namesObject = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A service or pod name with regular-expression characters (a JSON list
// given as a service) still yields valid PromQL matchers.
func TestSurveyScopeMatchersQuote(t *testing.T) {
	for _, m := range surveyScopeMatchers("", `["Kubernetes","tm"]`, `x(1)*`, "") {
		if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector(m); err != nil {
			t.Errorf("matcher %s does not parse: %v", m, err)
		}
	}
}
