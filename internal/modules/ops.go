package modules

import (
	"context"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/history"
	"github.com/rcamesh/rcamesh/internal/mcpserver"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Module names of the operability modules (beside the five services).
const (
	// History keeps past investigations (JetStream KV or PostgreSQL) and serves HistoryService.
	History = "history"
	// MCP serves the Model Context Protocol at /mcp on the gateway.
	MCP = "mcp"
)

// registerOps registers the operability modules: the investigation history
// and the MCP endpoint.
func registerOps(r *app.Registry) error {
	if err := r.Register(MCP, func(_ context.Context, env app.Env) (app.Module, error) {
		return mcpserver.NewModule(env.Clients, mcpserver.Options{}), nil
	}, app.Needs(mesh.Brain, mesh.Router, mesh.Delivery)); err != nil {
		return err
	}
	histCfg := history.DefaultConfig()
	return r.Register(History, func(ctx context.Context, env app.Env) (app.Module, error) {
		store, err := history.Open(ctx, histCfg, env.Bus, env.Logger)
		if err != nil {
			return nil, err
		}
		return history.New(histCfg, history.Deps{Logger: env.Logger, Bus: env.Bus, Clients: env.Clients, Store: store})
	}, app.WithFlags(histCfg.RegisterFlags), app.Needs(mesh.Brain, mesh.Delivery))
}
