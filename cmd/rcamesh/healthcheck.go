package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthcheckCmd probes a running process's readiness endpoint; container
// images without a shell (distroless) use it as their health check.
func healthcheckCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stdout)
	url := fs.String("url", "http://127.0.0.1:8080/readyz", "readiness URL to probe")
	timeout := fs.Duration("timeout", 3*time.Second, "probe timeout")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("%w: -url %q: %v", errUsage, *url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s: %s", *url, resp.Status, body)
	}
	_, err = fmt.Fprintf(stdout, "%s", body)
	return err
}
