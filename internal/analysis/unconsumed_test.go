package analysis

import (
	"testing"
)

// A queue with no consumer that keeps growing while the broker's storage
// runs low holds that storage (resource exhaustion, the queue its entity);
// without storage pressure it is a weak finding; a queue with consumers,
// or one that does not grow, is none. Variants: RabbitMQ exporter names,
// and an ActiveMQ-style destination label with a queue-size gauge.
func TestUnconsumedQueue(t *testing.T) {
	grow := func(name, key, q string, from, per float64) Series {
		return mkSeries(name, map[string]string{key: q}, func(i int) float64 { return from + per*float64(i) })
	}
	flat := func(name, key, q string, v float64) Series {
		return mkSeries(name, map[string]string{key: q}, func(int) float64 { return v })
	}
	alarm := mkSeries("rabbitmq_alarms_free_disk_space_watermark", map[string]string{"rabbitmq_node": "rabbit@b-0"}, func(i int) float64 {
		if i > 40 {
			return 1
		}
		return 0
	})
	free := mkSeries("broker_store_disk_free_bytes", map[string]string{"broker": "amq-0"}, func(i int) float64 { return 9e9 - float64(i)*8e7 })
	tests := []struct {
		name      string
		series    []Series
		wantScore float64 // 0: no finding
		wantEnt   string
	}{
		{"rabbitmq, broker disk alarm", []Series{grow("rabbitmq_detailed_queue_messages_ready", "queue", "audit.copy", 3.6e7, 8e4), flat("rabbitmq_detailed_queue_consumers", "queue", "audit.copy", 0), alarm}, queueScorePressure, "queue/audit.copy"},
		{"destination label, free space falling", []Series{grow("activemq_queue_size", "destination", "orders.archive", 2e5, 9e3), flat("activemq_queue_consumer_count", "destination", "orders.archive", 0), free}, queueScorePressure, "queue/orders.archive"},
		{"no storage pressure: a weak finding", []Series{grow("rabbitmq_detailed_queue_messages_ready", "queue", "dlq", 100, 50), flat("rabbitmq_detailed_queue_consumers", "queue", "dlq", 0)}, queueScoreAlone, "queue/dlq"},
		{"consumed", []Series{grow("rabbitmq_detailed_queue_messages_ready", "queue", "work", 3.6e7, 8e4), flat("rabbitmq_detailed_queue_consumers", "queue", "work", 6), alarm}, 0, ""},
		{"not growing", []Series{flat("rabbitmq_detailed_queue_messages_ready", "queue", "idle", 500), flat("rabbitmq_detailed_queue_consumers", "queue", "idle", 0), alarm}, 0, ""},
		{"consumers unknown", []Series{grow("rabbitmq_detailed_queue_messages_ready", "queue", "q", 3.6e7, 8e4), alarm}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Series = tc.series
			fs := detectUnconsumedQueue(ev)
			if tc.wantScore == 0 {
				if len(fs) > 0 {
					t.Fatalf("finding %q, want none", fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Score != tc.wantScore || fs[0].Entity != tc.wantEnt || fs[0].Category != catResource {
				t.Fatalf("findings %+v, want one resource finding on %s scored %.2f", fs, tc.wantEnt, tc.wantScore)
			}
		})
	}
}
