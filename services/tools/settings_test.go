package tools

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A container's settings are described without its secrets.
func TestContainerSettings(t *testing.T) {
	c := corev1.Container{
		Command: []string{"java"},
		Args:    []string{"-XX:MaxMetaspaceSize=128m -XX:+UseParallelGC", "--port=8080", "-jar", "app.jar"},
		Env: []corev1.EnvVar{
			{Name: "PEER_POOL_SIZE", Value: "64"},
			{Name: "DB_PASSWORD", Value: "hunter2-very-secret"},
			{Name: "API_TOKEN_FILE_CONTENT", Value: "abc"},
			{Name: "SIGNING_KEY", Value: "k-123"},
			{Name: "LOG_URL", Value: "https://user:pa55word@logs.example.com/in"},
			{Name: "REDIS_HOST", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cache-cfg"}, Key: "host"}}},
			{Name: "REDIS_PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cache-creds"}, Key: "pass"}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/tls/client.crt", SubPath: "client.crt", ReadOnly: true}},
	}
	vols := map[string]corev1.Volume{"tls": {Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "client-tls"}}}}
	got := strings.Join(containerSettings(c, vols), "\n")
	for _, want := range []string{"flag -XX:MaxMetaspaceSize=128m", "flag -XX:+UseParallelGC", "flag --port=8080", "env PEER_POOL_SIZE=64",
		"env REDIS_HOST from configmap cache-cfg key host", "env REDIS_PASS from secret cache-creds key pass",
		"mount /etc/tls/client.crt from secret client-tls subPath client.crt (read-only)"} {
		if !strings.Contains(got, want) {
			t.Errorf("settings lack %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{"hunter2", "k-123", "pa55word", "=abc"} {
		if strings.Contains(got, secret) {
			t.Errorf("settings leak %q:\n%s", secret, got)
		}
	}
}

// A pod recorded without its status gets the QoS class the API server
// would have given it.
func TestQOSClass(t *testing.T) {
	res := func(req, lim map[corev1.ResourceName]string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		for k, v := range req {
			r.Requests[k] = resource.MustParse(v)
		}
		for k, v := range lim {
			r.Limits[k] = resource.MustParse(v)
		}
		return r
	}
	pod := func(rs ...corev1.ResourceRequirements) *corev1.Pod {
		p := &corev1.Pod{}
		for _, r := range rs {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: r})
		}
		return p
	}
	both := map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "512Mi"}
	tests := []struct {
		name string
		p    *corev1.Pod
		want string
	}{
		{"nothing set", pod(corev1.ResourceRequirements{}), "BestEffort"},
		{"limits only (requests default to them)", pod(res(nil, both)), "Guaranteed"},
		{"requests below limits", pod(res(map[corev1.ResourceName]string{corev1.ResourceCPU: "250m", corev1.ResourceMemory: "256Mi"}, both)), "Burstable"},
		{"one container without limits", pod(res(nil, both), corev1.ResourceRequirements{}), "Burstable"},
	}
	for _, tc := range tests {
		if got := qosClass(tc.p); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	p := pod(corev1.ResourceRequirements{})
	p.Status.QOSClass = corev1.PodQOSGuaranteed
	if got := qosClass(p); got != "Guaranteed" {
		t.Errorf("the API server's own class must win, got %s", got)
	}
}

// How a container runs (its security context, the pod's host network and
// DNS policy) is part of its settings; defaults that restrict nothing are
// not.
func TestRunSettings(t *testing.T) {
	yes, no := true, false
	uid := int64(10001)
	c := corev1.Container{SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no, RunAsUser: &uid,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	spec := &corev1.PodSpec{HostNetwork: true}
	got := strings.Join(runSettings(c, spec), "\n")
	for _, want := range []string{"securityContext readOnlyRootFilesystem: true", "securityContext allowPrivilegeEscalation: false", "securityContext runAsUser: 10001",
		"securityContext capabilities drop ALL", "pod hostNetwork: true, dnsPolicy: ClusterFirst"} {
		if !strings.Contains(got, want) {
			t.Errorf("run settings lack %q:\n%s", want, got)
		}
	}
	if plain := runSettings(corev1.Container{}, &corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst}); len(plain) != 0 {
		t.Errorf("a container with no restrictions has run settings %q", plain)
	}
	fsg := int64(2000)
	if got := runSettings(corev1.Container{}, &corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: &fsg, RunAsNonRoot: &yes}}); strings.Join(got, "|") != "pod securityContext runAsNonRoot: true|pod securityContext fsGroup: 2000" {
		t.Errorf("pod-level security context: %q", got)
	}
}
