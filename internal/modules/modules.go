// Package modules registers the five rcamesh services with the app's module
// registry: the one place that wires each service's config, flags and
// dependencies. The binary, the evaluation and the lab tests all use it.
package modules

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/backend/live"
	"github.com/rcamesh/rcamesh/internal/integrations"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/services/brain"
	"github.com/rcamesh/rcamesh/services/critic"
	"github.com/rcamesh/rcamesh/services/delivery"
	"github.com/rcamesh/rcamesh/services/router"
	"github.com/rcamesh/rcamesh/services/tools"
	"github.com/rcamesh/rcamesh/services/triage"
)

// ErrUsage marks a configuration mistake a user made.
var ErrUsage = errors.New("usage")

// Options let a command inject what flags would otherwise choose.
type Options struct {
	// Backend, when set, is what the tools service inspects (investigate
	// and eval pass a scenario's fixture backend).
	Backend *backend.Set
}

// sharedModel builds the LLM provider once per process for the router's
// smart path and the brain's ReAct loop.
type sharedModel struct {
	cfg  llm.Config
	once sync.Once
	p    llm.Provider
	err  error
}

func (m *sharedModel) get(logger *slog.Logger) (llm.Provider, error) {
	m.once.Do(func() {
		m.p, m.err = llm.New(m.cfg, logger)
		if m.err == nil && m.p != nil {
			logger.Info("model configured", "provider", m.p.Name(), "model", m.p.Model())
		}
	})
	return m.p, m.err
}

// backendFlags choose what the tools service inspects.
type backendFlags struct {
	scenario     string
	integrations string
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.scenario, "tools.scenario", "", "serve a recorded scenario folder (the fixture backend) instead of live integrations")
	fs.StringVar(&b.integrations, "integrations.config", "", "YAML file declaring the live integrations (Kubernetes, Prometheus, logs, git)")
}

func (b *backendFlags) build(ctx context.Context, logger *slog.Logger) (*backend.Set, error) {
	switch {
	case b.scenario != "" && b.integrations != "":
		return nil, fmt.Errorf("%w: set -tools.scenario or -integrations.config, not both", ErrUsage)
	case b.scenario != "":
		sc, err := scenario.Load(b.scenario)
		if err != nil {
			return nil, err
		}
		return fixture.New(sc, logger)
	case b.integrations != "":
		cfg, err := integrations.Load(b.integrations)
		if err != nil {
			return nil, err
		}
		set, _ := live.Build(cfg, logger) // Build logs what it could not configure
		for _, s := range live.Check(ctx, set) {
			if s.Available {
				logger.Info("integration healthy", "integration", s.Name)
			} else {
				logger.Warn("integration unhealthy", "integration", s.Name, "reason", s.Reason)
			}
		}
		return set, nil
	}
	logger.Warn("no integrations configured: every tool will report 'integration not configured' (set -integrations.config or -tools.scenario)")
	return &backend.Set{Name: "none", Sources: map[string]string{}}, nil
}

// Triage is the SAST triage module; it is not one of the five
// services of mesh.All and runs with -target=all or -target=triage.
const Triage = "triage"

// Register registers router, tools, critic, brain, delivery and triage on
// r, with their flags, and the gateway (the REST routes of services run
// elsewhere).
func Register(r *app.Registry, opt Options) error {
	model := &sharedModel{cfg: llm.DefaultConfig()}
	modelFlags := func(fs *flag.FlagSet) {
		if fs.Lookup("llm.provider") == nil {
			model.cfg.RegisterFlags(fs)
		}
	}

	toolsCfg := tools.DefaultConfig()
	bf := &backendFlags{}
	if err := r.Register(mesh.Tools, func(ctx context.Context, env app.Env) (app.Module, error) {
		if err := toolsCfg.Validate(); err != nil {
			return nil, err
		}
		set := opt.Backend
		if set == nil {
			var err error
			if set, err = bf.build(ctx, env.Logger); err != nil {
				return nil, err
			}
		}
		return tools.New(toolsCfg, tools.Deps{Logger: env.Logger, Bus: env.Bus, Brain: env.Clients.Brain, Backend: set})
	}, app.WithFlags(toolsCfg.RegisterFlags), app.WithFlags(bf.register), app.Needs(mesh.Callees(tools.Deps{})...)); err != nil {
		return err
	}

	triageCfg := triage.DefaultConfig()
	criticCfg := critic.DefaultConfig()
	if err := r.Register(mesh.Critic, func(ctx context.Context, env app.Env) (app.Module, error) {
		if err := criticCfg.Validate(); err != nil {
			return nil, err
		}
		if criticCfg.CodeRoot == "" {
			// one process: the SAST evaluator re-reads the checkouts the
			// triage service reads
			criticCfg.CodeRoot = triageCfg.CodeRoot
		}
		return critic.New(criticCfg, critic.Deps{Logger: env.Logger, Bus: env.Bus, Tools: env.Clients.Tools})
	}, app.WithFlags(criticCfg.RegisterFlags), app.Needs(mesh.Callees(critic.Deps{})...),
		// Its batches of verdicts (and their acknowledgements) would queue
		// in front of the tools' pins on a shared connection.
		app.OwnNATSConnection()); err != nil {
		return err
	}

	routerCfg := router.DefaultConfig()
	if err := r.Register(mesh.Router, func(ctx context.Context, env app.Env) (app.Module, error) {
		if err := routerCfg.Validate(); err != nil {
			return nil, err
		}
		p, err := model.get(env.Logger)
		if err != nil {
			return nil, err
		}
		return router.New(routerCfg, router.Deps{Logger: env.Logger, Bus: env.Bus, Tools: env.Clients.Tools, Brain: env.Clients.Brain, LLM: p})
	}, app.WithFlags(routerCfg.RegisterFlags), app.WithFlags(modelFlags), app.Needs(mesh.Callees(router.Deps{})...)); err != nil {
		return err
	}

	deliveryCfg := delivery.DefaultConfig()
	if err := r.Register(mesh.Delivery, func(ctx context.Context, env app.Env) (app.Module, error) {
		if err := deliveryCfg.Validate(); err != nil {
			return nil, err
		}
		return delivery.New(deliveryCfg, delivery.Deps{Logger: env.Logger, Bus: env.Bus})
	}, app.WithFlags(deliveryCfg.RegisterFlags), app.Needs(mesh.Callees(delivery.Deps{})...)); err != nil {
		return err
	}

	if err := r.Register(Triage, func(ctx context.Context, env app.Env) (app.Module, error) {
		p, err := model.get(env.Logger)
		if err != nil {
			return nil, err
		}
		return triage.New(triageCfg, triage.Deps{Logger: env.Logger, Bus: env.Bus, LLM: p, Critic: env.Clients.Critic})
	}, app.WithFlags(triageCfg.RegisterFlags), app.WithFlags(modelFlags), app.Needs(mesh.Critic)); err != nil {
		return err
	}

	brainCfg := brain.DefaultConfig()
	if err := r.Register(mesh.Brain, func(ctx context.Context, env app.Env) (app.Module, error) {
		if err := brainCfg.Validate(); err != nil {
			return nil, err
		}
		p, err := model.get(env.Logger)
		if err != nil {
			return nil, err
		}
		return brain.New(brainCfg, brain.Deps{Logger: env.Logger, Bus: env.Bus, Router: env.Clients.Router, Tools: env.Clients.Tools,
			Critic: env.Clients.Critic, Delivery: env.Clients.Delivery, LLM: p, ModelMaxRetries: model.cfg.MaxRetries})
	}, app.WithFlags(brainCfg.RegisterFlags), app.WithFlags(modelFlags), app.Needs(mesh.Callees(brain.Deps{})...)); err != nil {
		return err
	}
	if err := registerGateway(r); err != nil {
		return err
	}
	return registerOps(r)
}
