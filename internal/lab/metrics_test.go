package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	"github.com/rcamesh/rcamesh/internal/server"
)

// promScalar evaluates expr (an aggregation returning one sample) on the
// Prometheus at base; an empty result is reported as ok=false.
func promScalar(ctx context.Context, base, expr string) (v float64, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, false, err
	}
	if out.Status != "success" {
		return 0, false, fmt.Errorf("query %s: %s", expr, out.Error)
	}
	if len(out.Data.Result) == 0 {
		return 0, false, nil
	}
	s, _ := out.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

// TestMetricsScrapedByPrometheus runs every service in-process, lets a real
// Prometheus scrape its /metrics (with rcamesh's own alert rules loaded),
// runs one investigation of the demo scenario and checks, through PromQL,
// that the counters it should move moved.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus and every rcamesh service")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	grpcAddr, httpURL := startRcamesh(ctx, t)
	target := strings.TrimPrefix(httpURL, "http://")

	rules := filepath.Join("..", "..", "deploy", "prometheus", "rcamesh-rules.yaml")
	prom, err := StartScraper(ctx, t.TempDir(), []string{target}, time.Second, rules)
	skipIfMissing(t, err)
	defer prom.Stop()

	query := func(expr string) (float64, bool) {
		t.Helper()
		v, ok, err := promScalar(ctx, prom.URL, expr)
		if err != nil {
			t.Fatalf("%v\n%s", err, prom.Log())
		}
		return v, ok
	}
	// The target is up and the Go and process collectors are exported.
	err = eventually(ctx, 30*time.Second, func() error {
		for _, expr := range []string{`up{job="rcamesh"}`, `go_goroutines{job="rcamesh"}`, `process_resident_memory_bytes{job="rcamesh"}`} {
			if v, ok := query(expr); !ok || v <= 0 {
				return fmt.Errorf("%s = %v (present %v)", expr, v, ok)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, prom.Log())
	}

	// Counters before the investigation, as Prometheus scraped them (a
	// series that does not exist yet counts as 0).
	counters := []string{
		`sum(rcamesh_investigations_started_total)`,
		`sum(rcamesh_investigations_finished_total{outcome!="failed"})`,
		`sum(rcamesh_tool_calls_total{result!="replayed"})`,
		`sum(rcamesh_tool_call_duration_seconds_count)`,
		`sum(rcamesh_pins_published_total)`,
		`sum(rcamesh_pin_revalidations_total)`,
		`sum(rcamesh_critic_verdicts_total)`,
		`sum(rcamesh_critic_review_round_count)`,
		`sum(rcamesh_nats_published_messages_total{kind="pin",result="ok"})`,
		`sum(rcamesh_nats_published_messages_total{kind="lifecycle",result="ok"})`,
		`sum(rcamesh_nats_consumed_messages_total{result="ack"})`,
		`sum(rcamesh_investigation_duration_seconds_count)`,
	}
	before := map[string]float64{}
	for _, c := range counters {
		before[c], _ = query(c)
	}

	cc, err := server.NewClientConn(grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	raw, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "demo", "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var payload structpb.Struct
	if err := payload.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	resp, err := brainv1.NewBrainServiceClient(cc).SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: &payload, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDiagnosis() == nil {
		t.Fatalf("no diagnosis: %v", resp)
	}
	category := strings.ToLower(strings.TrimPrefix(resp.GetDiagnosis().GetCategory().String(), "ROOT_CAUSE_CATEGORY_"))
	outcome := strings.ToLower(strings.TrimPrefix(resp.GetDiagnosis().GetStatus().String(), "DIAGNOSIS_STATUS_"))

	err = eventually(ctx, 60*time.Second, func() error {
		var stale []string
		for _, c := range counters {
			if v, _ := query(c); v <= before[c] {
				stale = append(stale, fmt.Sprintf("%s stayed at %v", c, v))
			}
		}
		// The investigation is counted once, under its own outcome and category.
		expr := fmt.Sprintf(`sum(rcamesh_investigations_finished_total{outcome=%q,category=%q})`, outcome, category)
		if v, _ := query(expr); v < 1 {
			stale = append(stale, expr+" < 1")
		}
		if len(stale) > 0 {
			return fmt.Errorf("%s", strings.Join(stale, "; "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := query(`sum(rcamesh_investigations_started_total)`); d-before[`sum(rcamesh_investigations_started_total)`] != 1 {
		t.Errorf("investigations_started moved by %v, want 1", d-before[`sum(rcamesh_investigations_started_total)`])
	}
	// The rules load and evaluate: the recording rule has a value, no rcamesh alert fires.
	err = eventually(ctx, 30*time.Second, func() error {
		if _, ok := query(`sum(rcamesh:investigations_finished:rate5m)`); !ok {
			return fmt.Errorf("recording rule rcamesh:investigations_finished:rate5m has no value")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := query(`count(ALERTS{alertstate="firing",alertname=~"Rcamesh.*"})`); ok && v > 0 {
		t.Errorf("%v rcamesh alerts fire after a healthy investigation", v)
	}
}
