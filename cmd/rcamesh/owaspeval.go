package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rcamesh/rcamesh/internal/eval/owasp"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/sast"
)

// suiteOwasp triages the OWASP Benchmark's SARIF files.
const suiteOwasp = "owasp"

// runOwaspSuite prints the owasp tables and writes the verdicts
// (verdicts.jsonl, in the reference scorer's format) and the tables under
// out/owasp.
func runOwaspSuite(ctx context.Context, root, out, half string, parallel int, logger *slog.Logger, stdout io.Writer) error {
	// the critic of an in-process mesh judges every verdict over gRPC
	dataDir, err := os.MkdirTemp("", "rcamesh-owasp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	l, ev, err := modules.StartTriageMesh(ctx, root, dataDir, "eval-owasp", logger)
	if err != nil {
		return err
	}
	defer l.Stop()
	rep, err := owasp.Run(ctx, owasp.Options{Root: root, Parallel: parallel, Logger: logger, Half: half, Evaluator: ev})
	if err != nil {
		return err
	}
	title := "### owasp"
	if half != "" {
		title += " (half " + half + " of the public cases)"
	}
	fmt.Fprintln(stdout, title)
	for _, t := range rep.Tables {
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, t.Markdown())
	}
	if out == "" {
		return nil
	}
	dir := filepath.Join(out, suiteOwasp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, rs := range map[string]any{"results-flag-all.json": rep.Results, "results-semgrep.json": rep.Semgrep, "summary.json": rep.Tables} {
		b, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := writeVerdicts(filepath.Join(dir, "verdicts.jsonl"), rep.Results, false); err != nil {
		return err
	}
	return writeVerdicts(filepath.Join(dir, "verdicts-semgrep.jsonl"), rep.Semgrep, true)
}

// writeVerdicts writes the reference scorer's JSON Lines; withCWE adds the
// finding's CWEs (one line each), for a scanner whose findings concern
// several CWEs per file (score.py --within).
func writeVerdicts(path string, rs []sast.Result, withCWE bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range rs {
		t := owasp.TestOf(r.Finding.File)
		if t == "" {
			continue
		}
		if !withCWE {
			if err := enc.Encode(map[string]any{"test": t, "verdict": r.Verdict}); err != nil {
				f.Close()
				return err
			}
			continue
		}
		for _, c := range r.Finding.CWEs {
			if err := enc.Encode(map[string]any{"test": t, "verdict": r.Verdict, "cwe": c}); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}
