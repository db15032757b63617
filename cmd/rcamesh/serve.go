package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/web"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func versionCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stdout)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	rev, goVersion := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	_, err := fmt.Fprintf(stdout, "rcamesh %s (commit %s, %s, event contract %s)\n", version, rev, goVersion, bus.Version)
	return err
}

type logConfig struct {
	level  string
	format string
}

func (c *logConfig) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.level, "log.level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.format, "log.format", "text", "log format: text or json")
}

func (c logConfig) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.level)); err != nil {
		return nil, fmt.Errorf("%w: -log.level %q: want debug, info, warn or error", errUsage, c.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(c.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: -log.format %q: want text or json", errUsage, c.format)
}

func serveCmd(ctx context.Context, args []string, stdout io.Writer) error {
	return serve(ctx, args, stdout, os.Stderr, os.LookupEnv)
}

// serveFlags is the parsed configuration of `rcamesh serve`.
type serveFlags struct {
	fs  *flag.FlagSet
	cfg *app.Config
	log *logConfig
	reg *app.Registry
}

func newServeFlags(out io.Writer) (*serveFlags, error) {
	s := &serveFlags{fs: flag.NewFlagSet("serve", flag.ContinueOnError), log: &logConfig{}, reg: app.NewRegistry()}
	s.fs.SetOutput(out)
	cfg := app.DefaultConfig()
	s.cfg = &cfg
	s.cfg.RegisterFlags(s.fs)
	s.log.registerFlags(s.fs)
	if err := registerModules(s.reg); err != nil {
		return nil, fmt.Errorf("register modules: %w", err)
	}
	s.reg.RegisterFlags(s.fs)
	return s, nil
}

// newApp builds the App of parsed serve flags (logging discarded).
func newApp(sf *serveFlags) (*app.App, error) {
	return app.New(*sf.cfg, sf.reg, sf.fs, nil)
}

func serve(ctx context.Context, args []string, stdout, logOut io.Writer, lookupEnv func(string) (string, bool)) error {
	sf, err := newServeFlags(stdout)
	if err != nil {
		return err
	}
	if err := parseFlags(sf.fs, args, lookupEnv); err != nil {
		return err
	}
	fs, cfg, lc, reg := sf.fs, *sf.cfg, *sf.log, sf.reg
	if cfg.UI == nil {
		cfg.UI = web.Handler()
	}
	logger, err := lc.logger(logOut)
	if err != nil {
		return err
	}
	a, err := app.New(cfg, reg, fs, logger)
	if err == nil {
		err = a.Check()
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return a.Run(ctx)
}
