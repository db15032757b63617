package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/scenario"
)

// TestStatusPageFollowUp runs an incident through the whole in-process mesh
// (fixture backend): a checkout's calls to an outside payment host fail.
// With the provider's status page recorded, the brain asks it once, for
// that provider, and the diagnosis cites the provider's open incident; with
// no status page configured the tool is never called.
func TestStatusPageFollowUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process mesh")
	}
	alert := `{"receiver":"x","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"CheckoutErrors","namespace":"shop","service":"checkout","severity":"critical"},
	  "annotations":{"summary":"checkout error rate above 5%"},"startsAt":"2027-03-02T09:10:00Z"}]}`
	var hits []string
	for i := range 6 {
		hits = append(hits, fmt.Sprintf(`{"timestamp":"2027-03-02T09:%02d:00Z","service":"checkout","namespace":"shop","pod":"checkout-7d9f8c6b5-x2x4z","level":"ERROR",
		  "message":"charge failed: POST https://eu.api.paynova.example/v1/charges: 503 Service Unavailable"}`, 5+i))
	}
	logs := `{"hits":[` + strings.Join(hits, ",") + `]}`
	page := `{"page":{"name":"Paynova Status","url":"https://status.paynova.example"},
	  "incidents":[{"name":"Elevated errors on charges (EU)","status":"identified","impact":"major","created_at":"2027-03-02T09:06:00Z",
	    "components":[{"name":"Charges API - EU","status":"major_outage"}],
	    "incident_updates":[{"status":"identified","created_at":"2027-03-02T09:08:00Z","body":"A faulty load balancer pool is being replaced."}]}]}`
	inv := pipelineInvestigator(slog.New(slog.DiscardHandler), nil)
	for _, withPage := range []bool{true, false} {
		t.Run(fmt.Sprint("status page=", withPage), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sp-1")
			files := map[string]string{"alert.json": alert, "logs.json": logs}
			if withPage {
				files["statuspage.json"] = page
			}
			for name, body := range files {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sc, err := scenario.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			out, err := inv(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				RootCauseEntity string   `json:"root_cause_entity"`
				EvidenceSources []string `json:"evidence_sources"`
				ToolsCalled     []struct {
					Intent string         `json:"intent"`
					Params map[string]any `json:"params"`
				} `json:"tools_called"`
				ValidatedClaims []struct {
					Claim string `json:"claim"`
				} `json:"validated_claims"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			var asked []map[string]any
			for _, c := range res.ToolsCalled {
				if c.Intent == "get_status_page" {
					asked = append(asked, c.Params)
				}
			}
			if !withPage {
				if len(asked) != 0 {
					t.Errorf("status page asked without one configured: %v", asked)
				}
				return
			}
			if len(asked) != 1 || asked[0]["provider"] != "paynova" {
				t.Fatalf("status page calls %v, want one for paynova", asked)
			}
			if res.RootCauseEntity != "host/eu.api.paynova.example" {
				t.Errorf("root cause entity %s", res.RootCauseEntity)
			}
			if !strings.Contains(strings.Join(res.EvidenceSources, ","), "statuspage") {
				t.Errorf("evidence sources %v lack statuspage", res.EvidenceSources)
			}
			cited := false
			for _, c := range res.ValidatedClaims {
				cited = cited || strings.Contains(c.Claim, "Elevated errors on charges (EU)") && strings.Contains(c.Claim, "A faulty load balancer pool is being replaced.")
			}
			if !cited {
				t.Errorf("no validated claim quotes the provider's incident: %+v", res.ValidatedClaims)
			}
		})
	}
}
