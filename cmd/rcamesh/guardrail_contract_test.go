package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/services/brain"
	"github.com/rcamesh/rcamesh/services/critic"
	"github.com/rcamesh/rcamesh/services/delivery"
	"github.com/rcamesh/rcamesh/services/router"
	"github.com/rcamesh/rcamesh/services/tools"
)

// ownerFlags are the flags each service registers (the brain also takes
// the model client's, as internal/modules wires them).
func ownerFlags() map[string]*flag.FlagSet {
	sets := map[string]*flag.FlagSet{}
	add := func(name string, reg ...func(*flag.FlagSet)) {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		for _, r := range reg {
			r(fs)
		}
		sets[name] = fs
	}
	rc, tc, cc, bc, dc, lc := router.DefaultConfig(), tools.DefaultConfig(), critic.DefaultConfig(), brain.DefaultConfig(), delivery.DefaultConfig(), llm.DefaultConfig()
	add(mesh.Router, rc.RegisterFlags)
	add(mesh.Tools, tc.RegisterFlags)
	add(mesh.Critic, cc.RegisterFlags)
	add(mesh.Brain, bc.RegisterFlags, lc.RegisterFlags)
	add(mesh.Delivery, dc.RegisterFlags)
	return sets
}

// TestGuardrailContract walks the Guardrail enum of the investigation
// contract: every value has exactly one owner (a service of the mesh), one
// flag that its owner registers (and no other value uses), one field of the
// record's Guardrails, and an investigation through the whole mesh that
// drives it to its limit: the trip is in the record, decided by the owner,
// and the owner's live limit is in the record's field.
func TestGuardrailContract(t *testing.T) {
	flags := ownerFlags()
	fields := (&investigationv1.Guardrails{}).ProtoReflect().Descriptor().Fields()
	seenFlag, seenField := map[string]investigationv1.Guardrail{}, map[string]investigationv1.Guardrail{}
	all := guardrail.All()
	if len(all) == 0 {
		t.Fatal("the contract names no guardrail")
	}
	for _, g := range all {
		spec := guardrail.Spec(g)
		if _, ok := flags[spec.GetOwner()]; !ok {
			t.Errorf("%s: owner %q is not a service of the mesh", g, spec.GetOwner())
			continue
		}
		owners := 0
		for svc, fs := range flags {
			if fs.Lookup(spec.GetFlag()) != nil {
				owners++
				if svc != spec.GetOwner() {
					t.Errorf("%s: flag -%s is registered by %s, not its owner %s", g, spec.GetFlag(), svc, spec.GetOwner())
				}
			}
		}
		if owners != 1 {
			t.Errorf("%s: flag -%s is registered by %d services, want exactly its owner", g, spec.GetFlag(), owners)
		}
		if prev, dup := seenFlag[spec.GetFlag()]; dup {
			t.Errorf("%s and %s share the flag -%s", g, prev, spec.GetFlag())
		}
		seenFlag[spec.GetFlag()] = g
		if fields.ByName(protoreflect.Name(spec.GetRecordField())) == nil {
			t.Errorf("%s: record field %q is not in Guardrails", g, spec.GetRecordField())
		}
		if prev, dup := seenField[spec.GetRecordField()]; dup {
			t.Errorf("%s and %s share the record field %s", g, prev, spec.GetRecordField())
		}
		seenField[spec.GetRecordField()] = g
		if guardrail.Parse(guardrail.Name(g)) != g {
			t.Errorf("%s: its trip name %q does not map back", g, guardrail.Name(g))
		}
	}
	if testing.Short() {
		return
	}

	// One investigation per guardrail, through the whole mesh, each set up
	// to reach that guardrail's limit.
	endless := func(s *llmtest.Server) { s.Endless("check_pod_status", `{"namespace":"retail"}`) }
	garbage := func(s *llmtest.Server) {
		for range 30 {
			s.Push(llmtest.Turn{Raw: "this is not json"})
		}
	}
	toolNamesAsPins := func(s *llmtest.Server) {
		answer := `{"root_cause": "The checkout pods run out of memory", "root_cause_category": "resource_exhaustion",
 "root_cause_entity": "deployment/checkout", "validated_claims": [{"claim": "pods were OOMKilled", "pin_ids": ["check_pod_status"]}], "confidence": 0.88}`
		for range 30 {
			s.Push(llmtest.Text(answer))
		}
	}
	// The same call twice in two spellings: the namespace named, then
	// left to the session's context; the tools service sees one call.
	repeatThenAnswer := func(s *llmtest.Server) {
		s.Push(llmtest.Tools(llmtest.Call{Name: "get_events", Arguments: `{"namespace":"retail"}`}), llmtest.Tools(llmtest.Call{Name: "get_events", Arguments: `{}`}))
		garbage(s)
	}
	// A tool a test adds to the registry cannot be wired into a mesh from
	// outside, and no tool of the registry writes: the read-only refusal is
	// driven inside the tools service by its own test.
	type serviceTest struct {
		file, test, constName string
		constant              investigationv1.Guardrail
	}
	serviceLevel := map[investigationv1.Guardrail]serviceTest{
		investigationv1.Guardrail_GUARDRAIL_READ_ONLY_VIOLATION: {"services/tools/guardrails_test.go", "TestReadOnlyFakeClientset", "TripReadOnly", tools.TripReadOnly},
	}
	cases := map[investigationv1.Guardrail]struct {
		scenario string
		args     []string
		model    func(*llmtest.Server)
		backend  func(*backend.Set)
		twice    bool
		// status, when set, is the outcome the owner's decision imposes.
		status investigationv1.DiagnosisStatus
	}{
		investigationv1.Guardrail_GUARDRAIL_TOOL_BUDGET:               {args: []string{"-router.tool-budget=1"}},
		investigationv1.Guardrail_GUARDRAIL_MAX_TOOL_SCHEMAS:          {args: []string{"-router.max-tool-schemas=2", "-router.secondary-reserve=1"}, model: garbage},
		investigationv1.Guardrail_GUARDRAIL_SECONDARY_TOOL_RESERVE:    {args: []string{"-router.max-tool-schemas=4", "-router.secondary-reserve=0"}, model: garbage},
		investigationv1.Guardrail_GUARDRAIL_DUPLICATE_CALL_REPLAYED:   {model: repeatThenAnswer},
		investigationv1.Guardrail_GUARDRAIL_TOOL_TIMEOUT:              {args: []string{"-tools.timeout=50ms"}, backend: func(s *backend.Set) { s.Metrics = hungMetrics{s.Metrics} }},
		investigationv1.Guardrail_GUARDRAIL_OUTPUT_TRUNCATED:          {args: []string{"-tools.max-output-bytes=256"}},
		investigationv1.Guardrail_GUARDRAIL_SECRET_REDACTED:           {scenario: "corpus/024-claims-api-rotated-db-password"},
		investigationv1.Guardrail_GUARDRAIL_CRITIC_THRESHOLD:          {args: []string{"-critic.threshold=1"}},
		investigationv1.Guardrail_GUARDRAIL_CRITIC_MAX_ROUNDS:         {args: []string{"-critic.threshold=1", "-critic.max-rounds=1"}},
		investigationv1.Guardrail_GUARDRAIL_EVALUATOR_REJECTION_LIMIT: {model: toolNamesAsPins, status: investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW},
		investigationv1.Guardrail_GUARDRAIL_EVIDENCE_SUFFICIENCY:      {model: toolNamesAsPins},
		investigationv1.Guardrail_GUARDRAIL_CONCLUDE_CONFIDENCE:       {args: []string{"-critic.conclude-confidence=1"}, model: toolNamesAsPins, status: investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW},
		investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS:                 {args: []string{"-brain.max-loops=2", "-brain.max-stagnant-iterations=10", "-brain.max-stalled-retrievals=10"}, model: endless},
		investigationv1.Guardrail_GUARDRAIL_MAX_STAGNANT_ITERATIONS:   {model: endless},
		investigationv1.Guardrail_GUARDRAIL_CONTEXT_BUDGET_CHARS:      {args: []string{"-brain.context-budget-chars=1000"}, model: endless},
		investigationv1.Guardrail_GUARDRAIL_MAX_TOOL_CALLS:            {args: []string{"-brain.max-tool-calls=1"}},
		investigationv1.Guardrail_GUARDRAIL_MAX_WALL_MS:               {args: []string{"-brain.max-wall=1ms"}},
		investigationv1.Guardrail_GUARDRAIL_MAX_STALLED_RETRIEVALS:    {args: []string{"-brain.max-stagnant-iterations=10"}, model: endless},
		investigationv1.Guardrail_GUARDRAIL_DEGRADED_RESULT:           {model: garbage},
		investigationv1.Guardrail_GUARDRAIL_CONFIDENCE_GATE:           {args: []string{"-delivery.confidence-gate=1"}},
		investigationv1.Guardrail_GUARDRAIL_ALERT_FINGERPRINT_DEDUP:   {args: []string{"-delivery.confidence-gate=0"}, twice: true},
	}
	for _, g := range all {
		spec := guardrail.Spec(g)
		t.Run(guardrail.Name(g), func(t *testing.T) {
			if st, ok := serviceLevel[g]; ok {
				src, err := os.ReadFile(filepath.Join("..", "..", st.file))
				if err != nil || st.constant != g || !strings.Contains(string(src), "func "+st.test+"(") || !strings.Contains(string(src), st.constName) {
					t.Fatalf("%s is driven by %s in %s, which does not exist or does not check it (%v)", g, st.test, st.file, err)
				}
				return
			}
			tc, ok := cases[g]
			if !ok {
				t.Fatalf("no investigation drives %s to its limit", g)
			}
			id := tc.scenario
			if id == "" {
				id = "demo"
			}
			sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", id))
			if err != nil {
				t.Fatal(err)
			}
			logger := slog.New(slog.DiscardHandler)
			set, err := fixture.New(sc, logger)
			if err != nil {
				t.Fatal(err)
			}
			if tc.backend != nil {
				tc.backend(set)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m := startTestMesh(ctx, t, set, tc.args, tc.model, 1)
			var rec *investigationv1.InvestigationRecord
			if tc.twice {
				// The same incident investigated twice: the second report is
				// not paged again.
				startForRecord(ctx, t, m, "first")
				rec = startForRecord(ctx, t, m, "second")
			} else {
				rec = submitForRecord(ctx, t, m, sc.AlertRaw)
			}
			var trip *investigationv1.GuardrailTrip
			for _, tr := range rec.GetGuardrailTrips() {
				if tr.GetKind() == g {
					trip = tr
					break
				}
			}
			if trip == nil {
				t.Fatalf("no %s trip in the record: %v", g, rec.GetGuardrailTrips())
			}
			if tc.status != 0 && rec.GetDiagnosis().GetStatus() != tc.status {
				t.Errorf("status %v, want the owner's decision %v (stop: %s)", rec.GetDiagnosis().GetStatus(), tc.status, rec.GetDiagnosis().GetStopReason())
			}
			if trip.GetOwner() != spec.GetOwner() || trip.GetGuardrail() != guardrail.Name(g) || trip.GetDetail() == "" {
				t.Errorf("trip %v, want owner %s and name %s", trip, spec.GetOwner(), guardrail.Name(g))
			}
			live := rec.GetGuardrails().ProtoReflect()
			if f := live.Descriptor().Fields().ByName(protoreflect.Name(spec.GetRecordField())); f == nil || !live.Has(f) {
				t.Errorf("the record lacks the live limit %s: %v", spec.GetRecordField(), rec.GetGuardrails())
			}
		})
	}
}

// submitForRecord submits an alert, waits for its investigation and returns
// the record.
func submitForRecord(ctx context.Context, t *testing.T, m *meshProc, alert []byte) *investigationv1.InvestigationRecord {
	t.Helper()
	var payload structpb.Struct
	if err := protojson.Unmarshal(alert, &payload); err != nil {
		t.Fatal(err)
	}
	bc := brainv1.NewBrainServiceClient(m.conn)
	resp, err := bc.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: &payload, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := bc.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId(), InvestigationId: resp.GetInvestigationId()})
	if err != nil {
		t.Fatal(err)
	}
	return rec.GetRecord()
}

// startForRecord starts an investigation of the demo's service in a session
// of its own and returns the record.
func startForRecord(ctx context.Context, t *testing.T, m *meshProc, session string) *investigationv1.InvestigationRecord {
	t.Helper()
	bc := brainv1.NewBrainServiceClient(m.conn)
	resp, err := bc.StartInvestigation(ctx, &brainv1.StartInvestigationRequest{SessionId: session, Service: "orders-api", Namespace: "retail", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := bc.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId(), InvestigationId: resp.GetInvestigationId()})
	if err != nil {
		t.Fatal(err)
	}
	return rec.GetRecord()
}

// hungMetrics is a metrics backend whose queries never answer: they wait
// for the caller to give up.
type hungMetrics struct{ backend.Metrics }

func (hungMetrics) Query(ctx context.Context, _ string, _ time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (hungMetrics) QueryRange(ctx context.Context, _ string, _ promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// TestMaxLoopsBindsBothLoops: -brain.max-loops caps the rules loop (whose
// rounds the critic would otherwise end at -critic.max-rounds) and the model
// loop alike; the rules loop runs the smaller of the two limits and the one
// that binds records its trip.
func TestMaxLoopsBindsBothLoops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		endless    bool
		loops      int32
		tripped    investigationv1.Guardrail
		notTripped investigationv1.Guardrail
	}{
		{name: "rules loop, brain cap below the critic's rounds", args: []string{"-critic.threshold=1", "-critic.max-rounds=3", "-brain.max-loops=2", "-brain.max-stalled-retrievals=10", "-brain.max-stagnant-iterations=10"},
			loops: 2, tripped: investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS, notTripped: investigationv1.Guardrail_GUARDRAIL_CRITIC_MAX_ROUNDS},
		{name: "rules loop, critic's rounds below the brain cap", args: []string{"-critic.threshold=1", "-critic.max-rounds=2", "-brain.max-loops=3", "-brain.max-stalled-retrievals=10", "-brain.max-stagnant-iterations=10"},
			loops: 2, tripped: investigationv1.Guardrail_GUARDRAIL_CRITIC_MAX_ROUNDS, notTripped: investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS},
		{name: "model loop", args: []string{"-brain.max-loops=2", "-brain.max-stalled-retrievals=10", "-brain.max-stagnant-iterations=10"}, endless: true,
			loops: 2, tripped: investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			set, err := fixture.New(sc, logger)
			if err != nil {
				t.Fatal(err)
			}
			var model func(*llmtest.Server)
			if tc.endless {
				model = func(s *llmtest.Server) { s.Endless("check_pod_status", `{"namespace":"retail"}`) }
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m := startTestMesh(ctx, t, set, tc.args, model, 0)
			rec := submitForRecord(ctx, t, m, sc.AlertRaw)
			has := func(g investigationv1.Guardrail) bool {
				for _, tr := range rec.GetGuardrailTrips() {
					if tr.GetKind() == g {
						return true
					}
				}
				return false
			}
			if rec.GetLoops() != tc.loops || !has(tc.tripped) || (tc.notTripped != 0 && has(tc.notTripped)) {
				t.Fatalf("loops %d (want %d), trips %v: want %s, not %s", rec.GetLoops(), tc.loops, rec.GetGuardrailTrips(), tc.tripped, tc.notTripped)
			}
			if got := rec.GetDiagnosis().GetStatus(); got == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED {
				t.Errorf("a loop stopped at its cap concluded: %v", rec.GetDiagnosis().GetStopReason())
			}
		})
	}
}

// startTestMesh starts the whole mesh in process over set, with a scripted
// model server when model is set (retries: the model client's), and stops
// it when the test ends.
func startTestMesh(ctx context.Context, t *testing.T, set *backend.Set, args []string, model func(*llmtest.Server), retries int) *meshProc {
	t.Helper()
	args = slices.Clone(args)
	if model != nil {
		srv := llmtest.New(t)
		model(srv)
		args = append(args, "-llm.provider=openai-compatible", "-llm.base-url="+srv.BaseURL(), "-llm.model=scripted",
			fmt.Sprintf("-llm.max-retries=%d", retries), "-llm.timeout=5s")
	}
	m, err := startMesh(ctx, set, filepath.Join(t.TempDir(), "data"), slog.New(slog.DiscardHandler), args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return m
}
