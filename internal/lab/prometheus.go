// Package lab starts the real servers rcamesh integrates with (Prometheus,
// Alertmanager, etcd + kube-apiserver + kwok) on this machine, loaded with a
// scenario's evidence, for integration tests and for `make lab`. Every
// server listens on 127.0.0.1 only.
package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrMissing reports a server binary that is not installed.
var ErrMissing = errors.New("lab: binary not installed")

// Process is a started server.
type Process struct {
	Name string
	URL  string
	cmd  *exec.Cmd
	log  *tailBuffer
	done chan struct{}
	err  error
}

// Stop terminates the process and waits for it.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Log returns the last lines the process printed.
func (p *Process) Log() string { return p.log.String() }

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start(ctx context.Context, name, bin string, args []string, dir string) (*Process, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%v)", ErrMissing, bin, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	buf := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, log: buf, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	go func() {
		select {
		case <-ctx.Done():
			p.Stop()
		case <-p.done:
		}
	}()
	return p, nil
}

// waitHTTP polls url until it answers 200 or the process exits.
func waitHTTP(ctx context.Context, p *Process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("lab: %s exited: %v\n%s", p.Name, p.err, p.Log())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("lab: %s not ready at %s after %s\n%s", p.Name, url, timeout, p.Log())
}

type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Matrix is the prometheus.json evidence shape.
type Matrix struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	} `json:"result"`
}

// OpenMetrics converts a prometheus.json matrix into the OpenMetrics text
// promtool backfills from. The matrix has no metric types, so every family
// is declared "unknown"; rate() works on such series all the same.
func OpenMetrics(promJSON []byte, w io.Writer) error {
	var m Matrix
	if err := json.Unmarshal(promJSON, &m); err != nil {
		return fmt.Errorf("lab: prometheus.json: %w", err)
	}
	families := map[string][]int{}
	for i, s := range m.Result {
		name := s.Metric["__name__"]
		if name == "" {
			return fmt.Errorf("lab: series %d has no __name__", i)
		}
		families[name] = append(families[name], i)
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	for _, n := range names {
		fmt.Fprintf(bw, "# TYPE %s unknown\n", n)
		for _, i := range families[n] {
			s := m.Result[i]
			var labels []string
			for k, v := range s.Metric {
				if k == "__name__" {
					continue
				}
				labels = append(labels, fmt.Sprintf("%s=%s", k, strconv.Quote(v)))
			}
			sort.Strings(labels)
			ls := ""
			if len(labels) > 0 {
				ls = "{" + strings.Join(labels, ",") + "}"
			}
			for _, v := range s.Values {
				t, ok := v[0].(float64)
				if !ok {
					return fmt.Errorf("lab: %s: sample time %v is not a number", n, v[0])
				}
				val, _ := v[1].(string)
				if _, err := strconv.ParseFloat(val, 64); err != nil {
					return fmt.Errorf("lab: %s: sample value %q: %w", n, val, err)
				}
				fmt.Fprintf(bw, "%s%s %s %s\n", n, ls, val, strconv.FormatFloat(t, 'f', -1, 64))
			}
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

// StartPrometheus backfills promJSON into a new TSDB under dir with promtool
// and serves it with a real Prometheus on a free port.
func StartPrometheus(ctx context.Context, promJSON []byte, dir string) (*Process, error) {
	if _, err := exec.LookPath("promtool"); err != nil {
		return nil, fmt.Errorf("%w: promtool", ErrMissing)
	}
	om := filepath.Join(dir, "series.om")
	f, err := os.Create(om)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := OpenMetrics(promJSON, f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	data := filepath.Join(dir, "data")
	out, err := exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("lab: promtool backfill: %w\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\nscrape_configs: []\n"), 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := start(ctx, "prometheus", "prometheus", []string{
		"--config.file=" + cfg, "--storage.tsdb.path=" + data, "--web.listen-address=" + addr,
		"--storage.tsdb.retention.time=100y", "--query.lookback-delta=5m",
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

// StartScraper runs a real Prometheus under dir that scrapes each target
// (host:port, path /metrics) every interval as job "rcamesh" and evaluates
// the rule files (copied into dir) at the same interval.
func StartScraper(ctx context.Context, dir string, targets []string, interval time.Duration, ruleFiles ...string) (*Process, error) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		return nil, fmt.Errorf("%w: prometheus", ErrMissing)
	}
	var rules []string
	for i, rf := range ruleFiles {
		b, err := os.ReadFile(rf)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		dst := filepath.Join(dir, fmt.Sprintf("rules-%d.yaml", i))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		rules = append(rules, dst)
	}
	cfg := struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files,omitempty"`
		ScrapeConfigs []map[string]any  `json:"scrape_configs"`
	}{
		Global:    map[string]string{"scrape_interval": interval.String(), "evaluation_interval": interval.String()},
		RuleFiles: rules,
		ScrapeConfigs: []map[string]any{{
			"job_name": "rcamesh", "metrics_path": "/metrics",
			"static_configs": []map[string]any{{"targets": targets}},
		}},
	}
	// JSON is YAML: no YAML encoder needed for the config.
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := start(ctx, "prometheus", "prometheus", []string{
		"--config.file=" + path, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr,
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
