package tools

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/series"
)

func dbQuery(c *Call) backend.DBQuery {
	return backend.DBQuery{Instance: c.Params.String("instance"), Metric: c.Params.String("metric"), Start: c.Window.Start, End: c.Window.End}
}

func handleQueryDBMetrics(ctx context.Context, s *Service, c *Call, r *Result) error {
	q := dbQuery(c)
	ss, err := s.be.Database.DBMetrics(ctx, q)
	if err != nil {
		return fmt.Errorf("database metrics: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, evidencev1.Domain_DOMAIN_STORAGE
	r.ResourceName = q.Instance
	scope := first(q.Instance, "all database instances")
	if q.Metric != "" {
		scope = q.Metric + " of " + scope
	}
	var kept []facts.Series
	for _, sr := range ss {
		if sr.Count == 0 && len(sr.Downsampled) == 0 {
			continue
		}
		kept = append(kept, sr)
	}
	if kept == nil {
		kept = []facts.Series{}
	}
	sort.SliceStable(kept, func(i, j int) bool { return seriesScore(kept[i]) > seriesScore(kept[j]) })
	r.Put(facts.KeySeries, kept)
	if len(kept) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("No database metrics for %s between %s and %s.", scope, c.Window.Start.UTC().Format(time.RFC3339), c.Window.End.UTC().Format(time.RFC3339))
		return nil
	}
	r.Source(s.be.Source(backend.AreaDBMetrics))
	changed := 0
	var changedNames []string
	for _, sr := range kept {
		line := seriesLine(sr)
		r.Rawf("%s", line)
		if len(sr.Anomalies) > 0 || (sr.Shape != "" && sr.Shape != series.ShapeFlat) {
			changed++
			changedNames = append(changedNames, describeSeries(sr)+" "+first(sr.Shape, "anomalous"))
			r.Snippet(line)
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
	if changed == 0 {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("%s for %s, all flat with no anomalies.", plural(len(kept), "database metric", "database metrics"), scope)
		return nil
	}
	r.Summary = fmt.Sprintf("%d of %s for %s changed: %s.", changed, plural(len(kept), "database metric", "database metrics"), scope, strings.Join(changedNames[:min(4, len(changedNames))], "; "))
	return nil
}

func handleGetDBTopQueries(ctx context.Context, s *Service, c *Call, r *Result) error {
	q := dbQuery(c)
	tq, err := s.be.Database.TopQueries(ctx, q)
	if err != nil {
		return fmt.Errorf("database top queries: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, evidencev1.Domain_DOMAIN_STORAGE
	r.ResourceName = q.Instance
	if tq == nil {
		tq = []facts.TopQuery{}
	}
	sort.SliceStable(tq, func(i, j int) bool { return tq[i].Load > tq[j].Load })
	r.Put(facts.KeyTopQueries, tq)
	scope := first(q.Instance, "all database instances")
	if len(tq) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("No top-query data for %s.", scope)
		return nil
	}
	r.Source(s.be.Source(backend.AreaTopQueries))
	total := 0.0
	for _, t := range tq {
		total += t.Load
	}
	for _, t := range tq {
		var waits []string
		for _, w := range t.WaitEvents {
			waits = append(waits, fmt.Sprintf("%s=%s", w.Name, fmtNum(w.Load)))
		}
		line := fmt.Sprintf("load=%s AAS calls/s=%s waits=[%s] %s", fmtNum(t.Load), fmtNum(t.CallsPerSec), strings.Join(waits, ", "), strings.Join(strings.Fields(t.Statement), " "))
		r.Rawf("%s", line)
		r.Snippet(line)
	}
	top := tq[0]
	share := 0.0
	if total > 0 {
		share = top.Load / total * 100
	}
	if top.Load >= 1 {
		r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	if share >= 50 && top.Load >= 2 {
		r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
	}
	stmt := strings.Join(strings.Fields(top.Statement), " ")
	if len(stmt) > 160 {
		stmt = truncUTF8(stmt, 157) + "..."
	}
	r.Summary = fmt.Sprintf("Top query on %s carries %s average active sessions (%.0f%% of load): %s", scope, fmtNum(top.Load), share, stmt)
	if len(top.WaitEvents) > 0 {
		w := top.WaitEvents[0]
		for _, x := range top.WaitEvents {
			if x.Load > w.Load {
				w = x
			}
		}
		r.Summary += fmt.Sprintf(", mostly waiting on %s", w.Name)
	}
	r.Summary += "."
	return nil
}

func handleGetDBEvents(ctx context.Context, s *Service, c *Call, r *Result) error {
	q := dbQuery(c)
	evs, err := s.be.Database.DBEvents(ctx, q)
	if err != nil {
		return fmt.Errorf("database events: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, evidencev1.Domain_DOMAIN_STORAGE
	r.ResourceName = q.Instance
	if evs == nil {
		evs = []facts.DBEvent{}
	}
	sort.SliceStable(evs, func(i, j int) bool { return timeBefore(evs[i].Time, evs[j].Time) })
	r.Put(facts.KeyDBEvents, evs)
	scope := first(q.Instance, "all database instances")
	if len(evs) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("No database events for %s between %s and %s.", scope, c.Window.Start.UTC().Format(time.RFC3339), c.Window.End.UTC().Format(time.RFC3339))
		return nil
	}
	r.Source(s.be.Source(backend.AreaDBEvents))
	var notable []string
	for _, e := range evs {
		line := fmt.Sprintf("%s %s %s [%s] %s", fmtTime(e.Time), e.SourceType, e.SourceID, strings.Join(e.Categories, ","), e.Message)
		r.Rawf("%s", line)
		sev := dbEventSeverity(e)
		r.Escalate(sev)
		if sev <= evidencev1.Severity_SEVERITY_MEDIUM {
			r.Snippet(line)
			notable = append(notable, e.Message)
		}
	}
	if len(notable) == 0 {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("%s for %s, none indicating failure, failover or storage trouble.", plural(len(evs), "database event", "database events"), scope)
		return nil
	}
	r.Summary = fmt.Sprintf("%s for %s; notable: %s.", plural(len(evs), "database event", "database events"), scope, strings.TrimSuffix(strings.Join(notable[:min(3, len(notable))], "; "), "."))
	return nil
}

func dbEventSeverity(e facts.DBEvent) evidencev1.Severity {
	text := strings.ToLower(e.Message + " " + strings.Join(e.Categories, " "))
	switch {
	case strings.Contains(text, "failure") || strings.Contains(text, "failover") || strings.Contains(text, "storage-full") || strings.Contains(text, "storage full") || strings.Contains(text, "out of storage") || strings.Contains(text, "crash"):
		return evidencev1.Severity_SEVERITY_HIGH
	case strings.Contains(text, "low storage") || strings.Contains(text, "restart") || strings.Contains(text, "reboot") || strings.Contains(text, "maintenance") || strings.Contains(text, "parameter") || strings.Contains(text, "configuration change") || strings.Contains(text, "recovery") || strings.Contains(text, "backtrack") || strings.Contains(text, "availability"):
		return evidencev1.Severity_SEVERITY_MEDIUM
	}
	return evidencev1.Severity_SEVERITY_INFO
}

func handleListMonitors(ctx context.Context, s *Service, c *Call, r *Result) error {
	ms, err := s.be.Monitors.Monitors(ctx)
	if err != nil {
		return fmt.Errorf("monitors: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, evidencev1.Domain_DOMAIN_UNKNOWN
	name, state, tag := strings.ToLower(c.Params.String("name")), strings.ToLower(c.Params.String("state")), strings.ToLower(c.Params.String("tag"))
	var kept []facts.Monitor
	for _, m := range ms {
		if name != "" && !strings.Contains(strings.ToLower(m.Name+" "+m.Query), name) {
			continue
		}
		if state != "" && strings.ToLower(m.State) != state {
			continue
		}
		if tag != "" && !containsFold(m.Tags, tag) {
			continue
		}
		kept = append(kept, m)
	}
	if kept == nil {
		kept = []facts.Monitor{}
	}
	r.Put(facts.KeyMonitors, kept)
	if len(ms) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = "No monitors or alert rules are defined."
		return nil
	}
	r.Source(s.be.Source(backend.AreaMonitors))
	firing := 0
	var firingNames []string
	for _, m := range kept {
		line := fmt.Sprintf("[%s] %s (%s) %s", first(m.State, "-"), m.Name, m.Type, m.Query)
		r.Rawf("%s", line)
		if monitorFiring(m.State) {
			firing++
			firingNames = append(firingNames, m.Name)
			r.Snippet(line)
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
	if len(kept) == 0 {
		r.Summary = fmt.Sprintf("None of %s matches the filter.", plural(len(ms), "monitor", "monitors"))
		return nil
	}
	if firing == 0 {
		r.Summary = fmt.Sprintf("%s, none firing.", plural(len(kept), "monitor", "monitors"))
		return nil
	}
	r.Summary = fmt.Sprintf("%d of %s firing: %s.", firing, plural(len(kept), "monitor", "monitors"), strings.Join(firingNames[:min(5, len(firingNames))], "; "))
	return nil
}

func monitorFiring(state string) bool {
	switch strings.ToLower(state) {
	case "alert", "alerting", "firing", "triggered", "critical", "warn", "warning", "no data", "nodata":
		return true
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(strings.ToLower(x), s) {
			return true
		}
	}
	return false
}
