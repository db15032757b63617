package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

func benchExec(b *testing.B, s *Service, intent string, params map[string]any) {
	req := &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "i", Intent: intent, Params: mustStruct(b, params), Context: incidentCtx(), NoCache: true}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := s.ExecuteTool(ctx, req)
		if err != nil || !resp.GetResult().GetSuccess() {
			b.Fatalf("%v %v", err, resp.GetResult().GetError())
		}
	}
}

// BenchmarkExecuteToolFetchPodLogs: 2,000 log lines (about 150 KiB) with errors,
// wildcard resolution, parsing, classification, redaction and the output cap.
func BenchmarkExecuteToolFetchPodLogs(b *testing.B) {
	ts := newTestSet()
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		lvl := "INFO"
		if i%50 == 0 {
			lvl = "ERROR"
		}
		fmt.Fprintf(&sb, "2026-03-10T11:%02d:%02dZ %s handled request id=%d path=/api/v1/cart/items status=200 took=%dms\n", i/60%60, i%60, lvl, i, i%97)
	}
	ts.podLogs.logs["shop/cart-5d8f9-aaaaa"] = sb.String()
	s := newService(b, ts.set, nil)
	benchExec(b, s, "fetch_pod_logs", map[string]any{"pod": "cart-*"})
}

// BenchmarkExecuteToolQueryPrometheus: 20 series of 240 points each.
func BenchmarkExecuteToolQueryPrometheus(b *testing.B) {
	ts := newTestSet()
	var m model.Matrix
	for s := 0; s < 20; s++ {
		var vals []model.SamplePair
		for i := 0; i < 240; i++ {
			v := float64(10 + s + i%7)
			if s == 3 && i > 180 {
				v *= 5
			}
			vals = append(vals, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(-time.Hour + time.Duration(i)*15*time.Second).UnixNano()), Value: model.SampleValue(v)})
		}
		m = append(m, &model.SampleStream{Metric: model.Metric{"__name__": "http_requests", "pod": model.LabelValue(fmt.Sprintf("p%d", s))}, Values: vals})
	}
	ts.metrics.matrix = m
	s := newService(b, ts.set, nil)
	benchExec(b, s, "query_prometheus", map[string]any{"query": "sum by (pod) (rate(http_requests[5m]))"})
}

// BenchmarkExecuteToolReplay: a duplicate call served from the cache.
func BenchmarkExecuteToolReplay(b *testing.B) {
	ts := newTestSet()
	s := newService(b, ts.set, nil)
	req := &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "i", Intent: "check_pod_status", Context: incidentCtx()}
	if _, err := s.ExecuteTool(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if resp, err := s.ExecuteTool(context.Background(), req); err != nil || !resp.GetReplayed() {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedactText64KiB(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString("2026-03-10T11:00:00Z INFO user login ok session=abc path=/api/v1/items token_count=3 author=x\n")
	}
	sb.WriteString("password=hunter2\n")
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if out := RedactText(text); strings.Contains(out, "hunter2") {
			b.Fatal("leak")
		}
	}
}
