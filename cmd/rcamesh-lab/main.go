// Command rcamesh-lab starts the real servers rcamesh integrates with on
// this machine, loaded with a recorded scenario: Prometheus (the scenario's
// series backfilled), Alertmanager (notifying rcamesh's alert intake) and a
// Kubernetes API server (etcd + kube-apiserver + kwok) holding the
// scenario's objects and serving its container logs. It prints the
// integrations file and the `rcamesh serve` command that points rcamesh at
// them, then runs until interrupted (Ctrl-C stops everything).
//
//	go run ./cmd/rcamesh-lab -scenario scenarios/demo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/integrations"
	"github.com/rcamesh/rcamesh/internal/lab"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rcamesh-lab:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rcamesh-lab", flag.ContinueOnError)
	scDir := fs.String("scenario", "scenarios/demo", "scenario folder to load")
	dir := fs.String("dir", "", "state directory (default: a new temporary directory, removed on exit)")
	intake := fs.String("intake", "http://127.0.0.1:8080", "rcamesh HTTP address Alertmanager notifies (POST <intake>/api/v4/alerts/alertmanager)")
	noKube := fs.Bool("no-kube", false, "do not start Kubernetes (etcd, kube-apiserver, kwok)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	sc, err := scenario.Load(*scDir)
	if err != nil {
		return err
	}
	state := *dir
	if state == "" {
		if state, err = os.MkdirTemp("", "rcamesh-lab-"); err != nil {
			return err
		}
		defer os.RemoveAll(state)
	}
	sub := func(name string) (string, error) {
		p := filepath.Join(state, name)
		return p, os.MkdirAll(p, 0o755)
	}
	var y []byte // the integrations file, section by section

	if prom := sc.Evidence["prometheus"]; len(prom) > 0 {
		d, err := sub("prometheus")
		if err != nil {
			return err
		}
		p, err := lab.StartPrometheus(ctx, prom, d)
		if err != nil {
			return err
		}
		defer p.Stop()
		log.Info("prometheus ready", "url", p.URL)
		y = fmt.Appendf(y, "prometheus:\n  url: %q\n  timeout: 10s\n", p.URL)
	}

	d, err := sub("alertmanager")
	if err != nil {
		return err
	}
	am, err := lab.StartAlertmanager(ctx, d, *intake+"/api/v4/alerts/alertmanager")
	if err != nil {
		return err
	}
	defer am.Stop()
	log.Info("alertmanager ready", "url", am.URL, "notifies", *intake)

	if !*noKube {
		d, err := sub("kube")
		if err != nil {
			return err
		}
		k, err := lab.StartKube(ctx, d)
		if err != nil {
			return err
		}
		defer k.Stop()
		applied, err := k.LoadScenario(ctx, sc)
		if err != nil {
			return err
		}
		log.Info("kubernetes ready", "url", k.URL, "objects", applied.Objects, "kubeconfig", k.Kubeconfig)
		y = fmt.Appendf(y, "kubernetes:\n  kubeconfig: %q\n  timeout: 10s\n", k.Kubeconfig)
	}

	if _, err := integrations.Parse(y); err != nil {
		return fmt.Errorf("generated integrations file: %w", err)
	}
	path := filepath.Join(state, "integrations.yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		return err
	}
	set, _ := fixture.New(sc, nil)
	fmt.Fprintf(out, "# %s\n%s\n", path, y)
	fmt.Fprintf(out, "# point rcamesh at the lab:\nrcamesh serve -integrations.config=%s\n\n", path)
	fmt.Fprintf(out, "# the recording's incident time is %s: use it as the investigation window.\n", set.Clock().UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "# fire an alert through Alertmanager:\ncurl -XPOST %s/api/v2/alerts -H 'Content-Type: application/json' -d '[{\"labels\":{\"alertname\":\"LabAlert\",\"severity\":\"critical\"}}]'\n", am.URL)
	fmt.Fprintln(out, "# Ctrl-C stops everything.")
	<-ctx.Done()
	log.Info("stopping")
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}
