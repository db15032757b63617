package modules

import (
	"context"
	"log/slog"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	"github.com/rcamesh/rcamesh/internal/sast"
)

// StartTriageMesh runs every service in this process (embedded NATS, data
// under dataDir) with the critic re-reading cited code under codeRoot, and
// returns it with the critic's evaluator reached over gRPC: the one-shot
// triage of the CLI and of the evaluation judge verdicts through the mesh
// like the triage service does.
func StartTriageMesh(ctx context.Context, codeRoot, dataDir, session string, logger *slog.Logger) (*Local, *sast.CriticEvaluator, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l, err := StartLocal(ctx, Options{}, dataDir, logger, []string{"-critic.code-root=" + codeRoot}, nil)
	if err != nil {
		return nil, nil, err
	}
	return l, &sast.CriticEvaluator{Client: criticv1.NewCriticServiceClient(l.Conn), Session: session}, nil
}
