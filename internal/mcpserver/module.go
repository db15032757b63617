package mcpserver

import (
	"context"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Path is where the gateway serves MCP over streamable HTTP.
const Path = "/mcp"

// Module serves MCP over streamable HTTP at Path on the process's gateway
// (app.HTTPModule). It has no gRPC service and no loop of its own.
type Module struct {
	clients mesh.Clients
	opt     Options
}

// NewModule builds the module; the history service is reached through the
// process's own gRPC server (it runs in the same process as this module).
func NewModule(clients mesh.Clients, opt Options) *Module { return &Module{clients: clients, opt: opt} }

// Register implements app.Module (no gRPC service).
func (m *Module) Register(*grpc.Server) {}

// RegisterGateway implements app.Module (no REST routes).
func (m *Module) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}

// Run implements app.Module.
func (m *Module) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// HTTPHandlers implements app.HTTPModule.
func (m *Module) HTTPHandlers(self *grpc.ClientConn) map[string]http.Handler {
	c := Clients{Brain: m.clients.Brain, Router: m.clients.Router, Delivery: m.clients.Delivery, History: historyv1.NewHistoryServiceClient(self)}
	return map[string]http.Handler{Path: HTTPHandler(New(c, m.opt))}
}
