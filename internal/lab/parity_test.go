package lab

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/backend/live"
	"github.com/rcamesh/rcamesh/internal/integrations"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/internal/server"
)

// TestDiagnosisParity investigates the demo scenario twice through every
// service: once on the fixture backend, once with Kubernetes (etcd +
// kube-apiserver + kwok, pod logs through the API server) and Prometheus
// (backfilled) as real servers. The diagnosis must be the same. No log store
// or deploy-log server runs on these machines, so log search, deploys and
// commits come from the recording in both runs.
func TestDiagnosisParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver, kwok and Prometheus")
	}
	dir := filepath.Join("..", "..", "scenarios", "demo")
	sc, err := scenario.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	fx, err := fixture.New(sc, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k, err := StartKube(ctx, t.TempDir())
	if err != nil {
		if IsMissing(err) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer k.Stop()
	if _, err := k.LoadScenario(ctx, sc); err != nil {
		t.Fatal(err)
	}
	prom, err := StartPrometheus(ctx, sc.Evidence["prometheus"], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	real, _ := live.Build(&integrations.Config{
		Kubernetes: &integrations.Kubernetes{Kubeconfig: k.Kubeconfig, Timeout: 10 * time.Second},
		Prometheus: &integrations.Prometheus{URL: prom.URL, Timeout: 10 * time.Second},
	}, logger)
	if real.Kube == nil || real.Metrics == nil {
		t.Fatalf("live backend incomplete: %+v", real)
	}
	// What no server here can serve comes from the recording.
	real.Logs, real.Changes, real.Monitors = fx.Logs, fx.Changes, fx.Monitors
	for _, a := range []string{backend.AreaLogs, backend.AreaDeploys, backend.AreaCommits, backend.AreaMonitors} {
		real.Sources[a] = fx.Sources[a]
	}

	investigate := func(set *backend.Set) *investigationv1.Diagnosis {
		t.Helper()
		grpcAddr, _ := startRcameshOn(ctx, t, set)
		conn, err := server.NewClientConn(grpcAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var payload structpb.Struct
		if err := protojson.Unmarshal(sc.AlertRaw, &payload); err != nil {
			t.Fatal(err)
		}
		resp, err := brainv1.NewBrainServiceClient(conn).SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: &payload, Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetDiagnosis()
	}
	want := investigate(fx)
	got := investigate(real)
	if want.GetCategory() == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN {
		t.Fatalf("fixture run did not conclude: %v", want)
	}
	if got.GetCategory() != want.GetCategory() || got.GetRootCauseEntity() != want.GetRootCauseEntity() || got.GetStatus() != want.GetStatus() {
		t.Fatalf("diagnoses differ:\nfixture: %v %s %v: %s\nreal:    %v %s %v: %s",
			want.GetCategory(), want.GetRootCauseEntity(), want.GetStatus(), want.GetRootCause(),
			got.GetCategory(), got.GetRootCauseEntity(), got.GetStatus(), got.GetRootCause())
	}
	t.Logf("both: %v %s — %s", got.GetCategory(), got.GetRootCauseEntity(), got.GetRootCause())
}
