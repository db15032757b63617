// Package live builds a backend.Set from the integrations config: client-go
// against a real cluster, the Prometheus HTTP API client, Elasticsearch /
// OpenSearch or Loki for log search, and go-git over local clones. Every
// client only reads; the Kubernetes transport refuses any method but GET.
package live

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// RESTConfig resolves the cluster's rest.Config from kubeconfig or
// in-cluster credentials, with a read-only transport.
func RESTConfig(k *integrations.Kubernetes) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if k.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if k.Kubeconfig != "" {
			rules.ExplicitPath = k.Kubeconfig
		}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: k.Context}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: load credentials: %w", err)
	}
	cfg.Timeout = k.Timeout
	cfg.UserAgent = "rcamesh (read-only)"
	cfg.Wrap(backend.ReadOnlyTransport)
	return cfg, nil
}

// Kube returns a clientset and a pod log reader for the cluster.
func Kube(k *integrations.Kubernetes) (kubernetes.Interface, backend.PodLogReader, error) {
	cfg, err := RESTConfig(k)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: client: %w", err)
	}
	return cs, PodLogs{Client: cs, MaxBytes: 4 << 20}, nil
}

// PodLogs reads container logs through the API server.
type PodLogs struct {
	Client   kubernetes.Interface
	MaxBytes int64
}

// PodLogs implements backend.PodLogReader.
func (p PodLogs) PodLogs(ctx context.Context, namespace, pod string, opts backend.PodLogOptions) (backend.PodLog, error) {
	lo := &corev1.PodLogOptions{Container: opts.Container, Previous: opts.Previous, Timestamps: true}
	if opts.TailLines > 0 {
		lo.TailLines = &opts.TailLines
	}
	if !opts.Since.IsZero() {
		t := metav1.NewTime(opts.Since)
		lo.SinceTime = &t
	}
	if p.MaxBytes > 0 {
		lo.LimitBytes = &p.MaxBytes
	}
	rc, err := p.Client.CoreV1().Pods(namespace).GetLogs(pod, lo).Stream(ctx)
	if err != nil {
		return backend.PodLog{}, fmt.Errorf("kubernetes: logs of %s/%s: %w", namespace, pod, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return backend.PodLog{}, fmt.Errorf("kubernetes: read logs of %s/%s: %w", namespace, pod, err)
	}
	return backend.PodLog{Text: ensureNewline(string(b)), Source: "kubernetes"}, nil
}

// ensureNewline ends the text with one newline. The kubelet's RFC3339
// prefix on each line is kept: it is the authoritative time of the line.
func ensureNewline(s string) string {
	if s == "" {
		return s
	}
	return strings.TrimRight(s, "\n") + "\n"
}

// CheckKube verifies the API server answers and the credentials can list pods.
func CheckKube(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("kubernetes: API server unreachable: %w", err)
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("kubernetes: cannot list pods (check the ClusterRole): %w", err)
	}
	return nil
}
