package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/rcamesh/rcamesh/internal/auth"
)

// chartManifests is the chart rendered for users without Helm, kept equal to
// the chart by deploy/TestManifestsUpToDate.
const chartManifests = "../../deploy/manifests/rcamesh.yaml"

// chartDeployments are the Deployments of the rendered chart, by component.
func chartDeployments(t *testing.T) map[string]appsv1.Deployment {
	t.Helper()
	raw, err := os.ReadFile(chartManifests)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]appsv1.Deployment{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("%s: %v", chartManifests, err)
		}
		if d.Kind == "Deployment" {
			out[d.Spec.Template.Labels["app.kubernetes.io/component"]] = d
		}
	}
	return out
}

// TestChartPodsStartAndAuthenticate runs every pod of the rendered chart as
// a process with the chart's own arguments, against a NATS server whose
// config includes the users of `rcamesh nats-config -authorization-only`
// from another directory (as the official NATS chart does with the
// rcamesh-nats-auth Secret), with the files the chart's Secrets hold at the
// places it mounts them: each pod's credentials from `rcamesh
// mesh-credentials -per-service`, the API tokens file. Only what a laptop
// cannot be is changed: Kubernetes names and ports become loopback
// addresses, three stream replicas one (one NATS server), and the tools
// inspect the demo scenario instead of the in-cluster API. Every pod becomes
// ready; the gateway refuses a caller without a token and investigates an
// alert sent with one; no service hits a NATS permissions violation.
func TestChartPodsStartAndAuthenticate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts NATS and six processes")
	}
	deployments := chartDeployments(t)
	root := t.TempDir()
	key, _, _ := meshSecrets(t)

	// NATS, configured like the official chart plus the included users.
	for _, d := range []string{"nats-config", "rcamesh-nats-auth", "creds", "tokens"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := natsConfigCmd(t.Context(), []string{"-mesh.key-file=" + key, "-authorization-only",
		"-out=" + filepath.Join(root, "rcamesh-nats-auth", "auth.conf")}, io.Discard); err != nil {
		t.Fatal(err)
	}
	natsConf := filepath.Join(root, "nats-config", "nats.conf")
	conf := fmt.Sprintf("listen: 127.0.0.1:-1\njetstream {\n  store_dir: %q\n}\ninclude ../rcamesh-nats-auth/auth.conf;\n", t.TempDir())
	if err := os.WriteFile(natsConf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(natsConf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs, opts.NoLog = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}

	// What the chart's Secrets hold (scripts/k8s-secrets.sh).
	if err := meshCredentialsCmd(t.Context(), []string{"-mesh.key-file=" + key, "-per-service",
		"-targets=router,tools,critic,brain,delivery,gateway", "-out=" + filepath.Join(root, "creds")}, io.Discard); err != nil {
		t.Fatal(err)
	}
	const token = "rcm_chart-test-admin-token-0123456789"
	if err := os.WriteFile(filepath.Join(root, "tokens", "api-tokens"), []byte("admin admin "+auth.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	type addrs struct{ http, grpc string }
	order := []string{"tools", "critic", "router", "delivery", "brain", "gateway"}
	ps := map[string]addrs{}
	for _, c := range order {
		if _, ok := deployments[c]; !ok {
			t.Fatalf("no Deployment of %s in %s", c, chartManifests)
		}
		ps[c] = addrs{freeAddr(t), freeAddr(t)}
	}
	args := func(c string) []string {
		pod := deployments[c].Spec.Template.Spec
		// Where each mount of the pod is on this machine.
		local := map[string]string{}
		for _, m := range pod.Containers[0].VolumeMounts {
			switch m.Name {
			case "mesh-credentials":
				local[m.MountPath] = filepath.Join(root, "creds", c)
			case "api-tokens":
				local[m.MountPath] = filepath.Join(root, "tokens")
			case "data", "tmp":
				local[m.MountPath] = t.TempDir()
			}
		}
		var out []string
		for _, a := range pod.Containers[0].Args[1:] { // [0] is serve
			name, value, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
			switch {
			case name == "grpc.addr":
				value = ps[c].grpc
			case name == "http.addr":
				value = ps[c].http
			case name == "nats.url":
				value = ns.ClientURL()
			case name == "nats.replicas":
				value = "1"
			case name == "integrations.config":
				name, value = "tools.scenario", demoScenario
			case strings.HasSuffix(name, ".addr"):
				value = ps[strings.TrimSuffix(name, ".addr")].grpc
			default:
				orig := value
				for mount, dir := range local {
					if orig == mount || strings.HasPrefix(orig, mount+"/") {
						value = dir + strings.TrimPrefix(orig, mount)
					}
				}
			}
			if strings.HasPrefix(value, "/var/run/secrets") || strings.HasPrefix(value, "/etc/") {
				t.Fatalf("%s: %s=%s is on no mount of the pod", c, name, value)
			}
			out = append(out, "-"+name+"="+value)
		}
		return out
	}
	var procs []proc
	for _, c := range order {
		procs = append(procs, startBinary(t, ps[c].http, args(c)...))
	}
	dump := func() string {
		var b strings.Builder
		for _, p := range procs {
			b.WriteString(p.log())
		}
		return b.String()
	}

	gw := "http://" + ps["gateway"].http
	call := func(method, path, tok, body string) (int, string) {
		req, err := http.NewRequest(method, gw+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	alert, err := os.ReadFile(filepath.Join(demoScenario, "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := call("POST", "/api/v4/alerts", "", string(alert)); code != http.StatusUnauthorized {
		t.Errorf("the gateway accepted an alert without a token: %d %.200s", code, body)
	}
	if code, body := call("POST", "/api/v4/alerts", "rcm_wrong-token-0123456789", string(alert)); code != http.StatusUnauthorized {
		t.Errorf("the gateway accepted a wrong token: %d %.200s", code, body)
	}
	code, body := call("POST", "/api/v4/alerts", token, string(alert))
	var resp struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(body), &resp)
	if code != http.StatusOK || resp.SessionID == "" {
		t.Fatalf("post alert through the gateway: %d %s\n%s", code, body, dump())
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := call("GET", "/api/v4/session/"+resp.SessionID+"/report", token, "")
		if code == http.StatusOK && strings.Contains(body, "Root cause") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report through the chart's pods (%d %.300s):\n%s", code, body, dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, _ := call("GET", "/api/v4/session/"+resp.SessionID+"/report", "", ""); code != http.StatusUnauthorized {
		t.Errorf("the report without a token: %d", code)
	}
	if strings.Contains(strings.ToLower(dump()), "permissions violation") {
		t.Errorf("a pod hit a NATS permissions violation:\n%s", dump())
	}
}
