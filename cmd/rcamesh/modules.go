package main

import "github.com/rcamesh/rcamesh/internal/app"

// registerModules registers the five service modules (router, tools, critic,
// brain, delivery) — LEAD: fill in. Each entry is
//
//	cfg := tools.DefaultConfig()
//	r.Register(mesh.Tools, func(ctx context.Context, env app.Env) (app.Module, error) {
//		if err := cfg.Validate(); err != nil { return nil, err }
//		return tools.New(cfg, tools.Deps{Logger: env.Logger, Bus: env.Bus, Clients: env.Clients})
//	}, app.WithFlags(cfg.RegisterFlags), app.Needs( /* services it calls */ ))
//
// It registers nothing yet.
func registerModules(r *app.Registry) error {
	_ = r
	return nil
}
