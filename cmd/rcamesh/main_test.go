package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantErr  error
		contains string
	}{
		{"no args prints usage", nil, nil, "serve"},
		{"help", []string{"help"}, nil, "investigate"},
		{"version", []string{"version"}, nil, "rcamesh dev"},
		{"unknown command", []string{"frobnicate"}, errUsage, ""},
		{"serve unknown target", []string{"serve", "-target=pager", "-data.dir=" + t.TempDir()}, errUsage, ""},
		{"serve bad flag", []string{"serve", "-no-such-flag"}, errUsage, ""},
		{"serve stray args", []string{"serve", "extra"}, errUsage, ""},
		{"serve bad log level", []string{"serve", "-log.level=loud"}, errUsage, ""},
		{"serve help", []string{"serve", "-h"}, flag.ErrHelp, "-nats.url"},
		{"eval without benchmarks", []string{"eval", "-benchmarks=" + t.TempDir(), "-suites=opensre", "-out="}, nil, ""},
		{"eval unknown suite", []string{"eval", "-suites=nope"}, errUsage, ""},
		{"investigate bad format", []string{"investigate", "-format=xml"}, errUsage, ""},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errOut)
		switch {
		case tt.name == "eval without benchmarks":
			if err == nil || !strings.Contains(err.Error(), "opensre-synthetic") {
				t.Errorf("%s: %v", tt.name, err)
			}
		case tt.wantErr == nil && err != nil, tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: run(%q) = %v, want %v", tt.name, tt.args, err, tt.wantErr)
		}
		if tt.contains != "" && !strings.Contains(out.String(), tt.contains) {
			t.Errorf("%s: output lacks %q:\n%s", tt.name, tt.contains, out.String())
		}
	}
}

func TestParseFlagsFromEnv(t *testing.T) {
	env := map[string]string{"RCAMESH_NATS_URL": "nats://env:4222", "RCAMESH_TARGET": "tools", "RCAMESH_HTTP_MAX_BODY_BYTES": "nope"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	newFS := func() (*flag.FlagSet, *string, *string) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		return fs, fs.String("nats.url", "", ""), fs.String("target", "all", "")
	}
	fs, url, target := newFS()
	if err := parseFlags(fs, []string{"-target=brain"}, lookup); err != nil {
		t.Fatal(err)
	}
	if *url != "nats://env:4222" || *target != "brain" {
		t.Errorf("nats.url=%q target=%q; want env for the first, the flag for the second", *url, *target)
	}
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	fs2.Int64("http.max-body-bytes", 1, "")
	if err := parseFlags(fs2, nil, lookup); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "RCAMESH_HTTP_MAX_BODY_BYTES") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, logs bytes.Buffer
	noEnv := func(string) (string, bool) { return "", false }
	err := serve(ctx, []string{"-data.dir=" + t.TempDir(), "-grpc.addr=127.0.0.1:0", "-http.addr=127.0.0.1:0"}, &out, &logs, noEnv)
	if err != nil {
		t.Fatalf("serve with a cancelled context = %v, want a clean stop; logs:\n%s", err, logs.String())
	}
}
