package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/target"
)

// Cite is where a fact came from: the pins that carried it and their
// evidence sources.
type Cite struct {
	PinIDs  []string
	Sources []string
}

func (c *Cite) merge(o Cite) {
	c.PinIDs = appendUnique(c.PinIDs, o.PinIDs...)
	c.Sources = appendUnique(c.Sources, o.Sources...)
}

// Source returns the first evidence source, or the fallback.
func (c Cite) Source(fallback string) string {
	if len(c.Sources) > 0 {
		return c.Sources[0]
	}
	return fallback
}

// Fact kinds with their citations.
type (
	Pod struct {
		facts.Pod
		Cite
	}
	Event struct {
		facts.Event
		Cite
	}
	Node struct {
		facts.Node
		Cite
	}
	Deployment struct {
		facts.Deployment
		Cite
	}
	Resource struct {
		facts.Resource
		Cite
	}
	LogLine struct {
		facts.LogLine
		Cite
	}
	Series struct {
		facts.Series
		Cite
	}
	Deploy struct {
		facts.Deploy
		Cite
	}
	Commit struct {
		facts.Commit
		Cite
	}
	TopQuery struct {
		facts.TopQuery
		Cite
	}
	DBEvent struct {
		facts.DBEvent
		Cite
	}
	Monitor struct {
		facts.Monitor
		Cite
	}
	ObjectChange struct {
		facts.ObjectChange
		Cite
	}
	StatusIncident struct {
		facts.StatusIncident
		Cite
	}
)

// Evidence is the decoded view of an investigation's pins: every fact by
// kind, each with the pins that carried it, plus what was asked and found
// empty. Detectors read only this.
type Evidence struct {
	Alert *investigationv1.Alert
	// windowEnd is the end most pins' time windows share (zero without
	// pins): when the alert carries no firing time, it fired then.
	windowEnd time.Time
	// InstructionLines counts log lines set aside because they address the
	// reader instead of describing the system (instructionLike).
	InstructionLines int

	Pods        []Pod
	Events      []Event
	Nodes       []Node
	Deployments []Deployment
	Resources   []Resource
	Logs        []LogLine
	Series      []Series
	Deploys     []Deploy
	Commits     []Commit
	TopQueries  []TopQuery
	DBEvents    []DBEvent
	Monitors    []Monitor
	// StatusIncidents are outside providers' status-page incidents and
	// maintenances (get_status_page), newest first.
	StatusIncidents []StatusIncident
	// ObjectChanges are creations and edits of objects (the change
	// ledger's object rows).
	ObjectChanges []ObjectChange

	// Called maps each tool intent that ran to its pins; NoData the subset
	// that returned nothing (absence is evidence: "checked, found nothing").
	Called map[string][]string
	NoData map[string][]string
	// Queries maps the pin of a metrics query to its PromQL.
	Queries map[string]string
	// Failed maps intents whose calls failed to their errors.
	Failed map[string][]string
	// Sources are the evidence sources that returned data.
	Sources map[string]bool
	// Now is the reference time: the latest instant any evidence or the
	// alert mentions (a recorded incident is judged at its own time).
	Now time.Time
	// DecodeErrors lists pins whose metadata could not be decoded.
	DecodeErrors []string
	// DetectorErrors lists detectors that failed (a panic recovered) on
	// this evidence: their reading is missing, the others stand.
	DetectorErrors []string

	// NonPaged overrides NonPagedEnvironments when non-nil.
	NonPaged []string

	dbOnce sync.Once
	dbView *dbView
	// limits caches limitsReached: every reader (category votes per
	// candidate, saturation per service, key evidence) shares one pairing.
	limitsOnce sync.Once
	limits     []limitHit
	// common caches commonTerms.
	commonOnce sync.Once
	common     map[string]bool
	// candidates caches anomalyCandidates (the summary, the suspect and
	// the follow-ups all read them); alertScan caches the change scan at
	// the alert's time (the detectors' change rows and the summary's).
	candOnce   sync.Once
	candidates []*candidate
	scanOnce   sync.Once
	alertScan  changeScan
	// cuts caches replicaCuts (the nearest change and the cut row read
	// them).
	cutsOnce sync.Once
	cuts     []changeRef
	// persistKeys caches the keys (service and template) of persistent
	// warnings (persistentWarningKeys).
	persistOnce sync.Once
	persistKeys map[string]bool
	// groups caches failureGroups.
	groupsOnce sync.Once
	groups     []*failureGroup
	// priorDoc and priorWhere cache the category prior's document
	// (priorTerms).
	priorOnce  sync.Once
	priorDoc   catprior.Terms
	priorWhere map[string][]string
	// traceOnce, traceW and traceFirst cache the failure's rarest words
	// and its first failing line (traceWords).
	traceOnce  sync.Once
	traceW     []string
	traceFirst *time.Time
	// retryOnce and absorbed cache the retried failures their origin's
	// success absorbed (absorbedRetry).
	retryOnce sync.Once
	absorbed  map[string]bool
	// prior is the category prior of the analysis (nil: none); its
	// incidents say how rare a word is (tracewords.go).
	prior *catprior.Model
}

// keyTime is t in a deduplication key: RFC 3339 in UTC, "" when unknown.
func keyTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// NewEvidence decodes pins into an Evidence view. Pins from failed calls
// count as called (with their error) but carry no facts; undecodable
// metadata is recorded in DecodeErrors, never fatal.
func NewEvidence(alert *investigationv1.Alert, pins []*evidencev1.EvidencePin) *Evidence {
	ev := &Evidence{Alert: alert, Called: map[string][]string{}, NoData: map[string][]string{}, Failed: map[string][]string{}, Sources: map[string]bool{}}
	pods := map[string]int{}
	events := map[string]int{}
	nodes := map[string]int{}
	deps := map[string]int{}
	res := map[string]int{}
	logs := map[string]int{}
	series := map[string]int{}
	deploys := map[string]int{}
	commits := map[string]int{}
	tops := map[string]int{}
	dbev := map[string]int{}
	mons := map[string]int{}
	objch := map[string]int{}
	status := map[string]int{}
	ends := map[int64]int{}
	for _, p := range pins {
		if p == nil {
			continue
		}
		if e := p.GetTimeWindow().GetEnd(); e != nil && e.GetSeconds() > 0 {
			ends[e.GetSeconds()]++
		}
		intent := p.GetSourceTool()
		if intent != "" {
			ev.Called[intent] = appendUnique(ev.Called[intent], p.GetId())
			if p.GetNoData() {
				ev.NoData[intent] = appendUnique(ev.NoData[intent], p.GetId())
			}
			if p.GetError() != "" {
				ev.Failed[intent] = appendUnique(ev.Failed[intent], p.GetError())
			}
		}
		c := Cite{PinIDs: []string{p.GetId()}, Sources: append([]string(nil), p.GetSources()...)}
		for _, s := range p.GetSources() {
			if !p.GetNoData() {
				ev.Sources[s] = true
			}
		}
		md := p.GetMetadata()
		if md == nil {
			continue
		}
		decode := func(key string, out any) bool {
			ok, err := facts.Decode(md, key, out)
			if err != nil {
				ev.DecodeErrors = append(ev.DecodeErrors, fmt.Sprintf("pin %s: %v", p.GetId(), err))
				return false
			}
			return ok
		}
		var ps []facts.Pod
		if decode(facts.KeyPods, &ps) {
			for _, x := range ps {
				upsert(&ev.Pods, pods, x.Namespace+"/"+x.Name, Pod{x, c}, func(o *Pod) *Cite { return &o.Cite })
			}
		}
		var es []facts.Event
		if decode(facts.KeyEvents, &es) {
			for _, x := range es {
				normEvent(&x)
				upsert(&ev.Events, events, eventKey(x), Event{x, c}, func(o *Event) *Cite { return &o.Cite })
			}
		}
		var ns []facts.Node
		if decode(facts.KeyNodes, &ns) {
			for _, x := range ns {
				upsert(&ev.Nodes, nodes, x.Name, Node{x, c}, func(o *Node) *Cite { return &o.Cite })
			}
		}
		var ds []facts.Deployment
		if decode(facts.KeyDeployments, &ds) {
			for _, x := range ds {
				upsert(&ev.Deployments, deps, x.Namespace+"/"+x.Name, Deployment{x, c}, func(o *Deployment) *Cite { return &o.Cite })
			}
		}
		var rs []facts.Resource
		if decode(facts.KeyResources, &rs) {
			for _, x := range rs {
				key := x.Kind + "/" + x.Namespace + "/" + x.Name
				if i, ok := res[key]; ok {
					x = mergeResource(ev.Resources[i].Resource, x)
				}
				upsert(&ev.Resources, res, key, Resource{x, c}, func(o *Resource) *Cite { return &o.Cite })
				for _, e := range x.Events {
					normEvent(&e)
					upsert(&ev.Events, events, eventKey(e), Event{e, c}, func(o *Event) *Cite { return &o.Cite })
				}
			}
		}
		var ls []facts.LogLine
		if decode(facts.KeyLogLines, &ls) {
			for _, x := range ls {
				if instructionLike(x.Message) {
					ev.InstructionLines++ // data, not evidence (untrusted.go)
					continue
				}
				if x.Source == "" && len(c.Sources) > 0 {
					x.Source = c.Sources[0]
				}
				ts := ""
				if x.Timestamp != nil {
					ts = x.Timestamp.UTC().Format(time.RFC3339Nano)
				}
				upsert(&ev.Logs, logs, ts+"|"+x.Pod+"|"+x.Message, LogLine{x, c}, func(o *LogLine) *Cite { return &o.Cite })
			}
		}
		var q string
		if intent == "query_prometheus" && decode(facts.KeyQuery, &q) && q != "" {
			if ev.Queries == nil {
				ev.Queries = map[string]string{}
			}
			ev.Queries[p.GetId()] = q
		}
		var ss []facts.Series
		if decode(facts.KeySeries, &ss) {
			for _, x := range ss {
				x.Labels = target.Canonical(x.Labels) // one label vocabulary for every reader
				k := seriesKey(x)
				if i, ok := series[k]; ok && spanOf(ev.Series[i].Series) > spanOf(x) {
					// The same series read over a longer range (a survey of
					// the hours before a flat window) keeps its range.
					x = ev.Series[i].Series
				}
				upsert(&ev.Series, series, k, Series{x, c}, func(o *Series) *Cite { return &o.Cite })
			}
		}
		var dps []facts.Deploy
		if decode(facts.KeyDeploys, &dps) {
			for _, x := range dps {
				upsert(&ev.Deploys, deploys, x.Service+"|"+x.Revision+"|"+x.ID, Deploy{x, c}, func(o *Deploy) *Cite { return &o.Cite })
			}
		}
		var cs []facts.Commit
		if decode(facts.KeyCommits, &cs) {
			for _, x := range cs {
				if i, ok := commits[x.SHA]; ok && x.Diff == "" {
					x.Diff = ev.Commits[i].Diff // a listing read after the diff keeps it
				}
				upsert(&ev.Commits, commits, x.SHA, Commit{x, c}, func(o *Commit) *Cite { return &o.Cite })
			}
		}
		var tq []facts.TopQuery
		if decode(facts.KeyTopQueries, &tq) {
			for _, x := range tq {
				upsert(&ev.TopQueries, tops, x.Instance+"|"+x.Statement, TopQuery{x, c}, func(o *TopQuery) *Cite { return &o.Cite })
			}
		}
		var de []facts.DBEvent
		if decode(facts.KeyDBEvents, &de) {
			for _, x := range de {
				upsert(&ev.DBEvents, dbev, keyTime(x.Time)+"|"+x.SourceID+"|"+x.Message, DBEvent{x, c}, func(o *DBEvent) *Cite { return &o.Cite })
			}
		}
		var ocs []facts.ObjectChange
		if decode(facts.KeyObjectChanges, &ocs) {
			for _, x := range ocs {
				if x.At == nil {
					continue
				}
				key := x.Kind + "/" + x.Namespace + "/" + x.Name + "|" + x.Action + "|" + x.At.UTC().Format(time.RFC3339)
				upsert(&ev.ObjectChanges, objch, key, ObjectChange{x, c}, func(o *ObjectChange) *Cite { return &o.Cite })
			}
		}
		var ms []facts.Monitor
		if decode(facts.KeyMonitors, &ms) {
			for _, x := range ms {
				upsert(&ev.Monitors, mons, x.Name, Monitor{x, c}, func(o *Monitor) *Cite { return &o.Cite })
			}
		}
		var sis []facts.StatusIncident
		if decode(facts.KeyStatusIncidents, &sis) {
			for _, x := range sis {
				upsert(&ev.StatusIncidents, status, x.Page+"|"+x.Name+"|"+keyTime(x.CreatedAt), StatusIncident{x, c}, func(o *StatusIncident) *Cite { return &o.Cite })
			}
		}
	}
	sort.SliceStable(ev.StatusIncidents, func(i, j int) bool {
		return timeOf(ev.StatusIncidents[i].CreatedAt).After(timeOf(ev.StatusIncidents[j].CreatedAt))
	})
	sort.SliceStable(ev.Logs, func(i, j int) bool { return timeOf(ev.Logs[i].Timestamp).Before(timeOf(ev.Logs[j].Timestamp)) })
	sort.SliceStable(ev.DBEvents, func(i, j int) bool { return timeOf(ev.DBEvents[i].Time).Before(timeOf(ev.DBEvents[j].Time)) })
	// The changes deployers announce in the logs join the object edits,
	// unless the object's own record has the same change.
	for _, a := range ev.appliedChanges() {
		key := a.Kind + "/" + a.Namespace + "/" + a.Name + "|" + a.Action + "|" + a.At.UTC().Format(time.RFC3339)
		if _, dup := objch[key]; !dup {
			objch[key] = len(ev.ObjectChanges)
			ev.ObjectChanges = append(ev.ObjectChanges, a)
		}
	}
	ev.Now = ev.referenceTime()
	// The end most pins' windows share is the time the tools took as
	// "now" (the incident window's end, or the moment of reading when the
	// alert carries no window): an alert without a firing time fired then.
	best := 0
	for sec, n := range ends {
		if n > best || n == best && sec > ev.windowEnd.Unix() {
			best, ev.windowEnd = n, time.Unix(sec, 0).UTC()
		}
	}
	return ev
}

func upsert[T any](list *[]T, idx map[string]int, key string, v T, cite func(*T) *Cite) {
	if i, ok := idx[key]; ok {
		merged := Cite{PinIDs: append([]string(nil), cite(&(*list)[i]).PinIDs...), Sources: append([]string(nil), cite(&(*list)[i]).Sources...)}
		merged.merge(*cite(&v))
		*cite(&v) = merged
		(*list)[i] = v
		return
	}
	idx[key] = len(*list)
	*list = append(*list, v)
}

// spanOf is the time a series' points cover.
func spanOf(s facts.Series) time.Duration {
	if len(s.Downsampled) < 2 {
		return 0
	}
	return s.Downsampled[len(s.Downsampled)-1].T.Sub(s.Downsampled[0].T)
}

func seriesKey(s facts.Series) string {
	keys := make([]string, 0, len(s.Labels))
	for k, v := range s.Labels {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return s.Name + "{" + strings.Join(keys, ",") + "}"
}

// normEvent splits "Kind/Name" involved objects when the tool left the kind empty.
func normEvent(e *facts.Event) {
	if e.InvolvedKind == "" {
		if k, n, ok := strings.Cut(e.InvolvedName, "/"); ok && k != "" && n != "" {
			e.InvolvedKind, e.InvolvedName = k, n
		}
	}
}

func appendUnique(list []string, xs ...string) []string {
	for _, x := range xs {
		if x == "" {
			continue
		}
		dup := false
		for _, y := range list {
			if y == x {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, x)
		}
	}
	return list
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func (ev *Evidence) referenceTime() time.Time {
	var now time.Time
	bump := func(t *time.Time) {
		if t != nil && t.After(now) {
			now = *t
		}
	}
	for _, e := range ev.Events {
		bump(e.LastSeen)
		bump(e.FirstSeen)
	}
	for _, l := range ev.Logs {
		bump(l.Timestamp)
	}
	for _, s := range ev.Series {
		for i := range s.Downsampled {
			bump(&s.Downsampled[i].T)
		}
		bump(s.OnsetAt)
		bump(s.PeakAt)
	}
	for _, e := range ev.DBEvents {
		bump(e.Time)
	}
	for _, p := range ev.Pods {
		bump(p.StartTime)
		for _, c := range p.Containers {
			bump(c.LastFinishedAt)
		}
	}
	for _, d := range ev.Deploys {
		bump(d.FinishedAt)
		bump(d.StartedAt)
	}
	if ev.Alert != nil {
		if ev.Alert.GetStartsAt() != nil {
			t := ev.Alert.GetStartsAt().AsTime()
			bump(&t)
		}
		if w := ev.Alert.GetIncidentWindow(); w != nil && w.GetEnd() != nil {
			t := w.GetEnd().AsTime()
			bump(&t)
		}
	}
	return now
}

// Queried reports whether any of the intents ran.
func (ev *Evidence) Queried(intents ...string) bool {
	for _, i := range intents {
		if len(ev.Called[i]) > 0 {
			return true
		}
	}
	return false
}

// PinsOf returns the pins of the given intents.
func (ev *Evidence) PinsOf(intents ...string) []string {
	var out []string
	for _, i := range intents {
		out = appendUnique(out, ev.Called[i]...)
	}
	return out
}

// WarningEvents returns Warning events.
func (ev *Evidence) WarningEvents() []Event {
	var out []Event
	for _, e := range ev.Events {
		if strings.EqualFold(e.Type, "Warning") {
			out = append(out, e)
		}
	}
	return out
}

// EventsFor returns events about the named object (kind may be empty).
func (ev *Evidence) EventsFor(kind, name string) []Event {
	var out []Event
	for _, e := range ev.Events {
		if e.InvolvedName == name && (kind == "" || strings.EqualFold(e.InvolvedKind, kind)) {
			out = append(out, e)
		} else if e.InvolvedName == "" && name != "" && strings.Contains(e.Message, name) {
			out = append(out, e)
		}
	}
	return out
}

// LogsFor returns log lines of a pod (by pod field or mention).
func (ev *Evidence) LogsFor(pod string) []LogLine {
	var out []LogLine
	for _, l := range ev.Logs {
		if l.Pod == pod || (pod != "" && strings.Contains(l.Message, pod)) {
			out = append(out, l)
		}
	}
	return out
}

// FindSeries returns series whose name equals one of names (case-insensitive).
func (ev *Evidence) FindSeries(names ...string) []Series {
	var out []Series
	for _, s := range ev.Series {
		for _, n := range names {
			if strings.EqualFold(s.Name, n) || strings.EqualFold(s.Labels["__name__"], n) || strings.EqualFold(s.Labels["metric_name"], n) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Metric returns the first series named name, if any.
func (ev *Evidence) Metric(name string) (Series, bool) {
	s := ev.FindSeries(name)
	if len(s) == 0 {
		return Series{}, false
	}
	return s[0], true
}

// AlertText is every free-text field of the alert, for entity hints only.
func (ev *Evidence) alertField(keys ...string) string {
	if ev.Alert == nil {
		return ""
	}
	for _, k := range keys {
		if v := ev.Alert.GetLabels()[k]; v != "" {
			return v
		}
		if v := ev.Alert.GetAnnotations()[k]; v != "" {
			return v
		}
	}
	return ""
}

// eventKey identifies an event across the tools that report it (get_events
// and describe_resource see the same events).
func eventKey(e facts.Event) string {
	return strings.Join([]string{e.Namespace, e.InvolvedKind, e.InvolvedName, e.Reason, e.Message}, "|")
}

// mergeResource is what two reads of one object found together: the later
// read's fields where it has them, the findings, spec lines and owners of
// both (a listing's "schedule" line and a describe's flattened spec of the
// same CronJob are both kept), the earlier conditions and data when the
// later read has none.
func mergeResource(old, x facts.Resource) facts.Resource {
	x.Signals = appendUnique(slices.Clone(old.Signals), x.Signals...)
	x.Spec = appendUnique(slices.Clone(old.Spec), x.Spec...)
	x.Owners = appendUnique(slices.Clone(old.Owners), x.Owners...)
	x.ManagedBy = appendUnique(slices.Clone(old.ManagedBy), x.ManagedBy...)
	if len(x.Conditions) == 0 {
		x.Conditions = old.Conditions
	}
	if len(x.Data) == 0 {
		x.Data = old.Data
	}
	if x.CreatedAt == nil {
		x.CreatedAt = old.CreatedAt
	}
	if x.CompletedAt == nil {
		x.CompletedAt = old.CompletedAt
	}
	x.Listed = x.Listed && old.Listed
	return x
}
