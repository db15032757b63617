package facts

import "testing"

func TestPodWorkload(t *testing.T) {
	tests := []struct {
		pod, workload, trimmed string
		ok                     bool
	}{
		{"orders-api-7d9f8c6b5-x2x4z", "orders-api", "orders-api", true},
		{"a-b-cdefgh-ijklm", "a-b", "a-b", true},
		{"web.v2-5d9f8c6b-abcde", "web.v2", "web.v2", true},
		{"postgres-0", "postgres", "postgres-0", true},
		{"kafka-broker-12", "kafka-broker", "kafka-broker-12", true},
		{"orders-api", "", "orders-api", false},
		{"Orders-API-7d9f8c6b5-x2x4z", "", "Orders-API-7d9f8c6b5-x2x4z", false},
		{"", "", "", false},
	}
	for _, tc := range tests {
		w, ok := PodWorkload(tc.pod)
		if w != tc.workload || ok != tc.ok {
			t.Errorf("PodWorkload(%q) = %q, %t; want %q, %t", tc.pod, w, ok, tc.workload, tc.ok)
		}
		if got := TrimReplicaSuffix(tc.pod); got != tc.trimmed {
			t.Errorf("TrimReplicaSuffix(%q) = %q, want %q", tc.pod, got, tc.trimmed)
		}
	}
}

func TestReplicaSetDeployment(t *testing.T) {
	for rs, want := range map[string]string{
		"orders-api-7d9f8c6b5": "orders-api",
		"web.v2-5d9f8c6b":      "web.v2",
		"orders-api":           "orders-api",
		"api":                  "api",
		"api-7d9":              "api-7d9",
	} {
		if got := ReplicaSetDeployment(rs); got != want {
			t.Errorf("ReplicaSetDeployment(%q) = %q, want %q", rs, got, want)
		}
	}
}
