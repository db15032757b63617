package modules

import (
	"context"
	"fmt"
	"slices"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Gateway is the module name of the REST front door of split mode.
const Gateway = "gateway"

// restServices are the services with REST routes and how the gateway reaches
// each through its generated gRPC client (tools and critic have none).
var restServices = []struct {
	name     string
	register func(ctx context.Context, mux *runtime.ServeMux, c mesh.Clients) error
}{
	{mesh.Router, func(ctx context.Context, mux *runtime.ServeMux, c mesh.Clients) error {
		return routerv1.RegisterRouterServiceHandlerClient(ctx, mux, c.Router)
	}},
	{mesh.Brain, func(ctx context.Context, mux *runtime.ServeMux, c mesh.Clients) error {
		return brainv1.RegisterBrainServiceHandlerClient(ctx, mux, c.Brain)
	}},
	{mesh.Delivery, func(ctx context.Context, mux *runtime.ServeMux, c mesh.Clients) error {
		return deliveryv1.RegisterDeliveryServiceHandlerClient(ctx, mux, c.Delivery)
	}},
}

// gateway serves, in one process, the REST routes of every service that
// does not run in it, proxied over gRPC to -<svc>.addr (round-robin over
// the replicas with a dns:/// address). A service that runs in the same
// process serves its own routes, so the gateway adds nothing in -target=all.
type gateway struct {
	clients mesh.Clients
	local   []string
}

func newGateway(_ context.Context, env app.Env) (app.Module, error) {
	return &gateway{clients: env.Clients, local: env.Targets}, nil
}

func (g *gateway) Register(*grpc.Server) {}

func (g *gateway) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, _ *grpc.ClientConn) error {
	for _, svc := range restServices {
		if slices.Contains(g.local, svc.name) {
			continue
		}
		if err := svc.register(ctx, mux, g.clients); err != nil {
			return fmt.Errorf("gateway: register %s routes: %w", svc.name, err)
		}
	}
	return nil
}

func (g *gateway) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func registerGateway(r *app.Registry) error {
	needs := make([]string, 0, len(restServices))
	for _, svc := range restServices {
		needs = append(needs, svc.name)
	}
	return r.Register(Gateway, newGateway, app.Needs(needs...))
}
