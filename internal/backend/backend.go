// Package backend defines the interfaces through which tool handlers reach
// the systems they inspect. Each interface mirrors the real client of its
// ecosystem (client-go's kubernetes.Interface, the Prometheus HTTP API
// client), so the fixture backend (a recorded scenario) and the live backend
// (real servers) drop in without touching a handler.
//
// Every interface here is read-only: no method mutates the inspected system.
package backend

import (
	"context"
	"errors"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// ErrNotConfigured is returned (wrapped) when a tool needs an integration the
// Set does not have.
var ErrNotConfigured = errors.New("integration not configured")

// Areas name the kinds of evidence a backend serves. A Set maps each area to
// the evidence source (file stem for the fixture, integration name for live
// backends) that answers it, so tools can report which sources returned data.
const (
	AreaPods        = "pods"
	AreaEvents      = "events"
	AreaDeployments = "deployments"
	AreaNodes       = "nodes"
	AreaResources   = "resources" // other Kubernetes objects (services, configmaps, ...)
	AreaPodLogs     = "pod_logs"
	AreaLogs        = "logs"
	AreaMetrics     = "prometheus"
	AreaDeploys     = "deploys"
	AreaCommits     = "commits"
	AreaDBMetrics   = "db_metrics"
	AreaTopQueries  = "top_queries"
	AreaDBEvents    = "db_events"
	AreaMonitors    = "monitors"
	AreaStatusPage  = "statuspage" // outside providers' public status pages
)

// PodLogOptions select what PodLogs returns (kubectl logs semantics).
type PodLogOptions struct {
	Container string
	Previous  bool
	TailLines int64     // 0: all
	Since     time.Time // zero: no lower bound
}

// PodLog is raw container output as `kubectl logs` prints it.
type PodLog struct {
	Text   string
	Source string // evidence source that served it (pod_logs, eks_pod_logs, logs, kubernetes)
}

// PodLogReader reads container logs. The live implementation wraps
// kubernetes.Interface.CoreV1().Pods(ns).GetLogs; the fixture reads recorded
// files. A pod with no logs returns an empty PodLog and no error.
type PodLogReader interface {
	PodLogs(ctx context.Context, namespace, pod string, opts PodLogOptions) (PodLog, error)
}

// Metrics is the subset of promv1.API the tools use, without the
// informational notices newer servers attach; the live backend adapts the
// real Prometheus HTTP client to it (internal/backend/live).
type Metrics interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, error)
	QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, error)
	Series(ctx context.Context, matches []string, startTime, endTime time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, error)
	LabelValues(ctx context.Context, label string, matches []string, startTime, endTime time.Time, opts ...promv1.Option) (model.LabelValues, promv1.Warnings, error)
}

// LogQuery is a log search (Elasticsearch/OpenSearch query_string, Loki
// LogQL line filter, Datadog logs). Empty fields do not filter.
type LogQuery struct {
	Query     string // free text / query_string; matched case-insensitively by the fixture
	Namespace string
	Service   string
	Pod       string
	Levels    []string // ERROR, WARN, ...
	Start     time.Time
	End       time.Time
	Limit     int
}

// LogSearcher searches a log store. Hits are newest last.
type LogSearcher interface {
	SearchLogs(ctx context.Context, q LogQuery) ([]facts.LogLine, error)
}

// ChangeQuery selects deploys and commits.
type ChangeQuery struct {
	Service   string
	Namespace string
	Start     time.Time
	End       time.Time
}

// ChangeHistory is deploy and commit history (git + the deploy log).
type ChangeHistory interface {
	Deploys(ctx context.Context, q ChangeQuery) ([]facts.Deploy, error)
	// Commits returns summaries (files classified by change type), no diffs.
	Commits(ctx context.Context, q ChangeQuery) ([]facts.Commit, error)
	// CommitDiff fetches one commit's unified diff on demand.
	CommitDiff(ctx context.Context, sha string) (string, error)
}

// DBQuery selects managed-database telemetry.
type DBQuery struct {
	Instance string // empty: every instance the backend knows
	Metric   string // empty: every metric
	Start    time.Time
	End      time.Time
}

// DatabaseTelemetry is managed-database telemetry (CloudWatch metrics,
// Performance Insights, RDS events).
type DatabaseTelemetry interface {
	DBMetrics(ctx context.Context, q DBQuery) ([]facts.Series, error)
	TopQueries(ctx context.Context, q DBQuery) ([]facts.TopQuery, error)
	DBEvents(ctx context.Context, q DBQuery) ([]facts.DBEvent, error)
}

// MonitorSource lists alerting rules / monitors.
type MonitorSource interface {
	Monitors(ctx context.Context) ([]facts.Monitor, error)
}

// StatusPages reads outside providers' public status pages (Atlassian
// Statuspage: /api/v2/incidents.json and summary.json).
type StatusPages interface {
	// StatusIncidents returns the incidents and scheduled maintenances of
	// every page whose name or address contains provider
	// (case-insensitive; "" for every page), newest first.
	StatusIncidents(ctx context.Context, provider string) ([]facts.StatusIncident, error)
}

// KindResolution is where objects of one kind live.
type KindResolution struct {
	GVR        schema.GroupVersionResource
	Kind       string // canonical Kind (ExternalSecret)
	Namespaced bool
}

// KindMapper maps kinds to resources for the dynamic client. The live
// implementation uses API discovery; the fixture knows the kinds it loaded.
type KindMapper interface {
	// Resolve maps a kind, case-insensitively (singular, plural or
	// group-qualified "certificate.cert-manager.io"), to its resource; the
	// error wraps ErrUnknownKind when the cluster serves no such kind.
	Resolve(ctx context.Context, kind string) (KindResolution, error)
	// Custom lists the listable kinds outside the built-in API groups.
	Custom(ctx context.Context) ([]KindResolution, error)
}

// ErrUnknownKind: the cluster serves no resource of that kind.
var ErrUnknownKind = errors.New("unknown kind")

// Set is everything one tools service can reach. Nil fields are integrations
// that are not configured here.
type Set struct {
	// Name is "fixture" or "live".
	Name string
	Kube kubernetes.Interface
	// Dynamic reads objects of any kind (custom resources: ExternalSecret,
	// Certificate, Rollout, ...); Kinds maps a kind to its resource. Both
	// are nil when the cluster is not configured.
	Dynamic  dynamic.Interface
	Kinds    KindMapper
	PodLogs  PodLogReader
	Metrics  Metrics
	Logs     LogSearcher
	Changes  ChangeHistory
	Database DatabaseTelemetry
	Monitors MonitorSource
	Status   StatusPages
	// Sources maps an Area to the evidence source that answers it; an area
	// missing here has no data source at all.
	Sources map[string]string
	// Health, when set, checks each live integration on demand; it maps an
	// evidence source name (as in Sources) to its error, nil when healthy.
	Health func(ctx context.Context) map[string]error
	// Now is the reference time for relative windows ("last 30 minutes");
	// fixtures set it to the incident time, live backends leave it nil.
	Now func() time.Time
}

// Source returns the evidence source that answers area, or "".
func (s *Set) Source(area string) string {
	if s == nil {
		return ""
	}
	return s.Sources[area]
}

// Clock returns the backend's notion of now.
func (s *Set) Clock() time.Time {
	if s != nil && s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
