package auth

import (
	"fmt"
	"slices"
	"strings"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
)

// Role is what a caller may do.
type Role string

// The roles. Admin includes read, steer and ingest; service (the identity
// of the mesh's own processes) includes everything. Public needs no caller.
const (
	RolePublic  Role = "public"
	RoleRead    Role = "read"
	RoleSteer   Role = "steer"
	RoleIngest  Role = "ingest"
	RoleAdmin   Role = "admin"
	RoleService Role = "service"
)

// grantable are the roles a token or a JWT may carry (public is no role).
var grantable = []Role{RoleRead, RoleSteer, RoleIngest, RoleAdmin, RoleService}

// ParseRoles parses a comma list of roles.
func ParseRoles(s string) ([]Role, error) {
	var out []Role
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		r := Role(strings.ToLower(f))
		if !slices.Contains(grantable, r) {
			return nil, fmt.Errorf("unknown role %q (want read, steer, ingest, admin or service)", f)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no role in %q", s)
	}
	return out, nil
}

// Policy is the one table of who may call what: every gRPC method the
// processes serve (and so every REST route, which the gateway turns into
// one of them) to the role it needs. A method missing here is refused.
// TestPolicyCoversEveryMethodAndRoute walks the registered services and the
// OpenAPI document and fails on a method or route without a row.
var Policy = map[string]Role{
	// Probes and discovery.
	"/grpc.health.v1.Health/Check":                                   RolePublic,
	"/grpc.health.v1.Health/Watch":                                   RolePublic,
	"/grpc.health.v1.Health/List":                                    RolePublic,
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo":      RoleRead,
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": RoleRead,

	// Brain: intake (webhooks), sessions, pins, events.
	brainv1.BrainService_SubmitAlert_FullMethodName:        RoleIngest,
	brainv1.BrainService_StartInvestigation_FullMethodName: RoleSteer,
	brainv1.BrainService_GetSession_FullMethodName:         RoleRead,
	brainv1.BrainService_ListSessions_FullMethodName:       RoleRead,
	brainv1.BrainService_ListPins_FullMethodName:           RoleRead,
	brainv1.BrainService_StreamEvents_FullMethodName:       RoleRead,
	brainv1.BrainService_GetDiagnosis_FullMethodName:       RoleRead,
	brainv1.BrainService_GetRecord_FullMethodName:          RoleRead,

	// Router: steering is public API, planning is internal.
	routerv1.RouterService_Investigate_FullMethodName:     RoleSteer,
	routerv1.RouterService_Chat_FullMethodName:            RoleSteer,
	routerv1.RouterService_ListTools_FullMethodName:       RoleRead,
	routerv1.RouterService_ListSuggestions_FullMethodName: RoleRead,
	routerv1.RouterService_SelectTools_FullMethodName:     RoleService,
	routerv1.RouterService_PlanActions_FullMethodName:     RoleService,

	// Tools and critic: internal only (tools run through the router).
	toolsv1.ToolsService_ExecuteTool_FullMethodName:         RoleService,
	toolsv1.ToolsService_ListToolDefinitions_FullMethodName: RoleService,
	toolsv1.ToolsService_ResolveIntegrations_FullMethodName: RoleService,
	criticv1.CriticService_RevalidatePin_FullMethodName:     RoleService,
	criticv1.CriticService_ReviewHypotheses_FullMethodName:  RoleService,
	criticv1.CriticService_AcceptConclusion_FullMethodName:  RoleService,
	criticv1.CriticService_EvaluateFinding_FullMethodName:   RoleService,

	// Delivery: reports are readable, delivering one is internal.
	deliveryv1.DeliveryService_DeliverReport_FullMethodName: RoleService,
	// History: past investigations are read like live ones.
	historyv1.HistoryService_ListInvestigations_FullMethodName: RoleRead,
	historyv1.HistoryService_GetInvestigation_FullMethodName:   RoleRead,
	// Triage: submitting a scanner's findings starts investigations, as
	// an alert does.
	triagev1.TriageService_TriageFindings_FullMethodName:  RoleIngest,
	deliveryv1.DeliveryService_GetReport_FullMethodName:   RoleRead,
	deliveryv1.DeliveryService_ListReports_FullMethodName: RoleRead,
}

// Required is the role method needs; ok is false for a method not in Policy.
func Required(method string) (Role, bool) {
	r, ok := Policy[method]
	return r, ok
}

// Has reports whether roles grant need: service grants everything, admin
// every role but service, any other role only itself.
func Has(roles []Role, need Role) bool {
	if need == RolePublic {
		return true
	}
	for _, r := range roles {
		switch {
		case r == need, r == RoleService:
			return true
		case r == RoleAdmin && need != RoleService:
			return true
		}
	}
	return false
}
