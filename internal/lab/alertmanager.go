package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Alertmanager timings: short so that tests see the first notification,
// a repeat and a resolution within seconds.
const (
	AMGroupWait      = time.Second
	AMGroupInterval  = 2 * time.Second
	AMRepeatInterval = 4 * time.Second
)

// alertmanagerBins are the binary names of Debian's package and upstream.
var alertmanagerBins = []string{"prometheus-alertmanager", "alertmanager"}

// AlertmanagerConfig is a configuration routing every alert, grouped by
// alertname, to one webhook receiver that also gets resolutions.
func AlertmanagerConfig(webhookURL string) string {
	return fmt.Sprintf(`route:
  receiver: rcamesh
  group_by: [alertname]
  group_wait: %s
  group_interval: %s
  repeat_interval: %s
receivers:
- name: rcamesh
  webhook_configs:
  - url: %s
    send_resolved: true
`, AMGroupWait, AMGroupInterval, AMRepeatInterval, strconv.Quote(webhookURL))
}

// AlertmanagerConfigBearer is AlertmanagerConfig with the webhook
// authenticated as Alertmanager does it: http_config.authorization, the
// bearer token read from credentialsFile.
func AlertmanagerConfigBearer(webhookURL, credentialsFile string) string {
	return AlertmanagerConfig(webhookURL) + fmt.Sprintf(`    http_config:
      authorization:
        type: Bearer
        credentials_file: %s
`, strconv.Quote(credentialsFile))
}

// StartAlertmanager starts a real Alertmanager on a free 127.0.0.1 port,
// state under dir, notifying webhookURL (see AlertmanagerConfig). Clustering
// is off.
func StartAlertmanager(ctx context.Context, dir, webhookURL string) (*Process, error) {
	return StartAlertmanagerConfig(ctx, dir, AlertmanagerConfig(webhookURL))
}

// StartAlertmanagerConfig is StartAlertmanager with a whole configuration.
func StartAlertmanagerConfig(ctx context.Context, dir, config string) (*Process, error) {
	bin := ""
	for _, b := range alertmanagerBins {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return nil, fmt.Errorf("%w: prometheus-alertmanager (apt-get install prometheus-alertmanager)", ErrMissing)
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := start(ctx, "alertmanager", bin, []string{
		"--config.file=" + cfg, "--storage.path=" + filepath.Join(dir, "alertmanager-data"),
		"--web.listen-address=" + addr, "--cluster.listen-address=",
	}, dir)
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + addr
	if err := waitHTTP(ctx, p, p.URL+"/-/ready", 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// PostableAlert is an alert for Alertmanager's API v2 (POST /api/v2/alerts).
type PostableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// PostAlerts sends alerts to Alertmanager's API v2, as Prometheus does.
func PostAlerts(ctx context.Context, amURL string, alerts ...PostableAlert) error {
	b, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("lab: alerts: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, amURL+"/api/v2/alerts", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("lab: post alerts: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lab: post alerts: HTTP %d: %s", resp.StatusCode, body)
	}
	return nil
}
