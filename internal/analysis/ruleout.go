package analysis

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

type ruler struct {
	ev    *Evidence
	leads map[string]bool
	seen  map[string]bool
	out   []*investigationv1.RuledOut
}

func (r *ruler) add(mode, alternative, reason string, c Cite) {
	if r.leads[mode] || r.seen[mode] {
		return
	}
	r.seen[mode] = true
	r.out = append(r.out, &investigationv1.RuledOut{Alternative: alternative, Reason: reason, PinIds: c.PinIDs})
}

// ruleOut lists the common alternatives the evidence contradicts, each with
// the reason taken from the evidence, plus the findings the leading ones
// explain as symptoms.
func (ev *Evidence) ruleOut(leads []Finding, findings []Finding) []*investigationv1.RuledOut {
	r := &ruler{ev: ev, leads: map[string]bool{}, seen: map[string]bool{}}
	healthy := leads[0].Healthy
	for _, l := range leads {
		r.leads[l.Mode] = true
	}
	// 1. Symptoms the leading findings explain.
	for _, l := range leads {
		for m, why := range l.Explains {
			if m == explainsAll {
				continue // every other finding: each is ruled out below with this lead's statement
			}
			r.add(m, altName(m), why, Cite{PinIDs: l.PinIDs})
		}
	}
	// 2. Weaker fault findings.
	for _, f := range findings {
		if f.Healthy || r.leads[f.Mode] || r.seen[f.Mode] {
			continue
		}
		if healthy {
			r.add(f.Mode, altName(f.Mode), "not a current failure: "+leads[0].Statement, Cite{PinIDs: f.PinIDs})
		} else if f.Score < minFaultScore {
			r.add(f.Mode, altName(f.Mode), fmt.Sprintf("weaker evidence (%.2f) than the leading explanation, which accounts for the same symptoms", f.Score), Cite{PinIDs: f.PinIDs})
		}
	}
	if len(ev.Pods)+len(ev.Events)+len(ev.Nodes)+len(ev.Deployments) > 0 {
		r.kubernetes(leads)
	}
	if v := ev.db(); v.present() {
		r.database(v, leads)
	}
	r.commits(leads)
	r.changes(leads)
	r.exporterDatabases(leads)
	r.statusPages(leads)
	if len(ev.Logs) > 0 && !r.leads[ModeDNSFailure] {
		dns := false
		for _, l := range ev.Logs {
			if dnsNXRe.MatchString(l.Message) || dnsServerRe.MatchString(l.Message) {
				dns = true
			}
		}
		if !dns {
			r.add(ModeDNSFailure, "DNS resolution failure", fmt.Sprintf("no name-resolution errors in %d log lines", len(ev.Logs)), citesOfLogs(ev.Logs))
		}
	}
	return r.out
}

func altName(mode string) string {
	switch mode {
	case ModeOOMKilled:
		return "OOM kill (memory limit)"
	case ModeImagePull:
		return "Image pull failure"
	case ModeCrashLoop:
		return "Application crash (CrashLoopBackOff)"
	case ModeProbeFailure:
		return "Liveness/readiness probe failure"
	case ModeUnschedulable:
		return "Scheduling failure (insufficient capacity)"
	case ModeQuotaExceeded:
		return "ResourceQuota exhaustion"
	case ModeDNSFailure:
		return "DNS resolution failure"
	case ModeNodeNotReady:
		return "Node failure (NotReady)"
	case ModeNodePressure:
		return "Node resource pressure"
	case ModeRolloutStuck:
		return "Stuck rollout"
	case ModeReplicationLag:
		return "Independent replication problem"
	case ModeConnExhaustion:
		return "Connection exhaustion"
	case ModeStorageFull:
		return "Storage exhaustion"
	case ModeCPUQuery:
		return "CPU as the root cause"
	case ModeCheckpointStorm:
		return "Checkpoint storm"
	case ModeFailover:
		return "Failover"
	case ModeVolumeMount:
		return "Volume mount failure"
	case ModeNoEndpoints:
		return "Service without endpoints"
	case ModePortUnserved:
		return "Service port no pod serves"
	case ModeLockContention:
		return "Lock contention"
	case ModeDBMemory:
		return "Database memory pressure"
	case ModeDBIO:
		return "Storage I/O exhaustion"
	case ModeXIDWraparound:
		return "Transaction ID wraparound"
	}
	if strings.Contains(mode, ":") {
		return "Deploy " + strings.SplitN(mode, ":", 2)[1]
	}
	return strings.ReplaceAll(mode, "_", " ")
}

func (r *ruler) kubernetes(leads []Finding) {
	ev := r.ev
	pods := citesOfPods(ev.Pods)
	events := Cite{PinIDs: ev.PinsOf("get_events")}
	if len(ev.Pods) > 0 {
		oom := false
		for _, p := range ev.Pods {
			if ev.oomSignals(p).found() {
				oom = true
			}
		}
		if !oom {
			r.add(ModeOOMKilled, altName(ModeOOMKilled), "not an OOM kill: no container was OOMKilled or exited with code 137 (not OOMKilled)", pods)
		}
		pull := false
		for _, p := range ev.Pods {
			if _, reason := waitingReason(p.Pod); containsFold(reason, "ImagePull", "ErrImage") {
				pull = true
			}
		}
		for _, e := range ev.Events {
			if containsFold(e.Message, "pull") && containsFold(e.Message, "image") && strings.EqualFold(e.Type, "Warning") {
				pull = true
			}
		}
		if !pull {
			r.add(ModeImagePull, altName(ModeImagePull), "no image pull errors: no container is in ErrImagePull/ImagePullBackOff and no Failed pull events", pods)
		}
		pending := false
		for _, p := range ev.Pods {
			if strings.EqualFold(p.Phase, "Pending") {
				pending = true
			}
		}
		if !pending {
			r.add(ModeUnschedulable, altName(ModeUnschedulable), fmt.Sprintf("all %d pods are scheduled on nodes; none is Pending", len(ev.Pods)), pods)
		}
		// Crash / restarts: the workload's other pods are fine.
		var healthy []Pod
		var restarts int32
		for _, p := range ev.Pods {
			if podHealthy(p.Pod) {
				healthy = append(healthy, p)
				restarts += podRestarts(p.Pod)
			}
		}
		crash := false
		for _, p := range ev.Pods {
			if _, reason := waitingReason(p.Pod); strings.EqualFold(reason, "CrashLoopBackOff") {
				if _, sup := ev.superseded(p); !sup {
					crash = true
				}
			}
		}
		if !crash && len(healthy) > 0 {
			what := fmt.Sprintf("existing pods %s are Running and Ready", joinNames(podNames(healthy)))
			if restarts == 0 {
				what += " with 0 restarts"
			} else {
				what += fmt.Sprintf(" (%d restarts in total, none current)", restarts)
			}
			r.add(ModeCrashLoop, altName(ModeCrashLoop), what+"; no container is crash-looping", citesOfPods(healthy))
		}
	}
	if ev.Queried("get_events") {
		probe := false
		quota := false
		for _, e := range ev.Events {
			if e.Reason == "Unhealthy" || containsFold(e.Message, "probe failed") {
				if ev.recent(lastEventTime([]Event{e}), recentWindow) {
					probe = true
				}
			}
			if containsFold(e.Message, "exceeded quota") {
				quota = true
			}
		}
		if !probe {
			r.add(ModeProbeFailure, altName(ModeProbeFailure), "no current liveness/readiness probe failure events", events)
		}
		if !quota {
			r.add(ModeQuotaExceeded, altName(ModeQuotaExceeded), "not quota: no FailedCreate / 'exceeded quota' events", events)
		}
	}
	if len(ev.Nodes) > 0 {
		var readyNodes []Node
		for _, n := range ev.Nodes {
			if nodeReadyStatus(n.Node) == "True" && len(nodePressures(n.Node)) == 0 {
				readyNodes = append(readyNodes, n)
			}
		}
		var nc Cite
		for _, n := range readyNodes {
			nc.merge(n.Cite)
		}
		if len(readyNodes) == len(ev.Nodes) {
			r.add(ModeNodeNotReady, altName(ModeNodeNotReady), fmt.Sprintf("all %d nodes are currently Ready with no memory/disk/PID pressure", len(ev.Nodes)), nc)
			r.add(ModeNodePressure, altName(ModeNodePressure), "no node reports MemoryPressure, DiskPressure or PIDPressure", nc)
		} else if r.leads[ModeNodeNotReady] {
			for _, n := range readyNodes {
				var on []Pod
				for _, p := range ev.Pods {
					if p.Node == n.Name && podHealthy(p.Pod) {
						on = append(on, p)
					}
				}
				reason := fmt.Sprintf("node %s is a healthy node: Ready with no pressure", n.Name)
				if len(on) > 0 {
					reason += fmt.Sprintf(", and pods on it (%s) are Running and Ready — the application is not at fault", joinNames(podNames(on)))
				}
				r.add("app_or_cluster_"+n.Name, "Application or cluster-wide failure", reason, nc)
			}
		}
	}
	if len(ev.Monitors) > 0 && leads[0].Healthy {
		ok := true
		for _, m := range ev.Monitors {
			if !strings.EqualFold(m.State, "OK") {
				ok = false
			}
		}
		if ok {
			var c Cite
			for _, m := range ev.Monitors {
				c.merge(m.Cite)
			}
			r.add("user_impact", "Ongoing user impact", fmt.Sprintf("all %d monitors are OK (error rate, latency, restarts)", len(ev.Monitors)), c)
		}
	}
}

func (r *ruler) database(v *dbView, leads []Finding) {
	if cpu := v.change("CPUUtilization"); cpu.ok && cpu.tail < 80 && cpu.peak < 90 {
		r.add(ModeCPUQuery, "CPU-bound workload", fmt.Sprintf("CPUUtilization peaks at %s (latest %s): CPU is not the bottleneck", pct(cpu.peak), pct(cpu.s.Latest)), cpu.s.Cite)
	}
	conns := v.change("DatabaseConnections")
	max, _ := v.maxConnections()
	if len(v.eventsMatching(refusalSigs...)) == 0 && (max == 0 || !conns.ok || conns.peak < 0.8*max) {
		if conns.ok {
			r.add(ModeConnExhaustion, altName(ModeConnExhaustion), fmt.Sprintf("DatabaseConnections between %s and %s with no refused connections or max_connections events: connections are not exhausted", num(conns.min), num(conns.peak)), conns.s.Cite)
		} else if len(v.events) > 0 {
			r.add(ModeConnExhaustion, altName(ModeConnExhaustion), "no refused-connection or max_connections events", citesOfDBEvents(v.events))
		}
	}
	if st := v.change("FreeStorageSpace"); st.ok && st.min > 0.2*math.Max(st.head, st.peak) {
		r.add(ModeStorageFull, altName(ModeStorageFull), fmt.Sprintf("FreeStorageSpace stays at %s or more: storage is not exhausted", bytesHuman(st.min)), st.s.Cite)
	}
	if lag := v.change("ReplicaLag"); lag.ok && lag.peak < 60 {
		r.add(ModeReplicationLag, "Replication lag", fmt.Sprintf("ReplicaLag stays at or below %s s", num(lag.peak)), lag.s.Cite)
	}
	fo := v.failoverEvents()
	if len(fo) > 0 && !v.current(fo, r.ev) {
		last := fo[len(fo)-1]
		onset := ""
		if v.windowStart != nil && last.Time != nil {
			onset = fmt.Sprintf(", %s before the telemetry window of this incident (from %s)", durHuman(v.windowStart.Sub(*last.Time)), hhmm(v.windowStart))
		}
		r.add(ModeFailover, "Failover / maintenance", fmt.Sprintf("the Multi-AZ failover events are historical: the failover completed at %s and the instance was available again%s — resolved, not the cause", hhmm(last.Time), onset), citesOfDBEvents(fo))
	} else if len(fo) == 0 && len(v.events) > 0 {
		r.add(ModeFailover, "Failover", "no failover events in the RDS event log", citesOfDBEvents(v.events))
	}
	var maint []DBEvent
	for _, e := range v.events {
		if !v.isCurrent(e) && containsFold(e.Message, "maintenance", "upgrade", "reboot", "restart", "promoted", "parameter group") {
			maint = append(maint, e)
		}
	}
	if len(maint) > 0 {
		last := maint[len(maint)-1]
		r.add("maintenance", "Maintenance / configuration events", fmt.Sprintf("%s (latest at %s: %s) completed before the incident window: historical, not the cause", plural(len(maint), "maintenance/configuration event", "maintenance/configuration events"), hhmm(last.Time), quote(last.Message)), citesOfDBEvents(maint))
	}
}

// leadText is everything the leading findings say.
func leadText(leads []Finding) string {
	var b strings.Builder
	for _, l := range leads {
		b.WriteString(l.Statement)
		b.WriteByte('\n')
		b.WriteString(l.Entity)
		b.WriteByte('\n')
		for _, c := range l.Validated {
			b.WriteString(c.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var reSourceFile = regexp.MustCompile(`[A-Za-z0-9_./-]+\.(?:go|py|java|kt|js|ts|rb|rs|cs|php|scala|sql|yaml|yml|json)\b`)

// commits rules out the commits in evidence that the leading explanation
// does not blame, each with the reason the evidence gives.
func (r *ruler) commits(leads []Finding) {
	ev := r.ev
	if len(ev.Commits) == 0 || leads[0].Healthy && !leads[0].Overrides {
		return
	}
	text := leadText(leads)
	files := reSourceFile.FindAllString(text, -1)
	for _, c := range ev.Commits {
		sha := short(c.SHA)
		if sha == "" || strings.Contains(text, sha) {
			continue
		}
		var why []string
		var touched []string
		for _, f := range c.Files {
			touched = append(touched, f.Path)
		}
		if len(files) > 0 {
			hit := false
			for _, f := range files {
				for _, t := range touched {
					if strings.HasSuffix(t, strings.TrimLeft(f, "./")) || strings.HasSuffix(f, t) {
						hit = true
					}
				}
			}
			if !hit && len(touched) > 0 {
				why = append(why, fmt.Sprintf("it does not touch %s, where the failure is raised (it changes %s)", joinNames(files[:min(2, len(files))]), joinNames(touched[:min(3, len(touched))])))
			}
		}
		if len(c.ChangeTypes) > 0 {
			why = append(why, fmt.Sprintf("its change (%s) does not fit the failure mode (%s)", strings.Join(c.ChangeTypes, ", "), strings.ReplaceAll(leads[0].Mode, "_", " ")))
		}
		if d := deployOf(c, ev.Deploys); d != nil && d.FinishedAt != nil {
			why = append(why, fmt.Sprintf("it shipped in release %s (%s)", d.Revision, hhmm(d.FinishedAt)))
		}
		if len(why) == 0 {
			why = append(why, "nothing in the evidence ties it to the failure")
		}
		msg := clip(c.Message, 80)
		r.add("commit:"+c.SHA, fmt.Sprintf("Commit %s (%s)", sha, msg), fmt.Sprintf("commit %s is not at fault: %s", sha, strings.Join(why, "; ")), c.Cite)
	}
}

// deployOf is the deploy whose revision is the commit.
func deployOf(c Commit, ds []Deploy) *Deploy {
	for i := range ds {
		if ds[i].Revision != "" && (strings.HasPrefix(c.SHA, ds[i].Revision) || strings.HasPrefix(ds[i].Revision, c.SHA)) {
			return &ds[i]
		}
	}
	return nil
}

// exporterDatabases rules out databases whose exporter series show them up
// and with connection headroom, when the leading explanation is not one.
func (r *ruler) exporterDatabases(leads []Finding) {
	ev := r.ev
	if leads[0].Healthy || strings.HasPrefix(leads[0].Entity, "db/") {
		return
	}
	type dbState struct {
		up, conns, max float64
		hasUp, hasConn bool
		cite           Cite
	}
	dbs := map[string]*dbState{}
	var order []string
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		var prefix string
		for _, p := range []string{"pg_", "mysql_", "mongodb_", "redis_"} {
			if strings.HasPrefix(n, p) {
				prefix = p
			}
		}
		if prefix == "" {
			continue
		}
		inst := labelOf(s.Series, "instance", "server", "cluster")
		if h, _, ok := strings.Cut(inst, ":"); ok {
			inst = h
		}
		if inst == "" {
			continue
		}
		d := dbs[inst]
		if d == nil {
			d = &dbState{}
			dbs[inst] = d
			order = append(order, inst)
		}
		d.cite.merge(s.Cite)
		switch {
		case strings.HasSuffix(n, "_up"):
			d.up, d.hasUp = s.Latest, true
		case strings.Contains(n, "max_connections"):
			d.max = s.Latest
		case strings.Contains(n, "activity_count") || strings.Contains(n, "connected_clients") || strings.Contains(n, "threads_connected"):
			d.conns += s.Peak
			d.hasConn = true
		}
	}
	for _, inst := range order {
		d := dbs[inst]
		var parts []string
		if d.hasUp {
			if d.up < 1 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s reports up (pg_up/up = %s)", inst, num(d.up)))
		}
		if d.hasConn && d.max > 0 {
			if d.conns >= 0.8*d.max {
				continue
			}
			parts = append(parts, fmt.Sprintf("at most %s of %s connections in use", num(d.conns), num(d.max)))
		} else if d.hasConn {
			parts = append(parts, fmt.Sprintf("at most %s connections in use", num(d.conns)))
		}
		if len(parts) == 0 {
			continue
		}
		r.add("database:"+inst, "Database "+inst+" failure or saturation", fmt.Sprintf("database %s is not at fault: %s", inst, strings.Join(parts, ", ")), d.cite)
	}
}

// changes rules out the ledger's other rows: the deploys and object edits
// the leading explanation does not rest on, each with the concrete reason
// (it came after the alert, it belongs to a service no symptom names, it
// is in another namespace, or the leading explanation accounts for the
// symptoms without it).
func (r *ruler) changes(leads []Finding) {
	ev := r.ev
	text := strings.ToLower(leadText(leads))
	alertAt := ev.alertTime()
	alerted := ""
	if _, name := splitEntity(ev.workloadEntity()); name != "" {
		alerted = strings.ToLower(name)
	}
	base := "the leading explanation accounts for the symptoms without it"
	if leads[0].Healthy {
		base = "no fault is active: " + clip(leads[0].Statement, 160)
	}
	reason := func(at *time.Time, owner string, elsewhere bool) string {
		switch {
		case at != nil && alertAt != nil && at.After(alertAt.Add(time.Minute)):
			return fmt.Sprintf("it happened at %s, after the alert fired at %s: it cannot have caused it", hhmm(at), hhmm(alertAt))
		case elsewhere:
			return "it is in another namespace and touches nothing the alert names; " + base
		case owner != "" && alerted != "" && !strings.EqualFold(owner, alerted) && !strings.Contains(text, strings.ToLower(owner)):
			return fmt.Sprintf("it belongs to %s, which none of the failing entity's symptoms names; %s", owner, base)
		}
		return base
	}
	for _, d := range ev.Deploys {
		if d.Revision == "" || strings.Contains(text, strings.ToLower(d.Revision)) {
			continue
		}
		t := d.FinishedAt
		if t == nil {
			t = d.StartedAt
		}
		what := fmt.Sprintf("Deploy of %s %s -> %s at %s", firstNonEmptyStr(d.Service, "a service"), firstNonEmptyStr(d.PreviousRevision, "?"), d.Revision, hhmm(t))
		r.add("deploy:"+d.Service+":"+d.Revision, what, reason(t, d.Service, false), d.Cite)
	}
	for _, c := range ev.objectChanges() {
		if c.entity == "" || strings.Contains(text, strings.ToLower(c.entity)) {
			continue
		}
		_, name := splitEntity(c.entity)
		if name != "" && strings.Contains(text, strings.ToLower(name)) {
			continue
		}
		r.add("change:"+c.entity, "Change: "+c.text, reason(c.at, "", c.unrelated), c.cite)
	}
}
