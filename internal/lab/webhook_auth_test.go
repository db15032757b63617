package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/modules"
)

// TestAlertmanagerWebhookWithBearerToken: a real Alertmanager notifies
// rcamesh with authentication on, presenting the source's secret through
// http_config.authorization; its alert opens an investigation. A webhook
// without the secret is refused (cmd/rcamesh and internal/auth test that).
func TestAlertmanagerWebhookWithBearerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Alertmanager and every rcamesh service")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "am-token")
	if err := os.WriteFile(secret, []byte("alertmanager-webhook-secret-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	webhooks := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(webhooks, []byte("sources:\n  alertmanager:\n    bearer_token_file: "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens")
	// A tokens file turns authentication on; nobody else holds this token.
	if err := os.WriteFile(tokens, []byte("unused read sha256:"+"0000000000000000000000000000000000000000000000000000000000000001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, _, err := fixture.FromDir(filepath.Join("..", "..", "scenarios", "demo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := modules.StartLocal(ctx, modules.Options{Backend: set}, filepath.Join(dir, "data"), nil,
		[]string{"-auth.tokens-file=" + tokens, "-auth.webhooks-file=" + webhooks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()

	am, err := StartAlertmanagerConfig(ctx, t.TempDir(), AlertmanagerConfigBearer("http://"+l.HTTPAddr+"/api/v4/alerts/alertmanager", secret))
	skipIfMissing(t, err)
	defer am.Stop()
	alert := PostableAlert{
		Labels:      map[string]string{"alertname": "HighErrorRate", "severity": "critical", "namespace": "retail", "service": "orders-api"},
		Annotations: map[string]string{"summary": "5xx ratio above 5% on orders-api"},
		StartsAt:    time.Now().Add(-time.Minute).UTC(),
	}
	if err := PostAlerts(ctx, am.URL, alert); err != nil {
		t.Fatal(err)
	}
	bc := brainv1.NewBrainServiceClient(l.Conn) // the service identity, to look
	for {
		resp, err := bc.ListSessions(ctx, &brainv1.ListSessionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetSessions()) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Alertmanager's authenticated webhook opened no session\n%s", am.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
