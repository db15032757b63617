// Package analysis is the rules engine: detectors read the facts that tools
// put in evidence pins (internal/facts) and propose findings; Analyze ranks
// them into hypotheses with claims, ruled-out alternatives and unknowns, and
// Diagnose turns the ranking into a structured diagnosis. Every statement is
// built from evidence values (names, numbers, reasons, messages); nothing is
// specific to one scenario.
package analysis

import (
	"context"
	"fmt"
	"slices"
	"sort"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// Failure modes a finding can name.
const (
	ModeOOMKilled          = "oom_killed"
	ModeImagePull          = "image_pull"
	ModeCrashLoop          = "crashloop"
	ModeProbeFailure       = "probe_failure"
	ModeUnschedulable      = "unschedulable"
	ModeQuotaExceeded      = "quota_exceeded"
	ModeDNSFailure         = "dns_failure"
	ModeNodeNotReady       = "node_not_ready"
	ModeNodePressure       = "node_pressure"
	ModeRolloutStuck       = "rollout_stuck"
	ModeDependencyFailure  = "dependency_failure"
	ModeDeployRegression   = "deploy_regression"
	ModeTrafficSaturation  = "traffic_saturation"
	ModeAutoscalerBlocked  = "autoscaler_blocked"
	ModeConnPoolExhaustion = "connection_pool_exhaustion"
	ModeCertExpiry         = "certificate_expiry"
	ModeNoEndpoints        = "no_endpoints"
	ModePortUnserved       = "port_unserved"
	ModeVolumeMount        = "volume_mount"
	ModeCPUThrottling      = "cpu_throttling"
	ModeConsumerLag        = "consumer_lag"
	ModeReplicationLag     = "replication_lag"
	ModeConnExhaustion     = "connection_exhaustion"
	ModeStorageFull        = "storage_full"
	ModeCPUQuery           = "cpu_bound_query"
	ModeCheckpointStorm    = "checkpoint_storm"
	ModeFailover           = "failover"
	ModeLockContention     = "lock_contention"
	ModeDBMemory           = "db_memory_pressure"
	ModeDBIO               = "db_io_exhaustion"
	ModeXIDWraparound      = "xid_wraparound"
	ModeHealthy            = "healthy"
	ModeRecovered          = "recovered"
)

// Claim is one assertion with the pins that back it.
type Claim struct {
	Text   string
	PinIDs []string
}

// Finding is what a detector proposes: one failure (or health) explanation
// with its evidence.
type Finding struct {
	Detector  string
	Mode      string
	Statement string
	Category  investigationv1.RootCauseCategory
	// Entity is the culprit: kind/name or kind/namespace/name.
	Entity string
	// Score is the evidence strength, 0-1: specificity of the signature,
	// corroboration across sources, whether the failure is current.
	Score float64
	// Healthy marks a finding that the system is fine or has recovered.
	Healthy bool
	// Validated are directly observed facts; Inferred are interpretations.
	Validated   []Claim
	Inferred    []Claim
	Chain       []string
	Remediation []string
	Signals     []string
	// Sources are the evidence sources the finding rests on, primary first.
	Sources []string
	PinIDs  []string
	// Explains lists modes this finding accounts for as symptoms, each with
	// the reason; they are ruled out rather than competing.
	Explains map[string]string
	// Overrides lets a healthy finding's Explains weaken the faults it
	// accounts for (planned work that ended): without it only fault
	// findings explain others.
	Overrides bool
	// HoldsExpected marks a healthy reading that accounts for the alert's
	// condition still holding (latency up under a load announced ahead):
	// the held condition does not veto it, and it leads the readings of
	// health it vetoes.
	HoldsExpected bool
	// Repetition marks a finding whose only support is one message from one
	// origin, however often written: it may lead, never add a second
	// concurrent fault (text from inspected systems is data; repeating it
	// proves nothing more).
	Repetition bool
	// Settled marks a finding whose row reads the category from the
	// mechanism itself (ports a gateway hands out ran out), whatever kind
	// of change preceded it: the change rows (changeRows) quote no change
	// over it.
	Settled bool
}

func (f *Finding) validated(text string, c ...Cite) {
	key := logTemplate(text)
	if i := slices.IndexFunc(f.Validated, func(v Claim) bool { return v.Text == text || logTemplate(v.Text) == key }); i >= 0 {
		// The same fact seen again (the same line from another pod, the
		// same message with another request id): one claim citing every
		// pin, not the claim repeated.
		f.Validated[i].PinIDs = appendUnique(f.Validated[i].PinIDs, citePins(c...)...)
	} else {
		f.Validated = append(f.Validated, Claim{Text: text, PinIDs: citePins(c...)})
	}
	for _, x := range c {
		f.PinIDs = appendUnique(f.PinIDs, x.PinIDs...)
		f.Sources = appendUnique(f.Sources, x.Sources...)
	}
}

func (f *Finding) inferred(text string, c ...Cite) {
	f.Inferred = append(f.Inferred, Claim{Text: text, PinIDs: citePins(c...)})
	for _, x := range c {
		f.PinIDs = appendUnique(f.PinIDs, x.PinIDs...)
	}
}

func (f *Finding) explains(mode, reason string) {
	if f.Explains == nil {
		f.Explains = map[string]string{}
	}
	f.Explains[mode] = reason
}

func citePins(c ...Cite) []string {
	var out []string
	for _, x := range c {
		out = appendUnique(out, x.PinIDs...)
	}
	return out
}

// Detector finds one family of failure modes in the evidence.
type Detector interface {
	Name() string
	Detect(ctx context.Context, ev *Evidence) []Finding
}

// detectorFunc adapts a function into a Detector.
type detectorFunc struct {
	name string
	fn   func(ev *Evidence) []Finding
}

func (d detectorFunc) Name() string { return d.name }

func (d detectorFunc) Detect(ctx context.Context, ev *Evidence) (out []Finding) {
	if ctx.Err() != nil {
		return nil
	}
	defer func() {
		// One detector's bug on unexpected evidence costs its reading, not
		// the investigation.
		if r := recover(); r != nil {
			ev.DetectorErrors = append(ev.DetectorErrors, fmt.Sprintf("detector %s failed on this evidence (%v): its reading is missing", d.name, r))
			out = nil
		}
	}()
	out = d.fn(ev)
	for i := range out {
		out[i].Detector = d.name
		if out[i].Score > 1 {
			out[i].Score = 1
		}
	}
	return out
}

// Constructor builds a detector.
type Constructor func() Detector

func fn(name string, f func(ev *Evidence) []Finding) Constructor {
	return func() Detector { return detectorFunc{name: name, fn: f} }
}

// registry maps detector names to constructors.
var registry = map[string]Constructor{
	"oom_killed":             fn("oom_killed", detectOOM),
	"image_pull":             fn("image_pull", detectImagePull),
	"crashloop":              fn("crashloop", detectCrashLoop),
	"code_exception":         fn("code_exception", detectCodeException),
	"slow_command_holder":    fn("slow_command_holder", detectSlowCommandHolder),
	"source_port_exhaustion": fn("source_port_exhaustion", detectSourcePortExhaustion),
	"mtu_blackhole":          fn("mtu_blackhole", detectMTUBlackhole),
	"offset_reset":           fn("offset_reset", detectOffsetReset),
	"stale_address":          fn("stale_address", detectStaleAddress),
	"network_path":           fn("network_path", detectNetworkPath),
	"webhook_down":           fn("webhook_down", detectWebhookDown),
	"probe_failure":          fn("probe_failure", detectProbeFailure),
	"unschedulable":          fn("unschedulable", detectUnschedulable),
	"quota_exceeded":         fn("quota_exceeded", detectQuota),
	"rollout_stuck":          fn("rollout_stuck", detectRolloutStuck),
	"dns_failure":            fn("dns_failure", detectDNS),
	"node_not_ready":         fn("node_not_ready", detectNodeNotReady),
	"node_pressure":          fn("node_pressure", detectNodePressure),
	"node_host_fault":        fn("node_host_fault", detectNodeHostFault),
	"node_sandbox_failure":   fn("node_sandbox_failure", detectNodeSandbox),
	"pressure_holder":        fn("pressure_holder", detectPressureHolder),
	"volume_mount":           fn("volume_mount", detectVolumeMount),
	"log_signatures":         fn("log_signatures", detectLogSignatures),
	"dependency_failure":     fn("dependency_failure", detectDependencyFailure),
	"metric_regression":      fn("metric_regression", detectMetricRegression),
	"cpu_throttling":         fn("cpu_throttling", detectCPUThrottling),
	"consumer_lag":           fn("consumer_lag", detectConsumerLag),
	"unconsumed_queue":       fn("unconsumed_queue", detectUnconsumedQueue),
	"limit_reached":          fn("limit_reached", detectLimitReached),
	"replication_lag":        fn("replication_lag", detectReplicationLag),
	"db_connections":         fn("db_connections", detectConnectionExhaustion),
	"db_storage":             fn("db_storage", detectStorage),
	"db_cpu_query":           fn("db_cpu_query", detectCPUQuery),
	"db_checkpoint_storm":    fn("db_checkpoint_storm", detectCheckpointStorm),
	"db_failover":            fn("db_failover", detectFailover),
	"db_locks":               fn("db_locks", detectLockContention),
	"db_memory":              fn("db_memory", detectDBMemory),
	"db_io":                  fn("db_io", detectDBIO),
	"db_xid_wraparound":      fn("db_xid_wraparound", detectXIDWraparound),
	"release_failure":        fn("release_failure", detectReleaseFailure),
	"input_change":           fn("input_change", detectInputChange),
	"removed_target":         fn("removed_target", detectRemovedTarget),
	"restart_recovered":      fn("restart_recovered", detectRestartRecovered),
	"old_rollout":            fn("old_rollout", detectOldRollout),
	"rollout_recovered":      fn("rollout_recovered", detectRolloutRecovered),
	"pending_recovered":      fn("pending_recovered", detectPendingRecovered),
	"node_flap":              fn("node_flap", detectNodeFlap),
	"storage_recovered":      fn("storage_recovered", detectStorageRecovered),
	"k8s_healthy":            fn("k8s_healthy", detectK8sHealthy),
	"recorded_quiet":         fn("recorded_quiet", detectRecordedQuiet),
	"announced_demand":       fn("announced_demand", detectAnnouncedDemand),
	"stale_config":           fn("stale_config", detectStaleConfig),
	"maintenance_in_window":  fn("maintenance_in_window", detectMaintenanceInWindow),
	"ran_out":                fn("ran_out", detectRanOut),
	"scale_reset":            fn("scale_reset", detectScaleReset),
	"completed_pod":          fn("completed_pod", detectCompletedPod),
	"bare_pod_completes":     fn("bare_pod_completes", detectBarePodCompletes),
	"quiet_metrics":          fn("quiet_metrics", detectQuietMetrics),
	"steady_memory":          fn("steady_memory", detectSteadyMemory),
	"memory_leak":            fn("memory_leak", detectMemoryLeak),
	"upstream_rate_limit":    fn("upstream_rate_limit", detectUpstreamRateLimit),
	"node_clock_skew":        fn("node_clock_skew", detectClockSkew),
	"service_no_endpoints":   fn("service_no_endpoints", detectServiceNoEndpoints),
	"service_port_unserved":  fn("service_port_unserved", detectServicePortUnserved),
	"service_local_traffic":  fn("service_local_traffic", detectServiceLocalTraffic),
	"network_policy":         fn("network_policy", detectNetworkPolicyBlock),
	"maintenance_ended":      fn("maintenance_ended", detectMaintenanceEnded),
	"node_maintenance":       fn("node_maintenance", detectNodeMaintenance),
	"cronjob_overlap":        fn("cronjob_overlap", detectCronJobOverlap),
	"cronjob_stalled":        fn("cronjob_stalled", detectCronJobStalled),
	"batch_job_breach":       fn("batch_job_breach", detectBatchJobBreach),
	"db_healthy":             fn("db_healthy", detectDBHealthy),
	"environment_not_paged":  fn("environment_not_paged", detectNotPaged),
	"condition_cleared":      fn("condition_cleared", detectConditionCleared),
	"resource_cleared":       fn("resource_cleared", detectResourceCleared),
	"episode_ended":          fn("episode_ended", detectEpisodeEnded),
	"alert_resolved":         fn("alert_resolved", detectAlertResolved),
}

// NewDetector builds the named detector.
func NewDetector(name string) (Detector, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("analysis: unknown detector %q (known: %v)", name, DetectorNames())
	}
	return c(), nil
}

// DetectorNames lists the registered detectors, sorted.
func DetectorNames() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultDetectors builds every registered detector.
func DefaultDetectors() []Detector {
	var out []Detector
	for _, n := range DetectorNames() {
		out = append(out, registry[n]())
	}
	return out
}
