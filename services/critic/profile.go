package critic

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unique"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
	"github.com/rcamesh/rcamesh/internal/target"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// Signal kinds. Root kinds name a failure that can cause others; symptom kinds
// name the effects an incident shows.
const (
	kindOOM        = "oom"
	kindConfig     = "config"
	kindImage      = "image"
	kindNode       = "node"
	kindScheduling = "scheduling"
	kindDisk       = "disk"
	kindStorage    = "storage"
	kindDB         = "database"
	kindCert       = "certificate"
	kindDNS        = "dns"
	kindSaturation = "saturation"
	kindQuota      = "quota"
	kindCode       = "code_defect"
	kindCrash      = "crash"
	kindChange     = "change"
	kindCommit     = "commit"

	kindHTTP5xx    = "http_5xx"
	kindLatency    = "latency"
	kindTimeout    = "timeout"
	kindConnection = "connection"
	kindProbe      = "probe"
	kindErrors     = "errors"
	kindAvailable  = "availability"
	kindAlerting   = "alerting"
)

// deepRootKinds are failures that explain other failures (an OOM kill, a
// configuration error, a node failure cause the errors seen downstream, not
// the other way round): root-cause candidates.
var deepRootKinds = map[string]bool{
	kindOOM: true, kindConfig: true, kindImage: true, kindNode: true, kindScheduling: true,
	kindDisk: true, kindStorage: true, kindDB: true, kindCert: true, kindDNS: true,
	kindSaturation: true, kindCode: true, kindQuota: true,
}

// Concrete reference kinds: what makes evidence specific enough to check
// (a named object, a version, a number), as opposed to a vague claim.
const (
	refDeploy       = "deploy"
	refCommit       = "commit"
	refMetricWindow = "metric_window"
	refPod          = "pod"
	refExitCode     = "exit_code"
	refNode         = "node"
	refEvent        = "event"
	refLogLine      = "log_line"
	refResource     = "resource"
	refDBEvent      = "db_event"
)

// observation is one health statement about one entity at one time.
type observation struct {
	entity   string // "pod:ns/name", "pods:ns/workload", "deployment:ns/name", "node:name"
	workload string // the owning workload of a pod observation
	rs       string // the pod's replica set (template generation), when known
	healthy  bool
	at       time.Time
	detail   string
}

// seriesView is one metric series with its verdict.
type seriesView struct {
	name      string
	names     []string // label values naming entities
	anomalous bool
	elevated  bool // still abnormal at the latest sample
	normal    bool
	class     string // error, latency, saturation, traffic, other
	latest    float64
	onset     *time.Time
	detail    string
}

// logHit is one error-level log line.
type logHit struct {
	at      *time.Time
	service string
	pod     string
}

// profile is what the critic reads out of one pin: facts first, text second.
type profile struct {
	pinID string
	tool  string
	// toolID is tool as a handle: judge compares the tool of every pin of
	// the pool with the new one's.
	toolID     unique.Handle[string]
	failing    bool
	healthy    bool
	hasFacts   bool
	roots      map[string]string // kind -> detail
	symptoms   map[string]string // kind -> detail
	obs        []observation
	names      map[string]bool // lower-case entity names (pods, workloads, nodes, services, databases)
	refs       map[string][]string
	onset      *time.Time
	at         time.Time
	deploys    []facts.Deploy
	commits    []facts.Commit
	series     []seriesView
	errLines   []string          // error-level log lines and warning event messages
	errLogs    []logHit          // error-level log lines with their time and source
	windowEnd  time.Time         // end of the window the tool looked at
	downstream map[string]string // dependency name -> detail
}

func newProfile(p *evidencev1.EvidencePin) *profile {
	pr := &profile{
		pinID:      p.GetId(),
		tool:       toolOf(p),
		toolID:     unique.Make(toolOf(p)),
		roots:      map[string]string{},
		symptoms:   map[string]string{},
		names:      map[string]bool{},
		refs:       map[string][]string{},
		downstream: map[string]string{},
	}
	pr.at = observedAt(p)
	if e := p.GetTimeWindow().GetEnd(); e != nil {
		pr.windowEnd = e.AsTime()
	}
	pr.addName(p.GetService())
	pr.addName(p.GetResourceName())
	if !p.GetSuccess() && p.GetError() != "" || p.GetNoData() {
		// A failed call or an absence says nothing about failures; names only.
		return pr
	}
	md := metadataOf(p)
	pr.readPods(md)
	pr.readNodes(md)
	pr.readDeployments(md)
	pr.readEvents(md)
	pr.readResources(md)
	pr.readLogs(md)
	pr.readSeries(md, p)
	pr.readChanges(md)
	pr.readDatabase(md)
	pr.readMonitors(md)

	// Text: the claim and the supporting snippets; raw output only when the
	// tool gave nothing structured.
	texts := append([]string{p.GetClaim()}, p.GetSupportingEvidence()...)
	if !pr.hasFacts && len(p.GetSupportingEvidence()) == 0 {
		texts = append(texts, capText(p.GetRawOutput(), 16<<10))
	}
	for _, t := range texts {
		for _, line := range strings.Split(t, "\n") {
			pr.scanText(line, pr.hasFacts)
		}
	}
	for _, l := range pr.errLines {
		pr.scanText(l, false)
		pr.scanDownstream(l)
	}
	pr.failing = len(pr.roots) > 0 || len(pr.symptoms) > 0
	for _, o := range pr.obs {
		if !o.healthy {
			pr.failing = true
		}
	}
	if !pr.failing {
		for _, o := range pr.obs {
			if o.healthy {
				pr.healthy = true
			}
		}
		for _, s := range pr.series {
			if s.normal {
				pr.healthy = true
			}
		}
	}
	return pr
}

func toolOf(p *evidencev1.EvidencePin) string {
	if p.GetSourceTool() != "" {
		return p.GetSourceTool()
	}
	if v, ok := p.GetParams().GetFields()["intent"]; ok {
		return v.GetStringValue()
	}
	return p.GetSourceAgent()
}

func observedAt(p *evidencev1.EvidencePin) time.Time {
	if p.GetTimestamp() != nil {
		return p.GetTimestamp().AsTime()
	}
	if p.GetTimeWindow().GetEnd() != nil {
		return p.GetTimeWindow().GetEnd().AsTime()
	}
	return time.Time{}
}

func capText(s string, n int) string {
	if len(s) > n {
		return textutil.Truncate(s, n) // never splits a character
	}
	return s
}

func (pr *profile) addName(n string) {
	n = strings.ToLower(strings.TrimSpace(n))
	if n == "" || len(n) < 2 {
		return
	}
	if _, err := strconv.ParseFloat(n, 64); err == nil {
		return
	}
	pr.names[n] = true
}

func (pr *profile) addRef(kind, v string) {
	if v == "" {
		return
	}
	for _, x := range pr.refs[kind] {
		if x == v {
			return
		}
	}
	pr.refs[kind] = append(pr.refs[kind], v)
}

func (pr *profile) root(kind, detail string) {
	if _, ok := pr.roots[kind]; !ok {
		pr.roots[kind] = detail
	}
}

func (pr *profile) symptom(kind, detail string) {
	if _, ok := pr.symptoms[kind]; !ok {
		pr.symptoms[kind] = detail
	}
}

func (pr *profile) noteOnset(t *time.Time) {
	if t == nil || t.IsZero() {
		return
	}
	if pr.onset == nil || t.Before(*pr.onset) {
		tt := *t
		pr.onset = &tt
	}
}

// workloadOf names the workload that owns a pod.
func workloadOf(p facts.Pod) string {
	switch {
	case p.Workload != "":
		return p.Workload
	case p.OwnerKind == "ReplicaSet" && p.OwnerName != "":
		return facts.ReplicaSetDeployment(p.OwnerName)
	case p.OwnerName != "":
		return p.OwnerName
	case facts.IsDeploymentPod(p.Name):
		return facts.TrimReplicaSuffix(p.Name)
	}
	return ""
}

// replicaSetOf names the pod's replica set: its owner, else its name without
// the random suffix.
func replicaSetOf(p facts.Pod) string {
	if p.OwnerKind == "ReplicaSet" && p.OwnerName != "" {
		return strings.ToLower(p.OwnerName)
	}
	if i := strings.LastIndexByte(p.Name, '-'); i > 0 {
		return strings.ToLower(p.Name[:i])
	}
	return ""
}

func entityKey(kind, ns, name string) string {
	if ns == "" {
		return kind + ":" + strings.ToLower(name)
	}
	return kind + ":" + strings.ToLower(ns) + "/" + strings.ToLower(name)
}

// metadata is a pin's facts as the profile reads them: located in their
// encoding when the pin keeps them encoded (each fact read is written as
// JSON straight from its bytes), decoded otherwise.
type metadata struct {
	pin     *evidencev1.EvidencePin
	fields  facts.Fields
	decoded *structpb.Struct
	done    bool // decoded is set (or the pin has no metadata)
}

func metadataOf(p *evidencev1.EvidencePin) *metadata {
	md := &metadata{pin: p}
	if f, ok := bus.MetadataFields(p); ok {
		md.fields = f
	}
	return md
}

// structOf decodes the metadata once, for what is not read from the
// encoding.
func (md *metadata) structOf() *structpb.Struct {
	if !md.done {
		md.decoded, md.done = bus.Metadata(md.pin), true
	}
	return md.decoded
}

func decode[T any](md *metadata, key string) []T {
	var out []T
	if md.fields != nil {
		ok, err := facts.DecodeFields(md.fields, key, &out)
		if !errors.Is(err, facts.ErrNotReadEncoded) {
			if err != nil || !ok {
				return nil
			}
			return out
		}
		out = nil
	}
	ok, err := facts.Decode(md.structOf(), key, &out)
	if err != nil || !ok {
		return nil
	}
	return out
}

func i32(p *int32) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func (pr *profile) readPods(md *metadata) {
	pods := decode[facts.Pod](md, facts.KeyPods)
	if len(pods) == 0 {
		return
	}
	pr.hasFacts = true
	type wl struct {
		ns, name string
		healthy  bool
		pods     int
		failing  []string
	}
	workloads := map[string]*wl{}
	var order []string
	for _, p := range pods {
		pr.addName(p.Name)
		pr.addRef(refPod, p.Name)
		w := workloadOf(p)
		pr.addName(w)
		var reasons []string
		oom := p.OOMKilled
		for _, c := range p.Containers {
			if c.Reason == "OOMKilled" || c.LastReason == "OOMKilled" {
				oom = true
			}
			for _, ec := range []*int32{c.ExitCode, c.LastExitCode} {
				if ec != nil && *ec != 0 {
					pr.addRef(refExitCode, i32(ec))
					if *ec == 137 {
						oom = oom || c.LastReason == "OOMKilled" || c.Reason == "OOMKilled"
					}
				}
			}
			switch c.Reason {
			case "CrashLoopBackOff":
				d := fmt.Sprintf("pod %s container %s in CrashLoopBackOff (%d restarts", p.Name, c.Name, c.RestartCount)
				if c.LastExitCode != nil {
					d += ", last exit code " + i32(c.LastExitCode)
				}
				if c.LastReason != "" {
					d += ", last reason " + c.LastReason
				}
				d += ")"
				pr.root(kindCrash, d)
				reasons = append(reasons, "CrashLoopBackOff")
				if c.LastMessage != "" {
					pr.errLines = append(pr.errLines, c.LastMessage)
				}
			case "CreateContainerConfigError", "CreateContainerError", "InvalidImageName":
				if c.Reason == "InvalidImageName" {
					pr.root(kindImage, fmt.Sprintf("pod %s container %s: %s", p.Name, c.Name, c.Reason))
				} else {
					pr.root(kindConfig, fmt.Sprintf("pod %s container %s: %s %s", p.Name, c.Name, c.Reason, c.Message))
				}
				reasons = append(reasons, c.Reason)
			case "ImagePullBackOff", "ErrImagePull":
				pr.root(kindImage, fmt.Sprintf("pod %s container %s: %s (%s)", p.Name, c.Name, c.Reason, c.Image))
				reasons = append(reasons, c.Reason)
			case "Error", "ContainerCannotRun", "StartError":
				pr.root(kindCrash, fmt.Sprintf("pod %s container %s terminated: %s exit %s", p.Name, c.Name, c.Reason, i32(c.ExitCode)))
				reasons = append(reasons, c.Reason)
			}
			if c.Message != "" && c.State != "running" {
				pr.errLines = append(pr.errLines, c.Message)
			}
		}
		if oom {
			pr.root(kindOOM, fmt.Sprintf("pod %s OOMKilled (exit code 137)", p.Name))
			pr.addRef(refExitCode, "137")
			reasons = append(reasons, "OOMKilled")
		}
		switch p.Reason {
		case "Evicted":
			pr.root(kindNode, fmt.Sprintf("pod %s evicted: %s", p.Name, p.Message))
			reasons = append(reasons, "Evicted")
		case "", "Completed", "PodCompleted":
			// A pod that ran to completion is done, not failing.
		default:
			reasons = append(reasons, p.Reason)
		}
		if p.Phase == "Pending" {
			for _, c := range p.Conditions {
				if c.Type == "PodScheduled" && c.Status == "False" {
					pr.root(kindScheduling, fmt.Sprintf("pod %s unschedulable: %s", p.Name, c.Message))
					reasons = append(reasons, "Unschedulable")
				}
			}
		}
		if p.Phase == "Failed" || p.Phase == "Unknown" {
			reasons = append(reasons, "phase "+p.Phase)
		}
		if p.Phase == "Running" && !p.Ready && len(reasons) == 0 {
			pr.symptom(kindProbe, fmt.Sprintf("pod %s running but not ready", p.Name))
			reasons = append(reasons, "NotReady")
		}
		healthy := len(reasons) == 0 && (p.Phase == "Running" && p.Ready || p.Phase == "Succeeded")
		detail := fmt.Sprintf("pod %s phase=%s ready=%t restarts=%d", p.Name, p.Phase, p.Ready, p.Restarts)
		if len(reasons) > 0 {
			detail += " (" + strings.Join(reasons, ", ") + ")"
		}
		if len(reasons) > 0 || healthy {
			pr.obs = append(pr.obs, observation{entity: entityKey("pod", p.Namespace, p.Name), workload: strings.ToLower(w), rs: replicaSetOf(p), healthy: healthy, at: pr.at, detail: detail})
		}
		if w != "" {
			k := entityKey("pods", p.Namespace, w)
			x := workloads[k]
			if x == nil {
				x = &wl{ns: p.Namespace, name: w, healthy: true}
				workloads[k] = x
				order = append(order, k)
			}
			x.pods++
			if !healthy {
				x.healthy = false
			}
			if len(reasons) > 0 {
				x.failing = append(x.failing, p.Name+": "+strings.Join(reasons, ", "))
			}
		}
	}
	for _, k := range order {
		x := workloads[k]
		if x.healthy && x.pods >= 2 {
			// Only a listing of the workload's pods speaks for all of them.
			pr.obs = append(pr.obs, observation{entity: k, workload: strings.ToLower(x.name), healthy: true, at: pr.at, detail: fmt.Sprintf("all %d pods of %s Running and Ready", x.pods, x.name)})
		} else if len(x.failing) > 0 {
			pr.obs = append(pr.obs, observation{entity: k, workload: strings.ToLower(x.name), healthy: false, at: pr.at, detail: "pods of " + x.name + " failing: " + strings.Join(x.failing, "; ")})
		}
	}
}

func (pr *profile) readNodes(md *metadata) {
	nodes := decode[facts.Node](md, facts.KeyNodes)
	if len(nodes) == 0 {
		return
	}
	pr.hasFacts = true
	for _, n := range nodes {
		pr.addName(n.Name)
		pr.addRef(refNode, n.Name)
		var bad []string
		if !n.Ready {
			bad = append(bad, "NotReady")
		}
		for _, c := range n.Conditions {
			switch c.Type {
			case "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable":
				if c.Status == "True" {
					bad = append(bad, c.Type)
				}
			case "Ready":
				if c.Status != "True" && n.Ready {
					bad = append(bad, "Ready="+c.Status)
				}
			}
		}
		if len(bad) > 0 {
			d := fmt.Sprintf("node %s: %s", n.Name, strings.Join(bad, ", "))
			if containsAny(strings.Join(bad, " "), "DiskPressure") {
				pr.root(kindDisk, d)
			}
			pr.root(kindNode, d)
			pr.obs = append(pr.obs, observation{entity: entityKey("node", "", n.Name), healthy: false, at: pr.at, detail: d})
		} else {
			pr.obs = append(pr.obs, observation{entity: entityKey("node", "", n.Name), healthy: true, at: pr.at, detail: "node " + n.Name + " Ready, no pressure"})
		}
	}
}

func (pr *profile) readDeployments(md *metadata) {
	deps := decode[facts.Deployment](md, facts.KeyDeployments)
	if len(deps) == 0 {
		return
	}
	pr.hasFacts = true
	for _, d := range deps {
		pr.addName(d.Name)
		if d.Revision != "" {
			pr.addRef(refDeploy, d.Name+"@rev"+d.Revision)
		}
		stuck := false
		for _, c := range d.Conditions {
			if c.Reason == "ProgressDeadlineExceeded" {
				stuck = true
			}
		}
		k := entityKey("deployment", d.Namespace, d.Name)
		switch {
		case d.Replicas > 0 && (d.AvailableReplicas < d.Replicas || d.UnavailableReplicas > 0) || stuck:
			detail := fmt.Sprintf("deployment %s: %d/%d available", d.Name, d.AvailableReplicas, d.Replicas)
			if stuck {
				detail += ", rollout ProgressDeadlineExceeded"
			}
			pr.symptom(kindAvailable, detail)
			pr.obs = append(pr.obs, observation{entity: k, healthy: false, at: pr.at, detail: detail})
		case d.Replicas > 0 && d.ReadyReplicas >= d.Replicas:
			pr.obs = append(pr.obs, observation{entity: k, healthy: true, at: pr.at, detail: fmt.Sprintf("deployment %s: %d/%d ready", d.Name, d.ReadyReplicas, d.Replicas)})
		}
	}
}

func (pr *profile) readEvents(md *metadata) {
	evs := decode[facts.Event](md, facts.KeyEvents)
	if len(evs) == 0 {
		return
	}
	pr.hasFacts = true
	pr.readEventList(evs)
}

func (pr *profile) readEventList(evs []facts.Event) {
	for _, e := range evs {
		if e.Type != "Warning" {
			continue
		}
		pr.addName(e.InvolvedName)
		if strings.EqualFold(e.InvolvedKind, "Pod") {
			pr.addName(facts.TrimReplicaSuffix(e.InvolvedName))
		}
		pr.addRef(refEvent, e.Reason+" "+e.InvolvedName)
		d := fmt.Sprintf("%s on %s/%s: %s", e.Reason, e.InvolvedKind, e.InvolvedName, e.Message)
		switch e.Reason {
		case "OOMKilling", "OOMKilled":
			pr.root(kindOOM, d)
		case "BackOff", "CrashLoopBackOff":
			pr.root(kindCrash, d)
		case "FailedScheduling":
			pr.root(kindScheduling, d)
		case "NodeNotReady", "NodeHasDiskPressure", "NodeHasInsufficientMemory", "Rebooted", "NodeNotSchedulable":
			pr.root(kindNode, d)
		case "Unhealthy", "ProbeWarning":
			pr.symptom(kindProbe, d)
		case "FailedMount", "FailedAttachVolume", "VolumeResizeFailed":
			pr.root(kindStorage, d)
		case "Evicted":
			pr.root(kindNode, d)
		case "Failed", "ErrImagePull", "InspectFailed":
			// classified by message below
		}
		t := e.FirstSeen
		if t == nil {
			t = e.LastSeen
		}
		pr.noteOnset(t)
		pr.errLines = append(pr.errLines, e.Reason+": "+e.Message)
	}
}

func (pr *profile) readResources(md *metadata) {
	rs := decode[facts.Resource](md, facts.KeyResources)
	if len(rs) == 0 {
		return
	}
	pr.hasFacts = true
	for _, r := range rs {
		pr.addName(r.Name)
		pr.addRef(refResource, r.Kind+"/"+r.Name)
		for _, s := range r.Signals {
			pr.errLines = append(pr.errLines, s)
		}
		for _, c := range r.Conditions {
			if (c.Type == "Ready" || c.Type == "Available") && c.Status == "False" {
				pr.errLines = append(pr.errLines, fmt.Sprintf("%s %s condition %s=False %s %s", r.Kind, r.Name, c.Type, c.Reason, c.Message))
			}
		}
		pr.readEventList(r.Events)
	}
}

var errLevel = map[string]bool{"ERROR": true, "FATAL": true, "CRITICAL": true, "PANIC": true, "ERR": true, "EMERG": true, "ALERT": true, "SEVERE": true}

func (pr *profile) readLogs(md *metadata) {
	lines := decode[facts.LogLine](md, facts.KeyLogLines)
	if len(lines) == 0 {
		return
	}
	pr.hasFacts = true
	for _, l := range lines {
		pr.addName(l.Service)
		if l.Pod != "" {
			pr.addName(l.Pod)
			pr.addName(facts.TrimReplicaSuffix(l.Pod))
		}
		isErr := errLevel[strings.ToUpper(l.Level)] || (l.Level == "" && errorText.MatchString(strings.ToLower(l.Message)))
		if !isErr {
			continue
		}
		if len(pr.errLines) < 200 {
			pr.errLines = append(pr.errLines, l.Message)
		}
		if len(pr.errLogs) < 2000 {
			pr.errLogs = append(pr.errLogs, logHit{at: l.Timestamp, service: strings.ToLower(l.Service), pod: strings.ToLower(l.Pod)})
		}
		pr.addRef(refLogLine, capText(l.Message, 120))
		pr.noteOnset(l.Timestamp)
		if len(pr.symptoms) == 0 || pr.symptoms[kindErrors] == "" {
			pr.symptom(kindErrors, "error log: "+capText(l.Message, 160))
		}
	}
}

var errorText = regexp.MustCompile(`\b(error|exception|fatal|panic|failed|failure|refused|timed out|timeout)\b`)

func classifySeries(s facts.Series) string {
	n := strings.ToLower(s.Name)
	if _, bad := signal.StatusError(s.Labels); bad {
		return "error"
	}
	if signal.Classify(s.Name, nil) == signal.Traffic {
		return "traffic" // the _count of a duration histogram counts requests
	}
	switch {
	case containsAny(n, "error", "5xx", "fail", "exception", "fault"):
		return "error"
	case containsAny(n, "latency", "duration", "p99", "p95", "p90", "response_time", "_seconds", "lag"):
		return "latency"
	case containsAny(n, "memory", "mem_", "cpu", "connection", "disk", "storage", "fd", "thread", "queue", "pool", "saturation", "iops", "throttl", "heap", "swap"):
		return "saturation"
	case containsAny(n, "request", "rps", "qps", "throughput", "traffic", "rate"):
		return "traffic"
	case containsAny(n, "availability", "success", "up"):
		return "availability"
	}
	return "other"
}

func (pr *profile) readSeries(md *metadata, p *evidencev1.EvidencePin) {
	series := decode[facts.Series](md, facts.KeySeries)
	for i := range series {
		series[i].Labels = target.Canonical(series[i].Labels)
	}
	if len(series) == 0 {
		return
	}
	pr.hasFacts = true
	for _, s := range series {
		v := seriesView{name: s.Name, class: classifySeries(s), onset: s.OnsetAt}
		keys := make([]string, 0, len(s.Labels))
		for k := range s.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch k {
			case "service", "app", "deployment", "pod", "job", "container", "instance", "db", "dbinstance", "db_instance", "database", "node", "workload", "destination_service", "upstream", "target":
				val := strings.ToLower(s.Labels[k])
				if i := strings.LastIndexByte(val, ':'); i > 0 {
					val = val[:i]
				}
				v.names = append(v.names, val)
				pr.addName(val)
			}
		}
		if strings.HasPrefix(strings.ToLower(s.Name), "kube_") && s.Min >= 0 && twoLevels(s) {
			// A kube-state 0/1 gauge records a state (phase, condition,
			// job status), not a rate that can be abnormal by its shape.
			v.class, v.normal = "state", true
			v.detail = fmt.Sprintf("%s state latest=%.4g", s.Name, s.Latest)
			pr.series = append(pr.series, v)
			continue
		}
		v.latest = s.Latest
		shape := strings.ToLower(s.Shape)
		rise := s.Baseline > 0 && s.Peak > 2*s.Baseline || s.Baseline == 0 && s.Peak > 0 && len(s.Anomalies) > 0
		// A shape only counts with a material change from the baseline, in
		// the bad direction: free space or availability going up is recovery.
		inverse := v.class == "availability" || containsAny(strings.ToLower(s.Name), "free", "avail", "remaining", "idle", "headroom")
		moved := s.Baseline == 0 && s.Peak > 0 || s.Baseline > 0 && s.Peak >= 1.3*s.Baseline || s.Baseline < 0
		dropped := s.Baseline > 0 && s.Min <= 0.7*s.Baseline
		switch {
		case inverse:
			v.anomalous = dropped && shape != "flat" && shape != "noisy" || shape == "" && dropped && len(s.Anomalies) > 0
			v.elevated = v.anomalous && s.Latest <= 0.7*s.Baseline
		case (shape == "step" || shape == "spike" || shape == "creep") && moved:
			v.anomalous = true
		case shape == "drop" && dropped && v.class == "traffic":
			v.anomalous = true
		case v.class == "saturation" && steadyClimb(s):
			// A resource that climbs steadily and is still at its peak is
			// being exhausted (a leak), even before it doubles.
			v.anomalous = true
		case shape == "" && rise && len(s.Anomalies) > 0:
			v.anomalous = true
		}
		if !inverse {
			v.elevated = v.anomalous && (s.Baseline == 0 && s.Latest > 0 || s.Baseline > 0 && s.Latest >= 1.3*s.Baseline || shape == "drop")
		}
		if !v.anomalous {
			v.normal = true
		}
		if v.class == "traffic" && v.anomalous && shape != "drop" {
			// A traffic rise is context, not a failure by itself.
			v.detail = fmt.Sprintf("%s %s (peak %.3g vs baseline %.3g)", s.Name, shape, s.Peak, s.Baseline)
			v.anomalous, v.normal, v.elevated = false, false, false
			pr.series = append(pr.series, v)
			continue
		}
		v.detail = fmt.Sprintf("%s shape=%s peak=%.4g baseline=%.4g latest=%.4g", s.Name, orDash(shape), s.Peak, s.Baseline, s.Latest)
		if s.OnsetAt != nil {
			v.detail += " onset=" + s.OnsetAt.UTC().Format(time.RFC3339)
		}
		if s.OnsetAt != nil || s.PeakAt != nil || p.GetTimeWindow() != nil {
			w := s.Name
			if s.OnsetAt != nil {
				w += "@" + s.OnsetAt.UTC().Format(time.RFC3339)
			} else if s.PeakAt != nil {
				w += "@peak " + s.PeakAt.UTC().Format(time.RFC3339)
			}
			pr.addRef(refMetricWindow, w)
		}
		if v.anomalous {
			pr.noteOnset(s.OnsetAt)
			switch v.class {
			case "error":
				pr.symptom(kindHTTP5xx, v.detail)
			case "latency":
				pr.symptom(kindLatency, v.detail)
			case "saturation":
				pr.root(kindSaturation, v.detail)
			case "availability":
				pr.symptom(kindAvailable, v.detail)
			default:
				pr.symptom(kindErrors, v.detail)
			}
		}
		pr.series = append(pr.series, v)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

func (pr *profile) readChanges(md *metadata) {
	if deploys := decode[facts.Deploy](md, facts.KeyDeploys); len(deploys) > 0 {
		pr.hasFacts = true
		pr.deploys = deploys
		for _, d := range deploys {
			pr.addName(d.Service)
			id := d.ID
			if id == "" {
				id = d.Service + "@" + d.Revision
			}
			pr.addRef(refDeploy, id)
			pr.addName(d.ID)
			if shaRe.MatchString(strings.ToLower(d.Revision)) {
				pr.addRef(refCommit, d.Revision)
				pr.addName(d.Revision)
			}
		}
	}
	if commits := decode[facts.Commit](md, facts.KeyCommits); len(commits) > 0 {
		pr.hasFacts = true
		pr.commits = commits
		for _, c := range commits {
			pr.addName(c.Service)
			if c.SHA != "" {
				pr.addRef(refCommit, c.SHA)
				pr.addName(c.SHA)
			}
		}
	}
}

func (pr *profile) readDatabase(md *metadata) {
	if qs := decode[facts.TopQuery](md, facts.KeyTopQueries); len(qs) > 0 {
		pr.hasFacts = true
		for _, q := range qs {
			pr.addName(q.Instance)
			var waits []string
			for _, w := range q.WaitEvents {
				if w.Load > 0 {
					waits = append(waits, w.Name)
				}
			}
			// Top statements are context (every database has some); the
			// metrics and events say whether the load is a failure.
			pr.addRef(refResource, fmt.Sprintf("top statement on %s (%.2f AAS; waits %s)", q.Instance, q.Load, strings.Join(waits, ", ")))
		}
	}
	if evs := decode[facts.DBEvent](md, facts.KeyDBEvents); len(evs) > 0 {
		pr.hasFacts = true
		for _, e := range evs {
			pr.addName(e.SourceID)
			pr.addRef(refDBEvent, e.SourceID+": "+capText(e.Message, 80))
			low := strings.ToLower(e.Message + " " + strings.Join(e.Categories, " "))
			if containsAny(low, "failover", "failure", "reboot", "restart", "storage", "low storage", "unavailable", "crash", "out of") {
				pr.root(kindDB, fmt.Sprintf("database event on %s: %s", e.SourceID, e.Message))
				pr.noteOnset(e.Time)
			}
		}
	}
}

func (pr *profile) readMonitors(md *metadata) {
	ms := decode[facts.Monitor](md, facts.KeyMonitors)
	if len(ms) == 0 {
		return
	}
	pr.hasFacts = true
	for _, m := range ms {
		st := strings.ToLower(m.State)
		if st == "alert" || st == "firing" || st == "triggered" {
			pr.symptom(kindAlerting, fmt.Sprintf("monitor %q is %s", m.Name, m.State))
		}
	}
}

// Text rules: (kind, root?, pattern). Applied per line; negated lines skipped.
type textRule struct {
	kind string
	root bool
	re   *regexp.Regexp
	// phrase, when set, is the detectors' failure phrase kind the rule
	// reads (analysis.FailurePhrase) instead of re: one vocabulary for the
	// brain and the critic.
	phrase string
}

func (r textRule) match(line string) bool {
	if r.phrase != "" {
		return analysis.FailurePhrase(r.phrase, line)
	}
	return r.re.MatchString(line)
}

var textRules = []textRule{
	{kind: kindOOM, root: true, re: regexp.MustCompile(`oomkill|out of memory|oom[- ]kill|exit code 137|outofmemoryerror|cannot allocate memory|memory limit exceeded`)},
	{kind: kindConfig, root: true, phrase: analysis.PhraseConfig},
	{kind: kindImage, root: true, re: regexp.MustCompile(`imagepullbackoff|errimagepull|manifest unknown|pull access denied|invalidimagename`)},
	{kind: kindNode, root: true, re: regexp.MustCompile(`nodenotready|node \S+ (is )?not ?ready|kubelet stopped posting|memorypressure|pidpressure|networkunavailable|node\.kubernetes\.io/(unreachable|not-ready)|kernel panic|system clock wrong|clock (skew|drift)|clock (is )?out of sync|time sync(hroni[sz]ation)? (lost|disabled|failed)`)},
	{kind: kindScheduling, root: true, re: regexp.MustCompile(`failedscheduling|insufficient (cpu|memory|pods)|0/\d+ nodes are available|unschedulable`)},
	{kind: kindQuota, root: true, re: regexp.MustCompile(`exceeded quota|quota exceeded|forbidden: exceeded|resourcequota|limitrange|maximum (cpu|memory) usage per`)},
	{kind: kindDisk, root: true, phrase: analysis.PhraseDisk},
	{kind: kindDB, root: true, re: regexp.MustCompile(`too many connections|deadlock|lock wait timeout|connection pool (is )?exhausted|pool exhausted|max_connections|remaining connection slots|database failover|failover (started|completed|initiated)|replication lag`)},
	{kind: kindCert, root: true, phrase: analysis.PhraseCert},
	{kind: kindDNS, root: true, phrase: analysis.PhraseDNS},
	{kind: kindCode, root: true, phrase: analysis.PhraseCode},
	{kind: kindCrash, root: true, re: regexp.MustCompile(`crashloopbackoff|back-off restarting failed container|exited with (exit )?code [1-9]|exit code [1-9]\d*`)},
	{kind: kindHTTP5xx, root: false, re: regexp.MustCompile(`\b50[0-4]\b|internal server error|bad gateway|service unavailable|gateway timeout|\b5xx\b`)},
	{kind: kindLatency, root: false, re: regexp.MustCompile(`\blatency\b|\bp9[59]\b|slow (query|request|response)s?`)},
	{kind: kindTimeout, root: false, re: regexp.MustCompile(`timed? ?out|deadline exceeded|context deadline`)},
	{kind: kindConnection, root: false, re: regexp.MustCompile(`connection refused|connection reset|econnrefused|broken pipe|upstream connect error|no healthy upstream|connect: connection`)},
	{kind: kindProbe, root: false, re: regexp.MustCompile(`(readiness|liveness|startup) probe failed|unhealthy`)},
	{kind: kindErrors, root: false, re: regexp.MustCompile(`error rate|errors? (spike|increase|surge)|exception`)},
}

// affirmativeNo are failure phrases that contain a negation word.
var affirmativeNo = []string{"no such", "not found", "not ready", "not set", "no healthy upstream", "no space left",
	"no route to host", "no endpoints available", "no available", "not available", "no nodes available", "not running"}

var negation = regexp.MustCompile(`(^|[^a-z])(no|zero|none|without|0|not any|never)\s`)

func negated(line string) bool {
	l := line
	for _, phrase := range affirmativeNo {
		l = strings.ReplaceAll(l, phrase, "")
	}
	return negation.MatchString(l)
}

// scanText classifies one line. With onlyStrong, only root kinds are taken
// (the structured facts already decided the symptoms).
func (pr *profile) scanText(line string, onlyStrong bool) {
	l := strings.ToLower(strings.TrimSpace(line))
	if l == "" || negated(l) {
		return
	}
	for _, r := range textRules {
		if onlyStrong && !r.root {
			continue
		}
		if !r.match(l) {
			continue
		}
		d := capText(strings.TrimSpace(line), 200)
		if r.root {
			pr.root(r.kind, d)
		} else {
			pr.symptom(r.kind, d)
		}
		if m := exitCodeRe.FindStringSubmatch(l); m != nil {
			pr.addRef(refExitCode, m[1])
		}
	}
}

var exitCodeRe = regexp.MustCompile(`exit(?:ed with)?(?: exit)? code:? ?(\d{1,3})`)

// Dependency names in error lines: "dial tcp host:port", "http://host/...",
// "upstream host", "connecting to host", "host=...".
var downstreamRes = []*regexp.Regexp{
	regexp.MustCompile(`dial tcp:? (?:lookup )?([a-z0-9][a-z0-9.-]*[a-z0-9])(?::\d+)?`),
	regexp.MustCompile(`https?://([a-z0-9][a-z0-9.-]*[a-z0-9])(?::\d+)?`),
	regexp.MustCompile(`(?:upstream|downstream|dependency|backend)[ =:"']+([a-z][a-z0-9.-]*[a-z0-9])`),
	regexp.MustCompile(`(?:connect(?:ing|ion)? to|calling|call to|request to|failed to reach|host[=:]) ?"?([a-z][a-z0-9.-]*[a-z0-9])`),
	regexp.MustCompile(`lookup ([a-z][a-z0-9.-]*[a-z0-9])(?: on|:)`),
}

var hostNoise = map[string]bool{"localhost": true, "the": true, "server": true, "database": true, "host": true, "service": true, "upstream": true, "127.0.0.1": true}

func (pr *profile) scanDownstream(line string) {
	l := strings.ToLower(line)
	if !containsAny(l, "refused", "timeout", "timed out", "unavailable", "reset", "no such host", "failed", "error", "unreachable", "deadline", "503", "502", "504") {
		return
	}
	for _, re := range downstreamRes {
		for _, m := range re.FindAllStringSubmatch(l, 3) {
			h := m[1]
			if hostNoise[h] || strings.Count(h, ".") == 3 && isIPv4(h) {
				continue
			}
			// Kubernetes service DNS: name.namespace.svc.cluster.local -> name.
			if i := strings.Index(h, ".svc"); i > 0 {
				h = strings.SplitN(h[:i], ".", 2)[0]
			}
			if _, ok := pr.downstream[h]; !ok {
				pr.downstream[h] = capText(strings.TrimSpace(line), 200)
			}
		}
	}
}

func isIPv4(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if _, err := strconv.Atoi(part); err != nil {
			return false
		}
	}
	return true
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// overlaps reports whether two name sets share an entity, treating a pod name
// as belonging to the workload it is prefixed with.
func overlaps(a, b map[string]bool) bool {
	for n := range a {
		if b[n] {
			return true
		}
	}
	return false
}

// matchesName reports whether an accused name matches one of names,
// tolerating pod suffixes and qualified names.
func matchesName(accused string, names map[string]bool) bool {
	if accused == "" {
		return false
	}
	if names[accused] {
		return true
	}
	sha := shaRe.MatchString(accused)
	for n := range names {
		if len(n) >= 3 && (strings.HasPrefix(n, accused+"-") || strings.HasPrefix(accused, n+"-") || strings.HasPrefix(n, accused+".")) {
			return true
		}
		// Commit SHAs match on a common prefix of at least 7 characters.
		if sha && len(n) >= 7 && shaRe.MatchString(n) && (strings.HasPrefix(n, accused) || strings.HasPrefix(accused, n)) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// twoLevels: the series only ever takes two values (a 0/1 state gauge,
// whatever its scale), judged on its samples, else on min/peak/latest.
func twoLevels(s facts.Series) bool {
	vals := map[float64]bool{}
	for _, p := range s.Downsampled {
		vals[p.V] = true
		if len(vals) > 2 {
			return false
		}
	}
	if len(s.Downsampled) > 0 {
		return true
	}
	vals = map[float64]bool{s.Min: true, s.Peak: true, s.Latest: true}
	return len(vals) <= 2 && s.Min == 0
}

// steadyClimb: a series whose samples go up step after step (at least 70%
// of the moves), by 4% or more in total, and that ends at its peak.
func steadyClimb(s facts.Series) bool {
	pts := s.Downsampled
	if len(pts) < 5 || pts[0].V <= 0 || s.Latest < 0.98*s.Peak {
		return false
	}
	up, moves := 0, 0
	for i := 1; i < len(pts); i++ {
		switch d := pts[i].V - pts[i-1].V; {
		case d > 0:
			up++
			moves++
		case d < 0:
			moves++
		}
	}
	return moves > 0 && float64(up) >= 0.7*float64(moves) && pts[len(pts)-1].V >= 1.04*pts[0].V
}
