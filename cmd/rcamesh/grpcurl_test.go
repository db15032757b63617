package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// grpcurl runs the pinned grpcurl of the tools module.
func grpcurl(t *testing.T, args ...string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(root, "tools", "go.mod"), "grpcurl"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestGrpcurlReflection lists, describes and calls the running binary's
// services with grpcurl and no proto files: server reflection is on.
func TestGrpcurlReflection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds grpcurl and starts the binary")
	}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	startBinary(t, httpAddr, "-target=all", "-data.dir="+t.TempDir(), "-http.addr="+httpAddr, "-grpc.addr="+grpcAddr,
		"-tools.scenario="+demoScenario)
	list := grpcurl(t, "-plaintext", grpcAddr, "list")
	for _, svc := range []string{"rcamesh.router.v1.RouterService", "rcamesh.tools.v1.ToolsService", "rcamesh.critic.v1.CriticService",
		"rcamesh.brain.v1.BrainService", "rcamesh.delivery.v1.DeliveryService", "grpc.health.v1.Health"} {
		if !strings.Contains(list, svc) {
			t.Errorf("grpcurl list lacks %s:\n%s", svc, list)
		}
	}
	desc := grpcurl(t, "-plaintext", grpcAddr, "describe", "rcamesh.router.v1.RouterService")
	if !strings.Contains(desc, "rpc Investigate") {
		t.Errorf("describe lacks Investigate:\n%s", desc)
	}
	out := grpcurl(t, "-plaintext", "-d", `{"session_id":"g1"}`, grpcAddr, "rcamesh.router.v1.RouterService/ListTools")
	if !strings.Contains(out, "fetch_pod_logs") {
		t.Errorf("ListTools over grpcurl lacks fetch_pod_logs:\n%s", out)
	}
}
