package app_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rcamesh/rcamesh/internal/app"
)

// echoModule is an app.HTTPModule: its handler answers with the serving
// status of the process's own gRPC server, reached through the connection
// the app hands it.
type echoModule struct{}

func (echoModule) Register(*grpc.Server) {}
func (echoModule) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}
func (echoModule) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (echoModule) HTTPHandlers(self *grpc.ClientConn) map[string]http.Handler {
	return map[string]http.Handler{"GET /echo": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := healthpb.NewHealthClient(self).Check(r.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, resp.GetStatus().String())
	})}
}

func TestHTTPModuleHandlersAreMounted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an app with embedded NATS")
	}
	fx := &fixture{}
	reg := fx.registry(t)
	if err := reg.Register("echo", func(context.Context, app.Env) (app.Module, error) { return echoModule{}, nil }); err != nil {
		t.Fatal(err)
	}
	r := startApp(t, reg, "-data.dir="+t.TempDir())
	resp, err := http.Get(r.httpURL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "SERVING" {
		t.Fatalf("GET /echo: %d %q", resp.StatusCode, b)
	}
}
