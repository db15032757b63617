package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/scenarios"
)

// meshProc is one in-process rcamesh (all services, embedded NATS) on
// loopback ports, driven through its gRPC API like any other client.
type meshProc struct {
	local *modules.Local
	conn  *grpc.ClientConn
}

// startMesh runs every service in this process against set.
func startMesh(ctx context.Context, set *backend.Set, dataDir string, logger *slog.Logger, extraArgs []string) (*meshProc, error) {
	return startMeshWith(ctx, set, dataDir, logger, extraArgs, nil)
}

// startMeshWith is startMesh with a last word on the process config.
func startMeshWith(ctx context.Context, set *backend.Set, dataDir string, logger *slog.Logger, extraArgs []string, mutate func(*app.Config)) (*meshProc, error) {
	l, err := modules.StartLocal(ctx, modules.Options{Backend: set}, dataDir, logger, extraArgs, mutate)
	if errors.Is(err, modules.ErrUsage) {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err != nil {
		return nil, err
	}
	return &meshProc{local: l, conn: l.Conn}, nil
}

func (m *meshProc) stop() error { return m.local.Stop() }

// investigation is what one run produced.
type investigation struct {
	Scoring  map[string]any
	Markdown string
}

// investigateAlert submits the raw alert payload and collects the record,
// pins and report.
func (m *meshProc) investigateAlert(ctx context.Context, alertJSON []byte, scenarioID string) (*investigation, error) {
	var payload structpb.Struct
	if err := protojson.Unmarshal(intake.WrapArray(alertJSON), &payload); err != nil {
		return nil, fmt.Errorf("alert is not a JSON object: %w", err)
	}
	bc := brainv1.NewBrainServiceClient(m.conn)
	resp, err := bc.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: &payload, Wait: true})
	if err != nil {
		return nil, fmt.Errorf("submit alert: %w", err)
	}
	out := &investigation{}
	if resp.GetNoise() {
		out.Scoring = map[string]any{"scenario_id": scenarioID, "root_cause": "noise: " + resp.GetAlert().GetNoiseReason(),
			"root_cause_category": "healthy", "confidence": 0.0, "tools_called": []any{}, "loops": 0}
		out.Markdown = fmt.Sprintf("# %s\n\nClassified as noise: %s. No tool was run.\n", resp.GetAlert().GetTitle(), resp.GetAlert().GetNoiseReason())
		return out, nil
	}
	rec, err := bc.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId(), InvestigationId: resp.GetInvestigationId()})
	if err != nil {
		return nil, fmt.Errorf("get record: %w", err)
	}
	pins, err := mesh.AllPins(ctx, bc, resp.GetSessionId())
	if err != nil {
		return nil, fmt.Errorf("list pins: %w", err)
	}
	rep, err := deliveryv1.NewDeliveryServiceClient(m.conn).GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: resp.GetSessionId()})
	if err == nil {
		out.Markdown = rep.GetReport().GetMarkdown()
	}
	out.Scoring = score.Record(rec.GetRecord(), pins, scenarioID, out.Markdown)
	return out, nil
}

func investigateCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("investigate", flag.ContinueOnError)
	fs.SetOutput(stdout)
	alertPath := fs.String("i", "", "alert JSON file (any format the intake accepts); default: the scenario's alert.json")
	scenarioDir := fs.String("scenario", "", "scenario folder served by the fixture backend; default: the bundled demo")
	format := fs.String("format", "md", "output: md (the report) or json (the scoring object)")
	dataDir := fs.String("data.dir", "", "data directory (default: a temporary one, removed afterwards)")
	lc := &logConfig{}
	lc.registerFlags(fs)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if *format != "md" && *format != "json" {
		return fmt.Errorf("%w: -format %q: want md or json", errUsage, *format)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	if lc.level == "info" {
		lc.level = "warn" // the report is the output; keep logs quiet unless asked
	}
	logger, err := lc.logger(os.Stderr)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "rcamesh-investigate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := *scenarioDir
	if dir == "" {
		if dir, err = scenarios.Extract(scenarios.Demo, tmp); err != nil {
			return err
		}
	}
	sc, err := scenario.Load(dir)
	if err != nil {
		return err
	}
	alert := []byte(sc.AlertRaw)
	if *alertPath != "" {
		if alert, err = os.ReadFile(*alertPath); err != nil {
			return err
		}
	}
	set, err := fixture.New(sc, logger)
	if err != nil {
		return err
	}
	dd := *dataDir
	if dd == "" {
		dd = filepath.Join(tmp, "data")
	}
	m, err := startMesh(ctx, set, dd, logger, nil)
	if err != nil {
		return err
	}
	res, runErr := m.investigateAlert(ctx, alert, sc.ID)
	if err := m.stop(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Scoring)
	}
	_, err = io.WriteString(stdout, res.Markdown)
	return err
}

// defaultParallel is how many scenarios eval runs at once.
func defaultParallel() int {
	n := runtime.NumCPU()
	if n > 4 {
		n = 4
	}
	if n < 1 {
		n = 1
	}
	return n
}
