package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/sast"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// triageCmd triages a SARIF file's findings against a local checkout
// offline by default.
func triageCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("triage", flag.ContinueOnError)
	fs.SetOutput(stdout)
	sarifPath := fs.String("sarif", "", "SARIF 2.1.0 file of findings (required)")
	repoDir := fs.String("repo", "", "repository checkout the SARIF paths are relative to, or a git URL (cloned shallow with go-git into a temporary folder) (required)")
	allowed := fs.String("allowed-root", "", "if set, -repo must lie inside this folder")
	format := fs.String("format", "md", "output: md, json or sarif")
	parallel := fs.Int("parallel", defaultParallel(), "findings investigated at once")
	maxCalls := fs.Int("max-tool-calls", sast.DefaultLimits().MaxToolCalls, "circuit breaker: tool calls per finding")
	model := llm.DefaultConfig()
	model.RegisterFlags(fs)
	lc := &logConfig{}
	lc.registerFlags(fs)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if *sarifPath == "" || *repoDir == "" {
		return fmt.Errorf("%w: triage needs -sarif FILE and -repo DIR", errUsage)
	}
	switch *format {
	case "md", "json", "sarif":
	default:
		return fmt.Errorf("%w: -format %q (want md, json or sarif)", errUsage, *format)
	}
	if lc.level == "info" {
		lc.level = "error"
	}
	logger, err := lc.logger(os.Stderr)
	if err != nil {
		return err
	}
	st, err := os.Stat(*sarifPath)
	if err != nil {
		return err
	}
	if st.Size() > sast.MaxSARIFBytes {
		return fmt.Errorf("%s: %w: %d bytes > %d", *sarifPath, sast.ErrSARIF, st.Size(), sast.MaxSARIFBytes)
	}
	b, err := os.ReadFile(*sarifPath)
	if err != nil {
		return err
	}
	findings, err := sast.ParseSARIF(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *sarifPath, err)
	}
	dir := *repoDir
	if repo.IsURL(dir) {
		tmp, err := os.MkdirTemp("", "rcamesh-triage-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := repo.Clone(ctx, dir, tmp); err != nil {
			return err
		}
		dir, *allowed = tmp, ""
	}
	r, err := repo.Open(dir, *allowed)
	if err != nil {
		return err
	}
	// the critic of an in-process mesh (every service, embedded NATS)
	// judges every verdict over gRPC, re-reading the checkout itself
	dataDir, err := os.MkdirTemp("", "rcamesh-triage-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	l, ev, err := modules.StartTriageMesh(ctx, r.Root(), dataDir, "triage-cli", logger)
	if err != nil {
		return err
	}
	defer l.Stop()
	t := sast.NewTriager(r, ev, logger)
	// with a model configured the model agent drives the same tools and
	// evaluator; without one the offline analyser does its work
	provider, err := llm.New(model, logger)
	if err != nil {
		return err
	}
	if provider != nil {
		t.Analyst = &sast.ModelAnalyst{Model: provider}
	}
	t.Parallel = *parallel
	t.Limits.MaxToolCalls = *maxCalls
	rs := t.Run(ctx, findings)
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	case "sarif":
		out, err := sast.AnnotateSARIF(b, rs)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(out))
		return err
	}
	_, err = fmt.Fprint(stdout, sast.Markdown(rs))
	return err
}
