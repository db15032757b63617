// Package mesh holds the generated gRPC clients through which the five
// services call each other. In all-in-one mode every client shares one
// connection to the process's own gRPC server; in split mode each points at
// the address of the process that runs that service. Either way calls go over
// real gRPC, with the same interceptors and tracing.
package mesh

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

// Service names, as used by -target and in guardrail ownership.
const (
	Router   = "router"
	Tools    = "tools"
	Critic   = "critic"
	Brain    = "brain"
	Delivery = "delivery"
)

// All lists the services in start order (dependencies first).
var All = []string{Tools, Critic, Router, Delivery, Brain}

// Clients are the generated clients of every service.
type Clients struct {
	Router   routerv1.RouterServiceClient
	Tools    toolsv1.ToolsServiceClient
	Critic   criticv1.CriticServiceClient
	Brain    brainv1.BrainServiceClient
	Delivery deliveryv1.DeliveryServiceClient
}

// NewClients builds clients from one connection per service. conns maps a
// service name to its connection; a missing name is an error.
func NewClients(conns map[string]grpc.ClientConnInterface) (Clients, error) {
	for _, name := range All {
		if conns[name] == nil {
			return Clients{}, fmt.Errorf("mesh: no connection for service %q", name)
		}
	}
	return Clients{
		Router:   routerv1.NewRouterServiceClient(conns[Router]),
		Tools:    toolsv1.NewToolsServiceClient(conns[Tools]),
		Critic:   criticv1.NewCriticServiceClient(conns[Critic]),
		Brain:    brainv1.NewBrainServiceClient(conns[Brain]),
		Delivery: deliveryv1.NewDeliveryServiceClient(conns[Delivery]),
	}, nil
}

// Shared builds clients that all use one connection (all-in-one mode).
func Shared(cc grpc.ClientConnInterface) Clients {
	c, _ := NewClients(map[string]grpc.ClientConnInterface{
		Router: cc, Tools: cc, Critic: cc, Brain: cc, Delivery: cc,
	})
	return c
}

// AllPins reads every pin of a session from the brain, page after page
// (ListPins pages its answer so that it always fits a gRPC message).
func AllPins(ctx context.Context, c brainv1.BrainServiceClient, session string) ([]*evidencev1.EvidencePin, error) {
	var out []*evidencev1.EvidencePin
	token := ""
	for {
		resp, err := c.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: session, PageToken: token, PageSize: 500})
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetPins()...)
		token = resp.GetNextPageToken()
		if token == "" || len(resp.GetPins()) == 0 {
			return out, nil
		}
	}
}

// ToolDefinitionLister is the part of the tools client that lists definitions.
type ToolDefinitionLister interface {
	ListToolDefinitions(ctx context.Context, in *toolsv1.ListToolDefinitionsRequest, opts ...grpc.CallOption) (*toolsv1.ListToolDefinitionsResponse, error)
}

// maxToolPages bounds the walk of the tool registry's pages.
const maxToolPages = 1000

// ToolDefinitions reads every page of the tools service's registry for
// session (the mesh's own callers need the whole registry).
func ToolDefinitions(ctx context.Context, c ToolDefinitionLister, session string) ([]*evidencev1.ToolDefinition, error) {
	var out []*evidencev1.ToolDefinition
	token := ""
	for range maxToolPages {
		resp, err := c.ListToolDefinitions(ctx, &toolsv1.ListToolDefinitionsRequest{SessionId: session, PageToken: token})
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetTools()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		if resp.GetNextPageToken() == token {
			return nil, fmt.Errorf("mesh: ListToolDefinitions returned the same page token twice")
		}
		token = resp.GetNextPageToken()
	}
	return nil, fmt.Errorf("mesh: ListToolDefinitions has more than %d pages", maxToolPages)
}

// EveryNamespace reports whether a namespace parameter means every
// namespace ("all", "*", "_all") rather than one.
func EveryNamespace(ns string) bool {
	return ns == "all" || ns == "*" || ns == "_all"
}

// ContextValue reads the RouterContext field or extra key a tool
// parameter's default_from_context names (the tools service fills the
// parameter from it; the brain leaves such a parameter to it).
func ContextValue(rc *evidencev1.RouterContext, field string) string {
	if rc == nil || field == "" {
		return ""
	}
	switch field {
	case "active_namespace", "namespace":
		return rc.GetActiveNamespace()
	case "active_service", "service":
		return rc.GetActiveService()
	case "active_pod", "pod":
		return rc.GetActivePod()
	case "session_id":
		return rc.GetSessionId()
	case "incident_id":
		return rc.GetIncidentId()
	}
	return rc.GetExtra()[field]
}
