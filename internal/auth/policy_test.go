package auth_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rcamesh/rcamesh/api/openapi"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/server"
)

// rcameshMethods lists every RPC of every rcamesh.* service linked into the
// binary (the generated packages register their descriptors).
func rcameshMethods(t *testing.T) map[string]string { // "Service_Method" -> full method
	t.Helper()
	out := map[string]string{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "rcamesh.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				out[string(sd.Name())+"_"+string(md.Name())] = fmt.Sprintf("/%s/%s", sd.FullName(), md.Name())
			}
		}
		return true
	})
	if len(out) < 20 {
		t.Fatalf("found only %d rcamesh RPCs: are the generated packages linked?", len(out))
	}
	return out
}

// TestPolicyCoversEveryMethodAndRoute walks every gRPC method (the rcamesh
// services, health and reflection as the server registers them) and every
// REST route of the OpenAPI document: each needs a row in auth.Policy.
func TestPolicyCoversEveryMethodAndRoute(t *testing.T) {
	methods := rcameshMethods(t)
	for name, full := range methods {
		if _, ok := auth.Required(full); !ok {
			t.Errorf("RPC %s (%s) has no row in auth.Policy", name, full)
		}
	}
	gs := server.NewGRPCServer(nil)
	for svc, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			full := "/" + svc + "/" + m.Name
			if _, ok := auth.Required(full); !ok {
				t.Errorf("built-in RPC %s has no row in auth.Policy", full)
			}
		}
	}

	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	routes := 0
	for path, ops := range doc.Paths {
		for verb, op := range ops {
			routes++
			// grpc-gateway numbers the second binding of one RPC: SubmitAlert2.
			id := strings.TrimRight(op.OperationID, "0123456789")
			full, ok := methods[id]
			if !ok {
				t.Errorf("REST %s %s (operation %s) maps to no rcamesh RPC", strings.ToUpper(verb), path, op.OperationID)
				continue
			}
			need, ok := auth.Required(full)
			if !ok {
				t.Errorf("REST %s %s (%s) has no row in auth.Policy", strings.ToUpper(verb), path, full)
			}
			if need == auth.RoleService || need == auth.RolePublic {
				t.Errorf("REST %s %s needs %q: a public route must need a user role", strings.ToUpper(verb), path, need)
			}
		}
	}
	if routes < 15 {
		t.Errorf("only %d REST routes in the OpenAPI document", routes)
	}

	// No stale rows: every row names a method that exists.
	for full := range auth.Policy {
		found := false
		for _, m := range methods {
			found = found || m == full
		}
		if !found && !strings.HasPrefix(full, "/grpc.") {
			t.Errorf("auth.Policy row %s names no RPC", full)
		}
	}
}

func TestInternalRPCsNeedTheServiceRole(t *testing.T) {
	for _, m := range []string{
		"/rcamesh.tools.v1.ToolsService/ExecuteTool",
		"/rcamesh.delivery.v1.DeliveryService/DeliverReport",
		"/rcamesh.critic.v1.CriticService/RevalidatePin",
		"/rcamesh.critic.v1.CriticService/ReviewHypotheses",
		"/rcamesh.critic.v1.CriticService/AcceptConclusion",
		"/rcamesh.critic.v1.CriticService/EvaluateFinding",
		"/rcamesh.router.v1.RouterService/PlanActions",
	} {
		if need, _ := auth.Required(m); need != auth.RoleService {
			t.Errorf("%s needs %q, want service", m, need)
		}
		if auth.Has([]auth.Role{auth.RoleAdmin}, auth.RoleService) {
			t.Error("admin grants the service role")
		}
	}
}

func TestHas(t *testing.T) {
	tests := []struct {
		roles []auth.Role
		need  auth.Role
		want  bool
	}{
		{nil, auth.RolePublic, true},
		{nil, auth.RoleRead, false},
		{[]auth.Role{auth.RoleRead}, auth.RoleRead, true},
		{[]auth.Role{auth.RoleRead}, auth.RoleSteer, false},
		{[]auth.Role{auth.RoleIngest}, auth.RoleRead, false},
		{[]auth.Role{auth.RoleAdmin}, auth.RoleSteer, true},
		{[]auth.Role{auth.RoleAdmin}, auth.RoleService, false},
		{[]auth.Role{auth.RoleService}, auth.RoleAdmin, true},
	}
	for _, tt := range tests {
		if got := auth.Has(tt.roles, tt.need); got != tt.want {
			t.Errorf("Has(%v, %s) = %v, want %v", tt.roles, tt.need, got, tt.want)
		}
	}
}
