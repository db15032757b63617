package analysis

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// dbView gathers the managed-database evidence once.
type dbView struct {
	instance, replica string
	series            map[string]Series // by lower-case metric name
	tops              []TopQuery        // by load, desc
	totalLoad         float64
	waits             map[string]float64
	events            []DBEvent
	windowStart       *time.Time
}

// db returns the database view, built once per Evidence (safe for
// concurrent detectors).
func (ev *Evidence) db() *dbView {
	ev.dbOnce.Do(func() { ev.dbView = ev.buildDB() })
	return ev.dbView
}

func (ev *Evidence) buildDB() *dbView {
	v := &dbView{series: map[string]Series{}, waits: map[string]float64{}}
	all := map[string][]Series{}
	for _, s := range ev.Series {
		if !isDBMetric(s.Series) {
			continue
		}
		k := strings.ToLower(s.Name)
		all[k] = append(all[k], s)
		if st := seriesStart(s.Series); st != nil && (v.windowStart == nil || st.Before(*v.windowStart)) {
			v.windowStart = st
		}
	}
	v.tops = append(v.tops, ev.TopQueries...)
	sort.SliceStable(v.tops, func(i, j int) bool { return v.tops[i].Load > v.tops[j].Load })
	for _, q := range v.tops {
		v.totalLoad += q.Load
		for _, w := range q.WaitEvents {
			v.waits[w.Name] += w.Load
		}
	}
	v.events = ev.DBEvents
	v.instance = ev.alertField("db_instance_identifier", "db_instance", "dbinstanceidentifier", "instance")
	if v.instance == "" && ev.Alert != nil && ev.Alert.GetResourceName() != "" {
		v.instance = ev.Alert.GetResourceName()
	}
	if v.instance == "" {
		for _, q := range v.tops {
			if q.Instance != "" {
				v.instance = q.Instance
				break
			}
		}
	}
	if v.instance == "" {
		if ss := all["cpuutilization"]; len(ss) > 0 {
			v.instance = instanceOf(ss[0].Series)
		}
	}
	// One series per metric: the alerted instance's when several instances
	// report it (a replica's ReplicaLag for replication lag), else the first.
	for k, ss := range all {
		pick := ss[0]
		for _, s := range ss {
			inst := instanceOf(s.Series)
			if k == "replicalag" {
				if inst != "" && inst != v.instance {
					pick = s
					break
				}
				continue
			}
			if v.instance != "" && inst == v.instance {
				pick = s
				break
			}
		}
		v.series[k] = pick
	}
	if s, ok := v.series["replicalag"]; ok {
		v.replica = instanceOf(s.Series)
	}
	if r := ev.alertField("read_replica", "replica"); r != "" {
		v.replica = r
	}
	if v.replica == "" {
		for _, e := range v.events {
			if strings.Contains(strings.ToLower(e.SourceID), "replica") {
				v.replica = e.SourceID
				break
			}
		}
	}
	if v.instance == "" {
		for _, e := range v.events {
			if e.SourceID != "" && e.SourceID != v.replica {
				v.instance = e.SourceID
				break
			}
		}
	}
	return v
}

func (v *dbView) present() bool { return len(v.series) > 0 || len(v.tops) > 0 || len(v.events) > 0 }

func (v *dbView) entity() string {
	if v.instance == "" {
		return "db/unknown"
	}
	return "db/" + v.instance
}

func (v *dbView) metric(name string) (Series, bool) {
	s, ok := v.series[strings.ToLower(name)]
	return s, ok
}

func (v *dbView) waitShare(pred func(string) bool) float64 {
	var sum, tot float64
	for n, l := range v.waits {
		tot += l
		if pred(n) {
			sum += l
		}
	}
	if tot == 0 {
		return 0
	}
	return sum / tot
}

func (v *dbView) waitLoad(pred func(string) bool) float64 {
	var sum float64
	for n, l := range v.waits {
		if pred(n) {
			sum += l
		}
	}
	return sum
}

// dominantWaits lists the heaviest waits, "name (load AAS)".
func (v *dbView) dominantWaits(n int) string {
	type kv struct {
		k string
		v float64
	}
	var xs []kv
	for k, l := range v.waits {
		xs = append(xs, kv{k, l})
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || (xs[i].v == xs[j].v && xs[i].k < xs[j].k) })
	var parts []string
	for i, x := range xs {
		if i >= n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s AAS)", x.k, num(x.v)))
	}
	return strings.Join(parts, ", ")
}

func isCPUWait(n string) bool { return strings.HasPrefix(strings.ToUpper(n), "CPU") }
func isWALWait(n string) bool { return strings.Contains(strings.ToUpper(n), "WAL") }
func isClientWait(n string) bool {
	return strings.HasPrefix(strings.ToLower(n), "client:")
}

func queryWait(q TopQuery, pred func(string) bool) float64 {
	var s float64
	for _, w := range q.WaitEvents {
		if pred(w.Name) {
			s += w.Load
		}
	}
	return s
}

func stmtVerb(stmt string) string {
	s := strings.TrimSpace(strings.ToUpper(stmt))
	s = strings.TrimPrefix(s, "BEGIN;")
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\n("); i > 0 {
		return s[:i]
	}
	return s
}

func isWriteStmt(stmt string) bool {
	switch stmtVerb(stmt) {
	case "INSERT", "UPDATE", "DELETE", "COPY", "MERGE", "UPSERT":
		return true
	}
	return false
}

func isBulkLoad(stmt string) bool {
	u := strings.ToUpper(stmt)
	return (stmtVerb(stmt) == "INSERT" && strings.Contains(u, " SELECT ")) || (stmtVerb(stmt) == "COPY" && strings.Contains(u, "FROM"))
}

func isMaintenance(stmt string) bool {
	return containsFold(stmt, "vacuum", "autovacuum", "checkpointer", "analyze ", "reindex")
}

func sqlQuote(stmt string) string { return "`" + clip(stmt, 110) + "`" }

// change describes a metric's move from its start to its tail.
type change struct {
	s                Series
	ok               bool
	head, tail, peak float64
	min              float64
	ratio            float64
	onset            *time.Time
}

func (v *dbView) change(name string) change {
	s, ok := v.metric(name)
	if !ok || s.Count == 0 && len(s.Downsampled) == 0 {
		return change{}
	}
	c := change{s: s, ok: true, tail: seriesTailMedian(s.Series), peak: s.Peak, min: s.Min, onset: onsetOf(s.Series)}
	c.head, _ = seriesFirst(s.Series)
	if c.head == 0 && s.Baseline != 0 {
		c.head = s.Baseline
	}
	c.ratio = c.tail / math.Max(math.Abs(c.head), 1e-9)
	return c
}

// byteRate formats a per-second byte metric.
func byteRate(v float64) string { return bytesHuman(v) + "/s" }

var (
	ofMaxRe       = regexp.MustCompile(`(?i)(\d[\d,]*)\s+(?:of|/)\s+(\d[\d,]*)`)
	maxOfRe       = regexp.MustCompile(`(?i)(?:maximum|max_connections|limit)(?: of| is|:|=)?\s+(\d[\d,]*)`)
	gbOfRe        = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*GB\s*(?:remaining|free)?\s*(?:of|/)\s*(\d+(?:\.\d+)?)\s*GB`)
	gbRemainingRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*GB\s*(?:remaining|free|left)`)
)

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return f
}

// eventsMatching returns the current events (inside or just before the
// telemetry window) whose message contains one of subs; older events are
// history and are judged separately (ruled out as historical).
func (v *dbView) eventsMatching(subs ...string) []DBEvent {
	var out []DBEvent
	for _, e := range v.events {
		if containsFold(e.Message, subs...) && v.isCurrent(e) {
			out = append(out, e)
		}
	}
	return out
}

func (v *dbView) isCurrent(e DBEvent) bool {
	if v.windowStart == nil || e.Time == nil {
		return true
	}
	return !e.Time.Before(v.windowStart.Add(-30 * time.Minute))
}

func dbEventLine(e DBEvent) string {
	src := ""
	if e.SourceID != "" {
		src = e.SourceID + ", "
	}
	return fmt.Sprintf("RDS event (%s%s): %s", src, hhmm(e.Time), quote(e.Message))
}

func citesOfDBEvents(es []DBEvent) Cite {
	var c Cite
	for _, e := range es {
		c.merge(e.Cite)
	}
	return c
}

// topWrite returns the heaviest write statement.
func (v *dbView) topWrite() (TopQuery, bool) {
	for _, q := range v.tops {
		if isWriteStmt(q.Statement) && !isMaintenance(q.Statement) {
			return q, true
		}
	}
	return TopQuery{}, false
}

// topCPU returns the statement with the most CPU wait.
func (v *dbView) topCPU() (TopQuery, float64, bool) {
	var best TopQuery
	var bl float64
	for _, q := range v.tops {
		if c := queryWait(q, isCPUWait); c > bl {
			best, bl = q, c
		}
	}
	return best, bl, bl > 0
}

func (v *dbView) describeQuery(q TopQuery) string {
	s := fmt.Sprintf("%s at %s AAS", sqlQuote(q.Statement), num(q.Load))
	if v.totalLoad > 0 {
		s += fmt.Sprintf(" (%s of top-SQL load)", pct(100*q.Load/v.totalLoad))
	}
	if len(q.WaitEvents) > 0 {
		var ws []string
		for _, w := range q.WaitEvents {
			ws = append(ws, fmt.Sprintf("%s %s", w.Name, num(w.Load)))
		}
		s += ", waits " + strings.Join(ws, ", ")
	}
	if q.CallsPerSec > 0 {
		s += fmt.Sprintf(", %s calls/s", num(q.CallsPerSec))
	}
	return s
}

func (v *dbView) cpuElevated() (change, bool) {
	c := v.change("CPUUtilization")
	return c, c.ok && c.tail >= 30 && c.tail >= 1.5*math.Max(c.head, 1)
}

// ---- replication lag ----

func detectReplicationLag(ev *Evidence) []Finding {
	v := ev.db()
	if !v.present() {
		return nil
	}
	lag := v.change("ReplicaLag")
	lagEvents := v.eventsMatching("replication lag", "replica lag", "behind the source", "behind primary", "behind the primary", "replay is behind")
	metricLag := lag.ok && lag.peak >= 60 && lag.tail >= 30
	if !metricLag && len(lagEvents) == 0 {
		return nil
	}
	f := Finding{Mode: ModeReplicationLag, Category: catResource, Entity: v.entity()}
	score := 0.0
	replica := v.replica
	if replica == "" {
		replica = "the read replica"
	}
	var facts []string
	if metricLag {
		if lag.peak >= 300 {
			score += 0.55
		} else {
			score += 0.35
		}
		facts = append(facts, fmt.Sprintf("ReplicaLag on %s climbed from %s s to %s s (CloudWatch)", replica, num(lag.head), num(lag.peak)))
		f.validated(fmt.Sprintf("CloudWatch ReplicaLag on %s rose from %s s to %s s (latest %s s)", replica, num(lag.head), num(lag.peak), num(lag.s.Latest)), lag.s.Cite)
	} else {
		f.inferred("The CloudWatch ReplicaLag metric is not available for " + replica + "; the lag is established from RDS events and the write workload")
	}
	if len(lagEvents) > 0 {
		score += 0.3
		if !metricLag {
			score += 0.2
		}
		facts = append(facts, "RDS events: "+quote(lagEvents[len(lagEvents)-1].Message))
		for _, e := range lagEvents {
			f.validated(dbEventLine(e), e.Cite)
		}
	}
	tlg := v.change("TransactionLogsGeneration")
	wio := v.change("WriteIOPS")
	var drivers []string
	if tlg.ok && tlg.ratio >= 3 {
		score += 0.1
		drivers = append(drivers, fmt.Sprintf("WAL generation (TransactionLogsGeneration) rose from %s to %s", byteRate(tlg.head), byteRate(tlg.tail)))
		f.validated(fmt.Sprintf("CloudWatch TransactionLogsGeneration rose from %s to %s (peak %s)", byteRate(tlg.head), byteRate(tlg.tail), byteRate(tlg.peak)), tlg.s.Cite)
	}
	if wio.ok && wio.ratio >= 3 {
		score += 0.05
		drivers = append(drivers, fmt.Sprintf("WriteIOPS from %s to %s", num(wio.head), num(wio.tail)))
		f.validated(fmt.Sprintf("CloudWatch WriteIOPS rose from %s to %s", num(wio.head), num(wio.tail)), wio.s.Cite)
	}
	wq, hasWrite := v.topWrite()
	walShare := v.waitShare(isWALWait)
	if hasWrite && walShare >= 0.3 {
		score += 0.1
	}
	if hasWrite {
		kind := "write"
		if isBulkLoad(wq.Statement) {
			kind = "bulk INSERT ... SELECT load (an ETL/batch job)"
		}
		d := fmt.Sprintf("Performance Insights top SQL is the %s %s", kind, v.describeQuery(wq))
		drivers = append(drivers, d)
		f.validated(d, wq.Cite)
	}
	f.Score = math.Min(score, 0.95)
	primary := v.instance
	f.Statement = fmt.Sprintf("Replication lag: %s cannot keep up with a write-heavy workload on primary %s, which generates WAL faster than the replica can replay it", replica, primary)
	if len(facts) > 0 {
		f.Statement += " — " + strings.Join(facts, "; ")
	}
	if len(drivers) > 0 {
		f.Statement += "; " + strings.Join(drivers, "; ")
	}
	if walShare > 0 {
		f.validated(fmt.Sprintf("Performance Insights dominant waits: %s (WAL-related share %s)", v.dominantWaits(3), pct(100*walShare)), citesOfTop(v.tops))
	}
	// CPU: same workload or an independent one?
	if cpu, up := v.cpuElevated(); up {
		cq, cl, ok := v.topCPU()
		if ok && hasWrite && cq.Statement != wq.Statement && !isWriteStmt(cq.Statement) {
			reason := fmt.Sprintf("CPU rose from %s to %s (peak %s) because of a different workload: %s with %s AAS of CPU wait — causally independent of the replication lag, which is driven by WAL from the %s workload", pct(cpu.head), pct(cpu.tail), pct(cpu.peak), sqlQuote(cq.Statement), num(cl), stmtVerb(wq.Statement))
			f.inferred(reason, cpu.s.Cite, cq.Cite)
			f.explains(ModeCPUQuery, reason)
		} else {
			reason := fmt.Sprintf("CPU rose from %s to %s along with the same write workload; it is a side effect of the writes, not a separate CPU problem", pct(cpu.head), pct(cpu.tail))
			f.inferred(reason, cpu.s.Cite)
			f.explains(ModeCPUQuery, reason)
		}
	}
	f.inferred(fmt.Sprintf("WAL replay on %s is the bottleneck: the replica applies changes more slowly than %s produces them", replica, primary))
	f.Chain = []string{
		fmt.Sprintf("A write-heavy workload starts on %s", primary),
		"WAL (transaction log) generation rises sharply",
		fmt.Sprintf("%s replays WAL more slowly than it is produced", replica),
		"ReplicaLag grows: reads from the replica return stale data",
	}
	f.Remediation = []string{
		"Throttle or batch the write job (smaller transactions, off-peak scheduling)",
		"Scale the replica (instance class, storage IOPS) so WAL replay keeps up; route freshness-sensitive reads to the primary meanwhile",
	}
	f.Signals = []string{"replication lag", "WAL", "replica"}
	f.Sources = appendUnique([]string{}, f.Sources...)
	return []Finding{f}
}

func citesOfTop(qs []TopQuery) Cite {
	var c Cite
	for _, q := range qs {
		c.merge(q.Cite)
	}
	return c
}

// ---- connection exhaustion ----

func (v *dbView) maxConnections() (float64, []DBEvent) {
	var max float64
	var evs []DBEvent
	for _, e := range v.events {
		if !containsFold(e.Message, "connection") || !v.isCurrent(e) {
			continue
		}
		if m := ofMaxRe.FindStringSubmatch(e.Message); m != nil {
			if x := atof(m[2]); x > max {
				max = x
			}
			evs = append(evs, e)
			continue
		}
		if m := maxOfRe.FindStringSubmatch(e.Message); m != nil {
			if x := atof(m[1]); x > max {
				max = x
			}
			evs = append(evs, e)
		}
	}
	return max, evs
}

var refusalSigs = []string{"too many connections", "too many clients", "remaining connection slots", "connections may be refused", "connection refused", "new connections are being refused", "max_connections"}

func detectConnectionExhaustion(ev *Evidence) []Finding {
	v := ev.db()
	if !v.present() {
		return nil
	}
	conns := v.change("DatabaseConnections")
	max, maxEvents := v.maxConnections()
	refusals := v.eventsMatching(refusalSigs...)
	var refusalLogs []LogLine
	for _, l := range ev.Logs {
		if containsFold(l.Message, refusalSigs...) {
			refusalLogs = append(refusalLogs, l)
		}
	}
	near := conns.ok && max > 0 && conns.peak >= 0.9*max
	if !near && !(len(refusals)+len(refusalLogs) > 0 && (!conns.ok || conns.ratio >= 1.2 || (max > 0 && conns.peak >= 0.8*max))) {
		return nil
	}
	f := Finding{Mode: ModeConnExhaustion, Category: catResource, Entity: v.entity(), Score: 0.8}
	desc := "connections"
	if conns.ok {
		desc = fmt.Sprintf("DatabaseConnections climbed from %s to %s (CloudWatch)", num(conns.head), num(conns.peak))
		f.validated(fmt.Sprintf("CloudWatch DatabaseConnections rose from %s to %s (latest %s)", num(conns.head), num(conns.peak), num(conns.s.Latest)), conns.s.Cite)
	}
	if max > 0 {
		desc += fmt.Sprintf(", %s of max_connections %s", pct(100*math.Max(conns.peak, 0)/max), num(max))
		f.Score += 0.05
	}
	f.Statement = fmt.Sprintf("Connection exhaustion on %s: %s", v.instance, desc)
	for _, e := range maxEvents {
		f.validated(dbEventLine(e), e.Cite)
	}
	for _, e := range refusals {
		if !containsEvent(maxEvents, e) {
			f.validated(dbEventLine(e), e.Cite)
		}
	}
	if len(refusals) > 0 {
		f.Statement += "; clients are refused: " + quote(refusals[len(refusals)-1].Message)
	}
	for i, l := range refusalLogs {
		if i < 3 {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
	}
	clientShare := v.waitShare(isClientWait)
	if clientShare >= 0.4 {
		f.Score += 0.05
		var cq TopQuery
		var cl float64
		for _, q := range v.tops {
			if w := queryWait(q, isClientWait); w > cl {
				cq, cl = q, w
			}
		}
		clientWait := "Client:ClientRead"
		for n := range v.waits {
			if isClientWait(n) && v.waits[n] > v.waits[clientWait] {
				clientWait = n
			}
		}
		f.Statement += fmt.Sprintf("; Performance Insights shows %s as the dominant wait (%s of load) on %s: client sessions hold connections open while idle in transaction, i.e. the application's connection pool leaks sessions instead of returning them (connection pool leak)",
			clientWait, pct(100*clientShare), v.describeQuery(cq))
		f.validated(fmt.Sprintf("Performance Insights: %s is the dominant wait (%s AAS, %s of load); top SQL %s", clientWait, num(v.waits[clientWait]), pct(100*clientShare), v.describeQuery(cq)), cq.Cite)
		f.inferred("Sessions waiting on Client:ClientRead are idle: the database waits for the client, which keeps the transaction and the connection open — a connection pool leak in the application")
		f.Remediation = []string{
			"Fix the connection pool leak: return/close connections and end transactions; set idle_in_transaction_session_timeout",
			"Terminate the idle-in-transaction client sessions to restore headroom; put a pooler (RDS Proxy/PgBouncer) in front",
		}
	} else {
		f.inferred("More clients open connections than the instance allows; new sessions are refused")
		f.Remediation = []string{"Reduce connections per client (pool sizes) or add a pooler (RDS Proxy/PgBouncer)", "Raise max_connections only with enough memory (larger instance class)"}
	}
	if cpu, up := v.cpuElevated(); up {
		reason := fmt.Sprintf("CPU rose from %s to %s (peak %s) as a consequence of the same root cause: the backend processes of %s open connections add per-connection work; it is not an unrelated fault", pct(cpu.head), pct(cpu.tail), pct(cpu.peak), num(conns.peak))
		f.inferred(reason, cpu.s.Cite)
		f.explains(ModeCPUQuery, reason)
	} else if cpu := v.change("CPUUtilization"); cpu.ok && cpu.tail >= 80 {
		reason := fmt.Sprintf("CPU at %s is downstream of the same root cause: %s connections held open by the leaking pool keep backends busy; not an unrelated fault", pct(cpu.tail), num(conns.peak))
		f.inferred(reason, cpu.s.Cite)
		f.explains(ModeCPUQuery, reason)
	}
	f.Chain = []string{
		"The application opens connections and does not return them (sessions left idle in transaction)",
		fmt.Sprintf("DatabaseConnections climbs toward max_connections (%s)", num(max)),
		"New connection attempts are refused ('remaining connection slots are reserved')",
		"Application requests fail when the pool cannot get a session",
	}
	if max == 0 {
		f.Chain[1] = "DatabaseConnections climbs toward the instance limit"
	}
	f.Signals = []string{"connection", "max_connections", "Client:ClientRead"}
	return []Finding{f}
}

func containsEvent(es []DBEvent, e DBEvent) bool {
	for _, x := range es {
		if x.Message == e.Message && timeOf(x.Time).Equal(timeOf(e.Time)) {
			return true
		}
	}
	return false
}

// ---- storage ----

// storageFraction parses "X GB remaining of Y GB" from an event.
func storageFraction(msg string) (free, total float64, ok bool) {
	if m := gbOfRe.FindStringSubmatch(msg); m != nil {
		return atof(m[1]), atof(m[2]), atof(m[2]) > 0
	}
	return 0, 0, false
}

var storageCritical = []string{"ran out of storage", "out of storage", "insufficient storage", "storage-full", "storage full", "critically low", "storage is getting low", "no space left", "disk full"}

func storageEventCritical(e DBEvent) bool {
	if free, total, ok := storageFraction(e.Message); ok && free/total > 0.25 {
		return false
	}
	if containsFold(e.Message, storageCritical...) {
		return true
	}
	return containsFold(e.Message, "storage") && containsFold(e.Message, "low") && !containsFold(e.Message, "autoscaling completed")
}

func (v *dbView) storageRecovery() []DBEvent {
	var out []DBEvent
	for _, e := range v.events {
		if containsFold(e.Message, "storage") && containsFold(e.Message, "autoscaling", "increased", "expanded", "modifying storage") {
			out = append(out, e)
		}
	}
	return out
}

func detectStorage(ev *Evidence) []Finding {
	v := ev.db()
	if !v.present() {
		return nil
	}
	st := v.change("FreeStorageSpace")
	var crit []DBEvent
	for _, e := range v.events {
		if containsFold(e.Message, "storage", "space", "disk") && storageEventCritical(e) && v.isCurrent(e) {
			crit = append(crit, e)
		}
	}
	top := math.Max(st.head, st.peak)
	metricLow := st.ok && top > 0 && st.tail <= 0.2*top && st.s.Latest <= 0.25*top
	recovered := st.ok && top > 0 && st.min <= 0.2*top && st.s.Latest >= 0.5*top
	if recovered || (!metricLow && len(crit) == 0) {
		return nil
	}
	if st.ok && !metricLow && len(crit) > 0 {
		// Events say low but the metric disagrees: only trust fresh events.
		if st.s.Latest > 0.5*top {
			return nil
		}
	}
	f := Finding{Mode: ModeStorageFull, Category: catResource, Entity: v.entity()}
	var parts []string
	decisive := false
	for _, e := range crit {
		if containsFold(e.Message, "ran out of storage", "out of storage", "insufficient storage", "storage-full", "storage full", "no space left") {
			decisive = true
		}
	}
	if metricLow {
		f.Score += 0.55
		parts = append(parts, fmt.Sprintf("FreeStorageSpace fell from %s to %s (CloudWatch, minimum %s)", bytesHuman(st.head), bytesHuman(st.s.Latest), bytesHuman(st.min)))
		f.validated(fmt.Sprintf("CloudWatch FreeStorageSpace fell from %s to %s", bytesHuman(st.head), bytesHuman(st.s.Latest)), st.s.Cite)
	} else if !st.ok {
		f.inferred("The CloudWatch FreeStorageSpace metric returned no datapoints; the storage state is established from RDS events and the write symptoms")
	}
	if len(crit) > 0 {
		f.Score += 0.3
		if decisive {
			f.Score += 0.1
		}
		if !metricLow {
			f.Score += 0.25
		}
		for _, e := range crit {
			f.validated(dbEventLine(e), e.Cite)
		}
		parts = append(parts, "RDS events: "+quote(crit[len(crit)-1].Message))
	}
	wio := v.change("WriteIOPS")
	wl := v.change("WriteLatency")
	if wio.ok && wio.peak > 0 && wio.s.Latest <= 0.1*wio.peak && wio.head > 0.3*wio.peak {
		parts = append(parts, fmt.Sprintf("writes are blocked: WriteIOPS dropped from %s to %s", num(wio.peak), num(wio.s.Latest)))
		f.validated(fmt.Sprintf("CloudWatch WriteIOPS dropped from %s to %s", num(wio.peak), num(wio.s.Latest)), wio.s.Cite)
		f.Score += 0.05
	}
	if wl.ok && wl.tail >= 5*math.Max(wl.head, 0.001) {
		parts = append(parts, fmt.Sprintf("WriteLatency rose from %s to %s", num(wl.head), num(wl.tail)))
		f.validated(fmt.Sprintf("CloudWatch WriteLatency rose from %s to %s", num(wl.head), num(wl.tail)), wl.s.Cite)
	}
	if wq, ok := v.topWrite(); ok {
		parts = append(parts, "the dominant writer in Performance Insights is "+v.describeQuery(wq))
		f.validated("Performance Insights top write: "+v.describeQuery(wq), wq.Cite)
	}
	// Table named by events as the storage consumer.
	for _, e := range v.events {
		if containsFold(e.Message, "grown", "storage consumer", "dominant storage") {
			f.validated(dbEventLine(e), e.Cite)
		}
	}
	f.Score = math.Min(f.Score, 0.95)
	state := "is running out of storage space"
	if decisive {
		state = "ran out of storage space"
	}
	f.Statement = fmt.Sprintf("Storage exhaustion on %s: the instance %s — %s", v.instance, state, strings.Join(parts, "; "))
	f.inferred("A write burst consumes free storage faster than it is provisioned; once it is exhausted the instance blocks writes")
	f.Chain = []string{"A sustained write workload grows the data/WAL on disk", "FreeStorageSpace falls toward zero", "The instance runs out of storage space and blocks writes", "Write queries fail or hang; latency spikes"}
	f.Remediation = []string{"Increase allocated storage now (enable storage autoscaling with a sane maximum)", "Stop or throttle the bulk writer; purge/archive the fastest-growing table"}
	f.Signals = []string{"storage", "FreeStorageSpace"}
	conns := v.change("DatabaseConnections")
	if conns.ok && conns.ratio >= 1.5 {
		f.explains(ModeConnExhaustion, fmt.Sprintf("DatabaseConnections rose from %s to %s because writers block on storage and pile up; no connection refusals or max_connections events: a symptom, not connection exhaustion", num(conns.head), num(conns.peak)))
	}
	if v.waitShare(isLockWait) >= 0.5 {
		f.explains(ModeLockContention, fmt.Sprintf("Lock waits (%s) are writers queued behind the blocked storage, not an independent lock problem", v.dominantWaits(1)))
	}
	if lag := v.change("ReplicaLag"); lag.ok && lag.peak >= 30 {
		f.explains(ModeReplicationLag, fmt.Sprintf("ReplicaLag rose to %s s as a downstream symptom of the write stall on the primary, not an independent replication problem", num(lag.peak)))
	}
	return []Finding{f}
}

// ---- CPU-bound query ----

func detectCPUQuery(ev *Evidence) []Finding {
	v := ev.db()
	cpu := v.change("CPUUtilization")
	if !cpu.ok || !(cpu.tail >= 80 || (cpu.peak >= 90 && cpu.tail >= 75)) {
		return nil
	}
	cq, cl, ok := v.topCPU()
	cpuTotal := v.waitLoad(isCPUWait)
	if !ok || isMaintenance(cq.Statement) || v.totalLoad <= 0 || cl < 0.3*v.totalLoad || cl < 0.6*cpuTotal {
		return cpuWithoutCulprit(v, cpu)
	}
	f := Finding{Mode: ModeCPUQuery, Category: catResource, Entity: v.entity(), Score: 0.8}
	if cq.Load >= 0.6*v.totalLoad {
		f.Score = 0.88
	}
	since := ""
	if cpu.onset != nil {
		since = " since " + hhmm(cpu.onset)
	}
	f.Statement = fmt.Sprintf("CPU exhaustion on %s: CPUUtilization is pinned at %s (peak %s, was %s)%s, driven by one query — Performance Insights shows %s; the query burns CPU (CPU:user) rather than waiting on I/O, typical of a full scan or a missing index",
		v.instance, pct(cpu.tail), pct(cpu.peak), pct(cpu.head), since, v.describeQuery(cq))
	f.validated(fmt.Sprintf("CloudWatch CPUUtilization rose from %s to %s (peak %s)", pct(cpu.head), pct(cpu.tail), pct(cpu.peak)), cpu.s.Cite)
	f.validated("Performance Insights top SQL: "+v.describeQuery(cq), cq.Cite)
	f.validated(fmt.Sprintf("Performance Insights waits: %s", v.dominantWaits(3)), citesOfTop(v.tops))
	f.inferred("The statement scans far more rows than it returns (no usable index for its predicate)")
	f.Chain = []string{"A CPU-heavy query runs repeatedly", "It consumes most of the instance's CPU", "Other queries queue for CPU; response times rise and clients time out"}
	f.Remediation = []string{"Add an index for the query's predicate or rewrite it; cancel runaway sessions (pg_cancel_backend)", "Throttle the caller or move the query to a replica"}
	f.Signals = []string{"CPU", "query", "Performance Insights"}
	return []Finding{f}
}

// ---- checkpoint storm / vacuum ----

func detectCheckpointStorm(ev *Evidence) []Finding {
	v := ev.db()
	if !v.present() {
		return nil
	}
	var vac TopQuery
	hasVac := false
	for _, q := range v.tops {
		if containsFold(q.Statement, "vacuum") {
			vac, hasVac = q, true
			break
		}
	}
	ckpt := v.eventsMatching("checkpoint")
	var logCkpt []LogLine
	for _, l := range ev.Logs {
		if containsFold(l.Message, "checkpoint") {
			logCkpt = append(logCkpt, l)
		}
	}
	storm := len(ckpt)+len(logCkpt) >= 2
	vacDominant := hasVac && v.totalLoad > 0 && vac.Load >= 0.3*v.totalLoad
	if !storm && !vacDominant {
		return nil
	}
	f := Finding{Mode: ModeCheckpointStorm, Category: catResource, Entity: v.entity(), Score: 0.7}
	if storm && vacDominant {
		f.Score = 0.9
	}
	var parts []string
	if hasVac {
		parts = append(parts, fmt.Sprintf("a runaway vacuum (%s) dominates the database: %s", clip(vac.Statement, 80), v.describeQuery(vac)))
		f.validated("Performance Insights top SQL: "+v.describeQuery(vac), vac.Cite)
	}
	tlg := v.change("TransactionLogsGeneration")
	if tlg.ok && tlg.ratio >= 3 {
		parts = append(parts, fmt.Sprintf("WAL generation rose from %s to %s", byteRate(tlg.head), byteRate(tlg.tail)))
		f.validated(fmt.Sprintf("CloudWatch TransactionLogsGeneration rose from %s to %s", byteRate(tlg.head), byteRate(tlg.tail)), tlg.s.Cite)
	}
	if storm {
		var msgs []string
		for _, e := range ckpt {
			f.validated(dbEventLine(e), e.Cite)
			if containsFold(e.Message, "too frequently", "storm", "checkpoints completed") {
				msgs = append(msgs, quote(e.Message))
			}
		}
		for _, l := range logCkpt {
			f.validated("Log: "+quote(l.Message), l.Cite)
		}
		if len(msgs) == 0 && len(ckpt) > 0 {
			msgs = append(msgs, quote(ckpt[0].Message))
		}
		parts = append(parts, fmt.Sprintf("the WAL volume forces checkpoint after checkpoint (a checkpoint storm; %s checkpoint log entries: %s)", num(float64(len(ckpt)+len(logCkpt))), strings.Join(msgs, "; ")))
	}
	lw := v.waitLoad(func(n string) bool { return strings.HasPrefix(strings.ToUpper(n), "LWLOCK") })
	cpuW := v.waitLoad(isCPUWait)
	parts = append(parts, fmt.Sprintf("the dominant waits are %s — LWLock %s AAS and WAL/IO rather than CPU:user (%s AAS)", v.dominantWaits(3), num(lw), num(cpuW)))
	f.validated("Performance Insights waits: "+v.dominantWaits(4), citesOfTop(v.tops))
	cpu := v.change("CPUUtilization")
	if cpu.ok && cpu.tail >= 60 {
		reason := fmt.Sprintf("CPUUtilization at %s (from %s) is a symptom: checkpoint flushing, WAL writes and LWLock:BufferMapping contention burn the CPU, while query CPU (CPU:user) is only %s AAS — CPU is not the root cause", pct(cpu.tail), pct(cpu.head), num(cpuW))
		parts = append(parts, fmt.Sprintf("CPU at %s is a consequence, not the root cause", pct(cpu.tail)))
		f.inferred(reason, cpu.s.Cite)
		f.explains(ModeCPUQuery, reason)
	}
	f.explains(ModeDBIO, "Disk queueing and write latency come from checkpoint flushing and WAL writes, not from an undersized volume")
	if st := v.change("FreeStorageSpace"); st.ok && st.tail < st.head {
		f.explains(ModeStorageFull, fmt.Sprintf("FreeStorageSpace fell from %s to %s from WAL growth during the checkpoint storm; storage is not exhausted", bytesHuman(st.head), bytesHuman(st.s.Latest)))
	}
	f.Statement = fmt.Sprintf("Vacuum-driven checkpoint storm on %s: %s", v.instance, strings.Join(parts, "; "))
	f.inferred("VACUUM FREEZE rewrites every page of a large table, generating WAL faster than max_wal_size allows between checkpoints")
	f.Chain = []string{
		"A (auto)vacuum freeze starts on a large table",
		"It dirties pages and generates a flood of WAL",
		"max_wal_size is reached again and again: checkpoints run back to back (checkpoint storm)",
		"Buffer flushing triggers LWLock:BufferMapping and WAL write contention; CPU and write latency climb",
	}
	f.Remediation = []string{
		"Throttle or reschedule the vacuum (autovacuum_vacuum_cost_limit/cost_delay; run freeze off-peak)",
		"Raise max_wal_size / checkpoint_timeout so checkpoints are spread out",
	}
	f.Signals = []string{"vacuum", "checkpoint", "LWLock", "WAL"}
	return []Finding{f}
}

// ---- failover ----

func (v *dbView) failoverEvents() []DBEvent {
	var out []DBEvent
	for _, e := range v.events {
		isFO := containsFold(e.Message, "failover")
		for _, c := range e.Categories {
			if strings.EqualFold(c, "failover") {
				isFO = true
			}
		}
		if isFO {
			out = append(out, e)
		}
	}
	return out
}

// current: the events fall inside (or just before) the telemetry window.
func (v *dbView) current(es []DBEvent, ev *Evidence) bool {
	if len(es) == 0 {
		return false
	}
	start := v.windowStart
	if start == nil {
		if ev.Now.IsZero() {
			return true
		}
		t := ev.Now.Add(-time.Hour)
		start = &t
	}
	last := es[len(es)-1].Time
	return last == nil || !last.Before(start.Add(-30*time.Minute))
}

func detectFailover(ev *Evidence) []Finding {
	v := ev.db()
	fo := v.failoverEvents()
	if len(fo) == 0 || !v.current(fo, ev) {
		return nil
	}
	f := Finding{Mode: ModeFailover, Category: catInfra, Entity: v.entity(), Score: 0.9}
	var steps []string
	for _, e := range fo {
		steps = append(steps, fmt.Sprintf("%s (%s)", quote(e.Message), hhmm(e.Time)))
		f.validated(dbEventLine(e), e.Cite)
	}
	last := fo[len(fo)-1]
	var after []DBEvent
	for _, e := range v.events {
		if e.Time != nil && last.Time != nil && !e.Time.Before(*last.Time) && !containsEvent(fo, e) && containsFold(e.Message, "available") {
			after = append(after, e)
		}
	}
	for _, e := range after {
		steps = append(steps, fmt.Sprintf("%s (%s)", quote(e.Message), hhmm(e.Time)))
		f.validated(dbEventLine(e), e.Cite)
	}
	f.Statement = fmt.Sprintf("Multi-AZ failover of %s: the RDS events (the primary evidence source) record %s", v.instance, strings.Join(steps, " -> "))
	conns := v.change("DatabaseConnections")
	if conns.ok && conns.min <= 0.1*math.Max(conns.head, 1) && conns.s.Latest >= 0.8*conns.head {
		s := fmt.Sprintf("DatabaseConnections dropped from %s to %s during the switch and recovered to %s (baseline %s): the workload resumed normally on the new primary", num(conns.head), num(conns.min), num(conns.s.Latest), num(conns.head))
		f.Statement += "; " + s
		f.validated("CloudWatch "+s, conns.s.Cite)
		f.explains(ModeConnExhaustion, "The connection drop to "+num(conns.min)+" is the failover's restart window, not connection exhaustion")
	}
	if lag := v.change("ReplicaLag"); lag.ok && lag.peak >= 10 && lag.s.Latest < 0.5*lag.peak {
		f.explains(ModeReplicationLag, fmt.Sprintf("ReplicaLag peaked at %s s during the failover and is back to %s s: a transient effect of the switch", num(lag.peak), num(lag.s.Latest)))
	}
	f.inferred("The failover was triggered by the platform (health check on the old primary), not by the workload; clients reconnected to the new primary")
	f.Chain = []string{"The primary host fails its health check", "RDS initiates a Multi-AZ failover and restarts on the standby", "Connections drop for the switch window", "The standby is promoted, the instance is available and clients reconnect"}
	f.Remediation = []string{"Confirm clients reconnect with retry/back-off and short DNS TTLs", "Review the failed host's health (AWS Health events); no database change is required"}
	f.Signals = []string{"failover", "Multi-AZ"}
	// The events are the primary evidence: put their sources first.
	src := citesOfDBEvents(fo).Sources
	f.Sources = appendUnique(src, f.Sources...)
	return []Finding{f}
}

// ---- lock contention ----

func isLockWait(n string) bool { return strings.HasPrefix(strings.ToLower(n), "lock:") }

func detectLockContention(ev *Evidence) []Finding {
	v := ev.db()
	share := v.waitShare(isLockWait)
	load := v.waitLoad(isLockWait)
	if share < 0.5 || load < 1 {
		return nil
	}
	var blocked TopQuery
	var bl float64
	for _, q := range v.tops {
		if w := queryWait(q, isLockWait); w > bl {
			blocked, bl = q, w
		}
	}
	f := Finding{Mode: ModeLockContention, Category: catResource, Entity: v.entity(), Score: 0.7}
	f.Statement = fmt.Sprintf("Lock contention on %s: sessions spend %s of database load waiting on locks (%s); the most blocked statement is %s — a long transaction, DDL or hot row holds the lock",
		v.instance, pct(100*share), v.dominantWaits(2), v.describeQuery(blocked))
	f.validated("Performance Insights waits: "+v.dominantWaits(3), citesOfTop(v.tops))
	f.validated("Performance Insights most lock-blocked SQL: "+v.describeQuery(blocked), blocked.Cite)
	f.inferred("Another session holds the lock these statements need (check pg_locks / pg_stat_activity for the blocker)")
	f.Chain = []string{"A session holds a lock (long transaction, DDL or hot row)", "Other statements queue behind it (Lock waits)", "Latency climbs and connections pile up"}
	f.Remediation = []string{"Find and end the blocking session (pg_blocking_pids)", "Shorten transactions; run DDL with lock_timeout"}
	f.Signals = []string{"lock contention"}
	return []Finding{f}
}

// ---- memory pressure ----

func detectDBMemory(ev *Evidence) []Finding {
	v := ev.db()
	mem := v.change("FreeableMemory")
	swap := v.change("SwapUsage")
	low := mem.ok && mem.head > 0 && mem.s.Latest <= 0.1*mem.head
	swapping := swap.ok && swap.tail >= 5*math.Max(swap.head, 1<<20) && swap.tail >= 256<<20
	if !low && !swapping {
		return nil
	}
	f := Finding{Mode: ModeDBMemory, Category: catResource, Entity: v.entity(), Score: 0.6}
	var parts []string
	if low {
		f.Score += 0.15
		parts = append(parts, fmt.Sprintf("FreeableMemory fell from %s to %s", bytesHuman(mem.head), bytesHuman(mem.s.Latest)))
		f.validated("CloudWatch "+parts[len(parts)-1], mem.s.Cite)
	}
	if swapping {
		f.Score += 0.1
		parts = append(parts, fmt.Sprintf("SwapUsage rose from %s to %s", bytesHuman(swap.head), bytesHuman(swap.tail)))
		f.validated("CloudWatch "+parts[len(parts)-1], swap.s.Cite)
	}
	f.Statement = fmt.Sprintf("Memory pressure on %s: %s", v.instance, strings.Join(parts, "; "))
	if len(v.tops) > 0 {
		f.Statement += "; heaviest statement in Performance Insights: " + v.describeQuery(v.tops[0])
	}
	f.Chain = []string{"Working memory (connections, sorts, hashes) exceeds the instance's RAM", "The OS swaps", "Query latency climbs"}
	f.Remediation = []string{"Reduce work_mem-heavy queries or connection count", "Move to an instance class with more memory"}
	f.Signals = []string{"memory", "swap"}
	return []Finding{f}
}

// ---- storage I/O exhaustion ----

func detectDBIO(ev *Evidence) []Finding {
	v := ev.db()
	q := v.change("DiskQueueDepth")
	burst := v.change("BurstBalance")
	rl, wl := v.change("ReadLatency"), v.change("WriteLatency")
	queued := q.ok && q.tail >= 5 && q.tail >= 10*math.Max(q.head, 0.1)
	drained := burst.ok && burst.s.Latest <= 10 && burst.head >= 50
	if !queued && !drained {
		return nil
	}
	f := Finding{Mode: ModeDBIO, Category: catResource, Entity: v.entity(), Score: 0.65}
	var parts []string
	if drained {
		f.Score += 0.15
		parts = append(parts, fmt.Sprintf("the gp2 burst balance is drained (BurstBalance %s%% -> %s%%)", num(burst.head), num(burst.s.Latest)))
		f.validated("CloudWatch BurstBalance fell from "+num(burst.head)+" to "+num(burst.s.Latest), burst.s.Cite)
	}
	if queued {
		parts = append(parts, fmt.Sprintf("DiskQueueDepth rose from %s to %s", num(q.head), num(q.tail)))
		f.validated("CloudWatch DiskQueueDepth rose from "+num(q.head)+" to "+num(q.tail), q.s.Cite)
	}
	for _, l := range []change{rl, wl} {
		if l.ok && l.tail >= 3*math.Max(l.head, 0.0001) {
			parts = append(parts, fmt.Sprintf("%s rose from %s to %s", l.s.Name, num(l.head), num(l.tail)))
			f.validated("CloudWatch "+parts[len(parts)-1], l.s.Cite)
			f.Score += 0.05
		}
	}
	f.Statement = fmt.Sprintf("Storage I/O exhaustion on %s: %s — the volume cannot serve the I/O the workload asks for", v.instance, strings.Join(parts, "; "))
	f.Chain = []string{"The workload's I/O exceeds the volume's provisioned/burst IOPS", "Requests queue at the disk", "Read/write latency climbs"}
	f.Remediation = []string{"Provision more IOPS (gp3/io2) or larger storage", "Reduce I/O (indexes, caching, batching)"}
	f.Signals = []string{"IOPS", "DiskQueueDepth"}
	return []Finding{f}
}

// ---- transaction ID wraparound ----

func detectXIDWraparound(ev *Evidence) []Finding {
	v := ev.db()
	x := v.change("MaximumUsedTransactionIDs")
	if !x.ok || x.s.Latest < 1.0e9 {
		return nil
	}
	f := Finding{Mode: ModeXIDWraparound, Category: catResource, Entity: v.entity(), Score: 0.7}
	if x.s.Latest >= 1.5e9 {
		f.Score = 0.85
	}
	f.Statement = fmt.Sprintf("Transaction ID wraparound risk on %s: MaximumUsedTransactionIDs is %s (PostgreSQL stops accepting writes near 2.1 billion); autovacuum is not freezing old tuples fast enough", v.instance, num(x.s.Latest))
	f.validated("CloudWatch MaximumUsedTransactionIDs at "+num(x.s.Latest), x.s.Cite)
	f.Chain = []string{"Old transaction IDs are not frozen (blocked or slow autovacuum)", "The XID age approaches the 2^31 limit", "PostgreSQL protects itself by refusing writes"}
	f.Remediation = []string{"Run VACUUM FREEZE on the oldest tables; remove what blocks autovacuum (long transactions, replication slots)"}
	f.Signals = []string{"wraparound"}
	return []Finding{f}
}

// cpuWithoutCulprit reports sustained high CPU that no single statement
// explains (or that Performance Insights could not attribute): a weaker,
// capacity-style finding. Maintenance work (vacuum) is left to the
// checkpoint/vacuum detector.
func cpuWithoutCulprit(v *dbView, cpu change) []Finding {
	if cpu.tail < 90 {
		return nil
	}
	for _, q := range v.tops {
		if isMaintenance(q.Statement) && v.totalLoad > 0 && q.Load >= 0.3*v.totalLoad {
			return nil
		}
	}
	f := Finding{Mode: ModeCPUQuery, Category: catResource, Entity: v.entity(), Score: 0.6}
	f.Statement = fmt.Sprintf("CPU exhaustion on %s: CPUUtilization is pinned at %s (peak %s, was %s)", v.instance, pct(cpu.tail), pct(cpu.peak), pct(cpu.head))
	f.validated(fmt.Sprintf("CloudWatch CPUUtilization rose from %s to %s (peak %s)", pct(cpu.head), pct(cpu.tail), pct(cpu.peak)), cpu.s.Cite)
	if len(v.tops) == 0 {
		f.Statement += "; Performance Insights data is not available, so the consuming statements are unknown"
		f.inferred("Performance Insights was not available: the statements consuming the CPU are unconfirmed")
	} else {
		f.Statement += "; the CPU is spread over several statements (" + v.dominantWaits(3) + "), no single query dominates — the instance is undersized for the load"
		f.validated("Performance Insights top SQL: "+v.describeQuery(v.tops[0]), v.tops[0].Cite)
	}
	f.Chain = []string{"The workload's CPU demand exceeds the instance's capacity", "Queries queue for CPU", "Latency rises"}
	f.Remediation = []string{"Scale the instance class up or offload reads to replicas", "Find and optimise the heaviest statements"}
	f.Signals = []string{"CPU"}
	return []Finding{f}
}
