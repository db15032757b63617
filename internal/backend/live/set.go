package live

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Status is one integration's health.
type Status struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// Build assembles a backend.Set from the config. An integration whose
// client cannot be built is left out with its reason; health is checked
// separately by Check, so a server that is down at start-up does not stop
// rcamesh from serving.
func Build(cfg *integrations.Config, logger *slog.Logger) (*backend.Set, []Status) {
	set := &backend.Set{Name: "live", Sources: map[string]string{}}
	var st []Status
	if cfg == nil {
		return set, nil
	}
	if cfg.Kubernetes != nil {
		cs, logs, err := Kube(cfg.Kubernetes)
		if err != nil {
			st = append(st, Status{Name: "kubernetes", Reason: err.Error()})
		} else {
			set.Kube, set.PodLogs = cs, logs
			if dc, kinds, derr := Dynamic(cfg.Kubernetes); derr == nil {
				set.Dynamic, set.Kinds = dc, kinds
			} else {
				logger.Warn("kubernetes: custom resources unavailable", "err", derr)
			}
			for _, a := range []string{backend.AreaPods, backend.AreaEvents, backend.AreaDeployments, backend.AreaNodes, backend.AreaResources, backend.AreaPodLogs} {
				set.Sources[a] = "kubernetes"
			}
			set.Changes = &Changes{Kube: cs}
			set.Sources[backend.AreaDeploys] = "kubernetes"
			st = append(st, Status{Name: "kubernetes", Available: true})
		}
	}
	if cfg.Prometheus != nil {
		m, _, err := Prometheus(cfg.Prometheus)
		if err != nil {
			st = append(st, Status{Name: "prometheus", Reason: err.Error()})
		} else {
			set.Metrics = m
			set.Sources[backend.AreaMetrics] = "prometheus"
			st = append(st, Status{Name: "prometheus", Available: true})
		}
	}
	if cfg.Logs != nil {
		l, err := Logs(cfg.Logs)
		if err != nil {
			st = append(st, Status{Name: "logs", Reason: err.Error()})
		} else {
			set.Logs = l
			set.Sources[backend.AreaLogs] = cfg.Logs.Type
			st = append(st, Status{Name: "logs", Available: true})
		}
	}
	if cfg.Git != nil && len(cfg.Git.Repositories) > 0 {
		g, err := OpenGit(cfg.Git)
		if err != nil {
			st = append(st, Status{Name: "git", Reason: err.Error()})
		} else {
			ch, _ := set.Changes.(*Changes)
			if ch == nil {
				ch = &Changes{}
				set.Changes = ch
			}
			ch.Git = g
			set.Sources[backend.AreaCommits] = "git"
			st = append(st, Status{Name: "git", Available: true})
		}
	}
	if cfg.StatusPage != nil && len(cfg.StatusPage.URLs) > 0 {
		set.Status = NewStatusPages(cfg.StatusPage)
		set.Sources[backend.AreaStatusPage] = "statuspage"
		st = append(st, Status{Name: "statuspage", Available: true})
	}
	for _, s := range st {
		if !s.Available {
			logger.Warn("integration unavailable", "integration", s.Name, "reason", s.Reason)
		}
	}
	set.Health = func(ctx context.Context) map[string]error {
		out := map[string]error{}
		for _, s := range Check(ctx, set) {
			name := s.Name
			if name == "logs" {
				name = set.Sources[backend.AreaLogs]
			}
			if s.Available {
				out[name] = nil
			} else {
				out[name] = fmt.Errorf("%s", s.Reason)
			}
		}
		return out
	}
	return set, st
}

// Check runs every integration's health check.
func Check(ctx context.Context, set *backend.Set) []Status {
	var out []Status
	if set.Kube != nil {
		out = append(out, status("kubernetes", CheckKube(ctx, set.Kube)))
	}
	if set.Metrics != nil {
		_, _, err := set.Metrics.Query(ctx, "vector(1)", time.Now())
		out = append(out, status("prometheus", err))
	}
	if set.Logs != nil {
		out = append(out, status("logs", CheckLogs(ctx, set.Logs)))
	}
	if sp, ok := set.Status.(*StatusPages); ok {
		out = append(out, status("statuspage", CheckStatusPages(ctx, sp)))
	}
	return out
}

func status(name string, err error) Status {
	if err != nil {
		return Status{Name: name, Reason: err.Error()}
	}
	return Status{Name: name, Available: true}
}

// Changes combines the deploy timeline of the cluster (ReplicaSet revision
// history) with commit history from git.
type Changes struct {
	Kube kubernetes.Interface
	Git  *Git
}

// Deploys lists rollouts: each ReplicaSet revision of a Deployment is one
// deploy, started when the ReplicaSet was created.
func (c *Changes) Deploys(ctx context.Context, q backend.ChangeQuery) ([]facts.Deploy, error) {
	if c.Kube == nil {
		return nil, nil
	}
	rss, err := c.Kube.AppsV1().ReplicaSets(q.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list replicasets: %w", err)
	}
	byDeploy := map[string][]appsv1.ReplicaSet{}
	for _, rs := range rss.Items {
		owner := ""
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" {
				owner = o.Name
			}
		}
		if owner == "" || (q.Service != "" && owner != q.Service) {
			continue
		}
		byDeploy[rs.Namespace+"/"+owner] = append(byDeploy[rs.Namespace+"/"+owner], rs)
	}
	var out []facts.Deploy
	for key, list := range byDeploy {
		sort.Slice(list, func(i, j int) bool { return revision(list[i]) < revision(list[j]) })
		ns, name, _ := strings.Cut(key, "/")
		for i, rs := range list {
			t := rs.CreationTimestamp.Time.UTC()
			if (!q.Start.IsZero() && t.Before(q.Start)) || (!q.End.IsZero() && t.After(q.End)) {
				continue
			}
			d := facts.Deploy{ID: rs.Name, Service: name, Namespace: ns, StartedAt: &t,
				Revision: fmt.Sprint(revision(rs)), Image: firstImage(rs)}
			if i > 0 {
				d.PreviousRevision = fmt.Sprint(revision(list[i-1]))
				// A rollback re-activates an older template: Kubernetes
				// bumps its revision, and it reuses an older image.
				for _, prev := range list[:i-1] {
					if firstImage(prev) == d.Image && d.Image != "" {
						d.IsRollback = true
					}
				}
			}
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(*out[j].StartedAt) })
	return out, nil
}

func revision(rs appsv1.ReplicaSet) int {
	var n int
	fmt.Sscan(rs.Annotations["deployment.kubernetes.io/revision"], &n)
	return n
}

func firstImage(rs appsv1.ReplicaSet) string {
	if cs := rs.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// Commits implements backend.ChangeHistory.
func (c *Changes) Commits(ctx context.Context, q backend.ChangeQuery) ([]facts.Commit, error) {
	if c.Git == nil {
		return nil, nil
	}
	return c.Git.Commits(ctx, q)
}

// CommitDiff implements backend.ChangeHistory.
func (c *Changes) CommitDiff(ctx context.Context, sha string) (string, error) {
	if c.Git == nil {
		return "", fmt.Errorf("git: %w", backend.ErrNotConfigured)
	}
	return c.Git.CommitDiff(ctx, sha)
}
