package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// A signal extractor for a shared resource's holder on a message broker: a
// queue that nobody consumes (its consumer count is zero) and that keeps
// growing holds the broker's storage. When the broker's own storage runs
// low at the same time (its free-space series falls, a resource alarm
// raises), that queue is what fills it: a resource exhaustion whose entity
// is the queue, and the publishers the broker blocks are its victims.

// ModeUnconsumedQueue: a queue without consumers fills the broker.
const ModeUnconsumedQueue = "unconsumed_queue"

const (
	// minQueueGrowth: a queue that grew by fewer messages than this over
	// the window is no holder.
	minQueueGrowth = 1000
	// queueScoreAlone is the score of an unconsumed growing queue with no
	// sign of the broker's storage running low (a dead-letter queue that
	// fills slowly is common and often benign).
	queueScoreAlone = 0.45
	// queueScorePressure is its score when the broker's storage runs low.
	queueScorePressure = 0.8
)

// queueKeys are the labels that name a queue (RabbitMQ and most exporters,
// CloudWatch's SQS dimension, ActiveMQ's destination).
var queueKeys = []string{"queue", "queue_name", "queuename", "destination"}

func detectUnconsumedQueue(ev *Evidence) []Finding {
	type depth struct {
		s    Series
		r    rise
		name string
	}
	depths := map[string]depth{}
	consumers := map[string][]Series{}
	for _, s := range ev.Series {
		q := labelOf(s.Series, queueKeys...)
		if q == "" {
			continue
		}
		n := strings.ToLower(s.Name)
		switch {
		case strings.Contains(n, "consumer") && !strings.Contains(n, "utili"):
			consumers[q] = append(consumers[q], s)
		case containsFold(n, "messages", "depth", "backlog", "visible", "queue_size", "queue_length", "message_count") && !isCounterName(n) && !containsFold(n, "unacked", "unacknowledged", "rate", "per_second"):
			r := riseOf(s.Series)
			if r.tail-r.head < minQueueGrowth || r.tail < 1.05*r.head {
				continue
			}
			if d, ok := depths[q]; !ok || r.tail-r.head > d.r.tail-d.r.head {
				depths[q] = depth{s: s, r: r, name: q}
			}
		}
	}
	var out []Finding
	for q, d := range depths {
		cs := consumers[q]
		if len(cs) == 0 {
			continue // consumers unknown: not shown to be unconsumed
		}
		none := true
		var cite Cite
		for _, c := range cs {
			if c.Peak > 0 || c.Latest > 0 {
				none = false
			}
			cite.merge(c.Cite)
		}
		if !none {
			continue
		}
		f := Finding{Mode: ModeUnconsumedQueue, Detector: ModeUnconsumedQueue, Category: catResource, Score: queueScoreAlone, Entity: queueEntity(ev, d.s, q)}
		f.Statement = fmt.Sprintf("Queue %s has no consumer and keeps growing: %s went from %s to %s messages over the window", q, d.s.Name, num(d.r.head), num(d.r.tail))
		f.validated(fmt.Sprintf("%s{%s=%s} grew from %s to %s", d.s.Name, "queue", q, num(d.r.head), num(d.r.tail)), d.s.Cite)
		f.validated(fmt.Sprintf("Consumers of %s: 0 throughout the window", q), cite)
		if p, c, ok := ev.brokerStorageLow(); ok {
			f.Score = queueScorePressure
			f.Statement += "; meanwhile the broker's storage runs low (" + p + "): the unconsumed queue is what fills it, and the broker blocks its publishers"
			f.validated("The broker's storage runs low: "+p, c)
		}
		f.Chain = []string{"Messages are published to a queue nobody consumes", "The queue grows and its messages take the broker's storage", "The broker's free space reaches its limit: it raises its resource alarm and blocks every publisher"}
		f.Remediation = []string{fmt.Sprintf("Give %s a consumer, or purge it and set a length or TTL limit (a policy)", q), "Stop publishing to it (unbind it) if nothing needs its messages"}
		f.Signals = []string{"queue", "no consumer", q}
		f.Sources = []string{"metrics"}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// queueEntity names a queue by its namespace when a label gives one.
func queueEntity(ev *Evidence, s Series, q string) string {
	if ns := labelOf(s.Series, "namespace", "kubernetes_namespace"); ns != "" {
		return "queue/" + ns + "/" + q
	}
	return "queue/" + q
}

// brokerStorageLow: a broker's own storage series says it runs low: a
// free-space series that fell by a third or more toward its limit, or a
// resource alarm series that went from 0 to 1.
func (ev *Evidence) brokerStorageLow() (string, Cite, bool) {
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !containsFold(n, "disk", "storage", "memory") || isDBMetric(s.Series) {
			continue
		}
		r := riseOf(s.Series)
		switch {
		case strings.Contains(n, "alarm") && r.head == 0 && s.Latest >= 1:
			return fmt.Sprintf("%s went from 0 to %s", s.Name, num(s.Latest)), s.Cite, true
		case containsFold(n, "available", "free") && !strings.Contains(n, "limit") && r.head > 0 && r.tail < r.head*(1-1.0/3) && !math.IsNaN(r.tail):
			return fmt.Sprintf("%s fell from %s to %s", s.Name, num(r.head), num(r.tail)), s.Cite, true
		}
	}
	return "", Cite{}, false
}
