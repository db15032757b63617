// Package facts holds the structured evidence that tool handlers extract and
// detectors reason over. A tool puts its facts into ToolResult.metadata (as
// JSON objects under well-known keys); detectors decode them back with
// Decode. The types are the contract between the tools service and the
// rules engine: add fields, never rename them.
package facts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Metadata keys under which tools publish facts in ToolResult.metadata.
const (
	KeyPods            = "pods"             // []Pod
	KeyEvents          = "events"           // []Event
	KeyNodes           = "nodes"            // []Node
	KeyDeployments     = "deployments"      // []Deployment
	KeyResources       = "resources"        // []Resource (describe_resource)
	KeyLogLines        = "log_lines"        // []LogLine (pod logs and log search hits)
	KeySeries          = "series"           // []Series (query_prometheus, database metrics)
	KeyDeploys         = "deploys"          // []Deploy
	KeyCommits         = "commits"          // []Commit
	KeyTopQueries      = "top_queries"      // []TopQuery
	KeyDBEvents        = "db_events"        // []DBEvent
	KeyMonitors        = "monitors"         // []Monitor
	KeyStatusIncidents = "status_incidents" // []StatusIncident (a provider's public status page)
	KeyQuery           = "query"            // string: the query a tool ran (PromQL, query_string, ...)
	KeyResolvedPod     = "resolved_pod"     // string: a wildcard resolved to this pod
)

// Condition is a Kubernetes-style condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name         string `json:"name"`
	Image        string `json:"image,omitempty"`
	Ready        bool   `json:"ready"`
	RestartCount int32  `json:"restart_count"`
	// State is running, waiting or terminated.
	State    string `json:"state,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode *int32 `json:"exit_code,omitempty"`
	// Last termination (lastState.terminated).
	LastReason     string     `json:"last_reason,omitempty"`
	LastExitCode   *int32     `json:"last_exit_code,omitempty"`
	LastFinishedAt *time.Time `json:"last_finished_at,omitempty"`
	LastMessage    string     `json:"last_message,omitempty"`
	// Resources as quantity strings ("512Mi", "500m").
	RequestsCPU    string `json:"requests_cpu,omitempty"`
	RequestsMemory string `json:"requests_memory,omitempty"`
	LimitsCPU      string `json:"limits_cpu,omitempty"`
	LimitsMemory   string `json:"limits_memory,omitempty"`
	// Probes, as short human text ("http-get :8080/healthz delay=0s period=10s timeout=1s failure=3").
	LivenessProbe  string `json:"liveness_probe,omitempty"`
	ReadinessProbe string `json:"readiness_probe,omitempty"`
	// Env var names and the ConfigMaps/Secrets the container reads (names only, never values).
	ConfigMaps []string `json:"config_maps,omitempty"`
	Secrets    []string `json:"secrets,omitempty"`
	// RuntimeLimits are the runtime's own memory caps set in the container's
	// command, args or literal env values (-Xmx1g, --max-old-space-size=512,
	// GOMEMLIMIT=900MiB): the flags only, never other values.
	RuntimeLimits []string `json:"runtime_limits,omitempty"`
	// DefaultedLimits are the resources ("cpu", "memory") whose limit the
	// container did not declare and the namespace's LimitRange set at
	// admission (the LimitRanger plugin's kubernetes.io/limit-ranger
	// annotation on the pod).
	DefaultedLimits []string `json:"defaulted_limits,omitempty"`
	// Settings are how the container is configured, one line each: the
	// flags of its command and args, its literal env vars (values of
	// sensitive names and secret-shaped values redacted), the sources of
	// its other env vars, and its mounts (with subPath and read-only).
	Settings []string `json:"settings,omitempty"`
}

// Pod is the status of one pod.
type Pod struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Node       string            `json:"node,omitempty"`
	Phase      string            `json:"phase,omitempty"`
	Ready      bool              `json:"ready"`
	Restarts   int32             `json:"restarts"`
	Reason     string            `json:"reason,omitempty"`
	Message    string            `json:"message,omitempty"`
	StartTime  *time.Time        `json:"start_time,omitempty"`
	CreatedAt  *time.Time        `json:"created_at,omitempty"`
	OwnerKind  string            `json:"owner_kind,omitempty"`
	OwnerName  string            `json:"owner_name,omitempty"`
	Workload   string            `json:"workload,omitempty"` // owning Deployment/StatefulSet/DaemonSet name when known
	Labels     map[string]string `json:"labels,omitempty"`
	Containers []Container       `json:"containers,omitempty"`
	Conditions []Condition       `json:"conditions,omitempty"`
	OOMKilled  bool              `json:"oom_killed"`
	// QOSClass is the pod's quality of service (Guaranteed, Burstable,
	// BestEffort): who the kubelet evicts first.
	QOSClass string `json:"qos_class,omitempty"`
}

// Event is a Kubernetes event.
type Event struct {
	Namespace    string     `json:"namespace,omitempty"`
	Type         string     `json:"type"` // Normal or Warning
	Reason       string     `json:"reason"`
	Message      string     `json:"message"`
	InvolvedKind string     `json:"involved_kind,omitempty"`
	InvolvedName string     `json:"involved_name,omitempty"`
	Count        int32      `json:"count,omitempty"`
	FirstSeen    *time.Time `json:"first_seen,omitempty"`
	LastSeen     *time.Time `json:"last_seen,omitempty"`
	Source       string     `json:"source,omitempty"`
}

// Node is the health of one node.
type Node struct {
	Name          string            `json:"name"`
	Ready         bool              `json:"ready"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	Conditions    []Condition       `json:"conditions,omitempty"`
	Taints        []string          `json:"taints,omitempty"`
	Capacity      map[string]string `json:"capacity,omitempty"`
	Allocatable   map[string]string `json:"allocatable,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	InstanceType  string            `json:"instance_type,omitempty"`
	// Software is what the node runs, from its status' node info: the OS
	// image, kernel, container runtime and kubelet versions.
	Software map[string]string `json:"software,omitempty"`
}

// Deployment is the rollout state of a workload.
type Deployment struct {
	Namespace           string      `json:"namespace"`
	Name                string      `json:"name"`
	Replicas            int32       `json:"replicas"`
	ReadyReplicas       int32       `json:"ready_replicas"`
	UpdatedReplicas     int32       `json:"updated_replicas"`
	AvailableReplicas   int32       `json:"available_replicas"`
	UnavailableReplicas int32       `json:"unavailable_replicas"`
	Revision            string      `json:"revision,omitempty"`
	Images              []string    `json:"images,omitempty"`
	Conditions          []Condition `json:"conditions,omitempty"`
	Generation          int64       `json:"generation,omitempty"`
	ObservedGeneration  int64       `json:"observed_generation,omitempty"`
	// RolloutHistory lists ReplicaSet revisions, oldest first, when known.
	RolloutHistory []Revision `json:"rollout_history,omitempty"`
	// Calls are the hosts the pod template's environment names (a
	// DATABASE_URL's host, a broker's host:port): the workload's call
	// edges, in-cluster Services by their name. Credentials in a URL are
	// never read.
	Calls []string `json:"calls,omitempty"`
	// Autoscalers are the HorizontalPodAutoscalers whose scaleTargetRef is
	// this Deployment, with their conditions (can it scale, can it read its
	// metrics) and replica bounds as signals.
	Autoscalers []Resource `json:"autoscalers,omitempty"`
	// Notes are the annotations people and controllers set on the
	// Deployment and its pod template that say how it is run ("key=value":
	// a downscaler's saved replicas, a canary note), bookkeeping left out.
	Notes []string `json:"notes,omitempty"`
	// Settings are how the pod template's containers are configured, as
	// Container.Settings writes them (flags, literal env vars redacted,
	// the sources of the others, mounts with subPath): what every new pod
	// of the Deployment runs with.
	Settings []string `json:"settings,omitempty"`
}

// Revision is one ReplicaSet revision of a Deployment.
type Revision struct {
	Revision  string     `json:"revision"`
	Name      string     `json:"name"`
	Images    []string   `json:"images,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	Replicas  int32      `json:"replicas"`
}

// Resource is the result of describing any Kubernetes object.
type Resource struct {
	Kind       string            `json:"kind"`
	Namespace  string            `json:"namespace,omitempty"`
	Name       string            `json:"name"`
	Conditions []Condition       `json:"conditions,omitempty"`
	Signals    []string          `json:"signals,omitempty"` // key findings, one line each
	Data       map[string]string `json:"data,omitempty"`    // ConfigMap data (never Secret values)
	// Spec is how the object is configured, as "path=value" lines: its
	// notable annotations and its flattened spec (secrets redacted,
	// capped). Settings, not findings: no detector reads them as a
	// problem; the report quotes them of the object it blames.
	Spec []string `json:"spec,omitempty"`
	// Owners are the object's ownerReferences ("Kind/name"); ManagedBy the
	// objects that manage it without owning it (a custom resource whose
	// spec names it), same form.
	Owners    []string `json:"owners,omitempty"`
	ManagedBy []string `json:"managed_by,omitempty"`
	Events    []Event  `json:"events,omitempty"`
	// CreatedAt is the object's creation time, when it matters (policies).
	CreatedAt *time.Time `json:"created_at,omitempty"`
	// CompletedAt is when a run (a Job) completed successfully.
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Listed: the object came from a listing of its namespace (every
	// ConfigMap there), not from a reference to it: it is read for its
	// settings, and nothing in the evidence named it.
	Listed bool `json:"listed,omitempty"`
}

// SignalTargetPortUnserved starts the Resource signal of a Service port
// whose target no selected pod declares: the describe tool writes it, the
// analysis reads what follows it.
const SignalTargetPortUnserved = "targetPort not served: "

// SignalLocalTraffic starts the Resource signal of a Service whose traffic
// policy is Local: a client (internal) or a node taking outside traffic
// (external) reaches only the endpoints on its own node. What follows is
// "<internal|external> nodes=<node>,<node>": the nodes of its ready
// endpoints.
const SignalLocalTraffic = "traffic policy Local: "

// LogLine is one log record, from pod logs or a log search.
type LogLine struct {
	Timestamp *time.Time `json:"timestamp,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	Service   string     `json:"service,omitempty"`
	Pod       string     `json:"pod,omitempty"`
	Container string     `json:"container,omitempty"`
	// Host is the machine that wrote the line when the log store records
	// it (a node's journal, a hardware monitor, a syslog relay).
	Host     string `json:"host,omitempty"`
	Level    string `json:"level,omitempty"` // ERROR, WARN, INFO, DEBUG, FATAL
	Message  string `json:"message"`
	Source   string `json:"source,omitempty"` // evidence source stem
	Previous bool   `json:"previous,omitempty"`
}

// Point is one sample.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Series is one time series with its statistics (query_prometheus and
// survey_metrics report them so that no reader recomputes them).
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Unit   string            `json:"unit,omitempty"`
	Count  int               `json:"count"`
	Latest float64           `json:"latest"`
	Peak   float64           `json:"peak"`
	PeakAt *time.Time        `json:"peak_at,omitempty"`
	Min    float64           `json:"min"`
	Mean   float64           `json:"mean"`
	Stddev float64           `json:"stddev"`
	// Baseline is the mean of the first part of the window (before the anomaly).
	Baseline float64 `json:"baseline"`
	// Anomalies are points more than 2 stddev above the mean.
	Anomalies []Point `json:"anomalies,omitempty"`
	// Downsampled is a short series for sparklines.
	Downsampled []Point `json:"downsampled,omitempty"`
	// Shape is step, creep, spike, drop, flat or noisy; OnsetAt when the change began.
	Shape   string     `json:"shape,omitempty"`
	OnsetAt *time.Time `json:"onset_at,omitempty"`
}

// Deploy is one rollout.
type Deploy struct {
	ID               string     `json:"id,omitempty"`
	Service          string     `json:"service"`
	Namespace        string     `json:"namespace,omitempty"`
	Revision         string     `json:"revision"`
	PreviousRevision string     `json:"previous_revision,omitempty"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	IsRollback       bool       `json:"is_rollback"`
	Image            string     `json:"image,omitempty"`
	Status           string     `json:"status,omitempty"`
	// Commit is the SHA the deploy built, when its record names one apart
	// from its revision (a version number).
	Commit string `json:"commit,omitempty"`
}

// CommitFile is one file a commit touched.
type CommitFile struct {
	Path       string `json:"path"`
	ChangeType string `json:"change_type,omitempty"`
	Additions  int    `json:"additions"`
	Deletions  int    `json:"deletions"`
}

// Change types of commit files, classified at ingest (a config change and a
// code change are different suspects).
const (
	ChangeDBMigration    = "db_migration"
	ChangeTimeoutRetry   = "timeout_retry"
	ChangeConfig         = "config"
	ChangeDependencyBump = "dependency_bump"
	ChangeFeature        = "feature"
	ChangeRefactor       = "refactor"
)

// Commit is one commit, summarised at push time.
type Commit struct {
	SHA         string       `json:"sha"`
	Service     string       `json:"service,omitempty"`
	Author      string       `json:"author,omitempty"`
	Timestamp   *time.Time   `json:"timestamp,omitempty"`
	Message     string       `json:"message,omitempty"`
	ChangeTypes []string     `json:"change_types,omitempty"`
	Files       []CommitFile `json:"files,omitempty"`
	Summary     string       `json:"summary,omitempty"`
	HasDiff     bool         `json:"has_diff"`
	Diff        string       `json:"diff,omitempty"` // only when fetched on demand
	// Removed is set when the commit was reverted by a rollback (the rollback removed it).
	Removed bool `json:"removed,omitempty"`
}

// WaitEvent is a database wait event with its load.
type WaitEvent struct {
	Name string  `json:"name"`
	Type string  `json:"type,omitempty"`
	Load float64 `json:"load"`
}

// TopQuery is one statement of the database's top load (Performance Insights, pg_stat_statements).
type TopQuery struct {
	Instance    string      `json:"instance,omitempty"`
	Statement   string      `json:"statement"`
	Load        float64     `json:"load"` // average active sessions
	CallsPerSec float64     `json:"calls_per_sec,omitempty"`
	WaitEvents  []WaitEvent `json:"wait_events,omitempty"`
}

// DBEvent is a managed-database event (failover, storage, maintenance).
type DBEvent struct {
	Time       *time.Time `json:"time,omitempty"`
	SourceID   string     `json:"source_id,omitempty"`
	SourceType string     `json:"source_type,omitempty"`
	Message    string     `json:"message"`
	Categories []string   `json:"categories,omitempty"`
}

// Monitor is an alert rule or monitor and its state.
type Monitor struct {
	Name    string   `json:"name"`
	Type    string   `json:"type,omitempty"`
	Query   string   `json:"query,omitempty"`
	Message string   `json:"message,omitempty"`
	State   string   `json:"state,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	// FromAlert: the rule as the alert payload itself describes it (no
	// rules API behind it); its State is the alert's at delivery, not the
	// rule's now.
	FromAlert bool `json:"from_alert,omitempty"`
}

// StatusIncident is one incident (or scheduled maintenance) of an outside
// provider's public status page (the Atlassian Statuspage API's
// incidents.json / summary.json). Every text field is the provider's own
// words: untrusted data.
type StatusIncident struct {
	Page    string `json:"page"`               // the page's name ("PayNorth Status")
	PageURL string `json:"page_url,omitempty"` // the page's address
	Name    string `json:"name"`
	// Status is investigating, identified, monitoring, resolved or
	// postmortem (scheduled, in_progress, verifying, completed for a
	// maintenance).
	Status string `json:"status,omitempty"`
	// Impact is none, minor, major, critical or maintenance.
	Impact      string     `json:"impact,omitempty"`
	Maintenance bool       `json:"maintenance,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
	UpdatedAt   *time.Time `json:"updated_at,omitempty"`
	ResolvedAt  *time.Time `json:"resolved_at,omitempty"`
	// Components are the affected components, "name (status)" when the
	// page gives their status.
	Components []string `json:"components,omitempty"`
	// LatestUpdate is the body of the newest incident update.
	LatestUpdate   string     `json:"latest_update,omitempty"`
	LatestUpdateAt *time.Time `json:"latest_update_at,omitempty"`
}

// Open reports whether the incident had not ended (resolved, postmortem,
// completed) when the page was read.
func (s StatusIncident) Open() bool {
	switch s.Status {
	case "resolved", "postmortem", "completed":
		return false
	}
	return s.ResolvedAt == nil
}

// Put stores v under key in a metadata map (as a JSON round trip would:
// generic), creating it if nil.
func Put(md map[string]any, key string, v any) (map[string]any, error) {
	if md == nil {
		md = map[string]any{}
	}
	g, err := generic(reflect.ValueOf(v))
	if err != nil {
		return md, fmt.Errorf("facts: encode %s: %w", key, err)
	}
	md[key] = g
	return md, nil
}

// ToStruct converts a metadata map into a protobuf Struct.
func ToStruct(md map[string]any) (*structpb.Struct, error) {
	if md == nil {
		return &structpb.Struct{}, nil
	}
	s, err := structpb.NewStruct(md)
	if err != nil {
		return nil, fmt.Errorf("facts: metadata to struct: %w", err)
	}
	return s, nil
}

// Decode reads the facts stored under key in a metadata Struct into out
// (a pointer to a slice or value of the type the key documents). A missing
// key leaves out untouched and returns false.
func Decode(md *structpb.Struct, key string, out any) (bool, error) {
	if md == nil {
		return false, nil
	}
	v, ok := md.GetFields()[key]
	if !ok {
		return false, nil
	}
	// The value's JSON is written straight from it (appendJSON), not
	// through AsInterface's maps and encoding/json.
	bp := jsonBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledJSON {
			jsonBufs.Put(bp)
		}
	}()
	b := appendJSON((*bp)[:0], v)
	*bp = b
	if err := json.Unmarshal(b, out); err != nil {
		return false, fmt.Errorf("facts: decode %s: %w", key, err)
	}
	return true, nil
}

// jsonBufs are Decode's buffers; one grown past maxPooledJSON is left to the
// collector.
var jsonBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledJSON = 1 << 20

// KeyObjectChanges: []ObjectChange (get_recent_changes).
const KeyObjectChanges = "object_changes"

// ObjectChange is one creation or edit of a Kubernetes object, read from
// the object's own metadata: its creationTimestamp, the time, manager and
// fields of its managedFields entries, and change annotations
// (kubernetes.io/change-cause and the like). Status updates by controllers
// are not changes.
type ObjectChange struct {
	Kind      string     `json:"kind"`
	Namespace string     `json:"namespace,omitempty"`
	Name      string     `json:"name"`
	At        *time.Time `json:"at,omitempty"`
	// Action is "created" or "edited".
	Action  string `json:"action"`
	Manager string `json:"manager,omitempty"`
	// Fields are the leaf fields the edit owns (dotted, "spec.minAvailable").
	Fields []string `json:"fields,omitempty"`
	// Note is the text of a change annotation, when the object has one.
	Note string `json:"note,omitempty"`
	// Refs are the names the object's spec refers to (a scale target, a
	// queue, a selector's values, a priority class): the edges by which
	// a change reaches the entities it affects.
	Refs []string `json:"refs,omitempty"`
}
