package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
)

// tokenCmd creates an API token: the token goes to stdout once, with the
// line to add to the -auth.tokens-file (which holds only its hash).
func tokenCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stdout)
	name := fs.String("name", "", "name of the token's holder (shown in logs instead of the token)")
	roles := fs.String("roles", "read", "comma list of roles: read, steer, ingest, admin, service")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if *name == "" || strings.ContainsAny(*name, " \t\n") {
		return fmt.Errorf("%w: -name is required (one word)", errUsage)
	}
	if _, err := auth.ParseRoles(*roles); err != nil {
		return fmt.Errorf("%w: -roles: %v", errUsage, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	tok := "rcm_" + hex.EncodeToString(raw)
	_, err := fmt.Fprintf(stdout, "token: %s\ntokens-file line: %s %s %s\n", tok, *name, *roles, auth.HashToken(tok))
	return err
}

// natsConfigCmd prints the nats-server configuration of an external NATS
// for a split mesh: the services' users with passwords derived from the
// mesh key (bcrypt-hashed), their permissions, an optional read-only user.
// With -authorization-only, only that authorization block, for a NATS whose
// own configuration includes it (a Kubernetes NATS cluster).
func natsConfigCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("nats-config", flag.ContinueOnError)
	fs.SetOutput(stdout)
	keyFile := fs.String("mesh.key-file", "", "the mesh key file the services use (required)")
	readerFile := fs.String("nats.reader-password-file", "", "password of the read-only user 'reader' (optional)")
	storeDir := fs.String("store-dir", "/data", "JetStream store directory of the NATS server")
	listen := fs.String("listen", "0.0.0.0:4222", "client listen address of the NATS server")
	out := fs.String("out", "", "write the config to this file (mode 0644: it holds only bcrypt hashes) instead of stdout")
	authOnly := fs.Bool("authorization-only", false, "print only the authorization block (users, bcrypt hashes, permissions) for an existing NATS config to include, e.g. the official NATS Helm chart's config.merge.$include; -store-dir and -listen do not apply")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if *keyFile == "" {
		return fmt.Errorf("%w: -mesh.key-file is required", errUsage)
	}
	key, err := auth.LoadMeshKey(*keyFile)
	if err != nil {
		return err
	}
	reader := ""
	if *readerFile != "" {
		b, err := os.ReadFile(*readerFile)
		if err != nil {
			return err
		}
		if reader = strings.TrimSpace(string(b)); len(reader) < 16 {
			return errors.New("the reader password is shorter than 16 characters")
		}
	}
	users := bus.Users(func(u string) string { return auth.NATSPassword(key, u) }, reader)
	var conf []byte
	if *authOnly {
		conf, err = bus.AuthorizationConfig(users)
	} else {
		conf, err = bus.ServerConfig(users, *storeDir, *listen)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		return os.WriteFile(*out, conf, 0o644)
	}
	_, err = stdout.Write(conf)
	return err
}

// meshCredentialsCmd issues the credentials of a split process running
// -targets: the signing keys of those services only, the NATS password of
// its user only, the service token and every service's public key. The
// process then runs with -mesh.credentials-file instead of the mesh key,
// so a compromise of it cannot sign or publish as another service. With
// -per-service, each of -targets gets its own file, <out>/<service>/mesh.cred
// (the compose job writes one volume per service this way).
func meshCredentialsCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mesh-credentials", flag.ContinueOnError)
	fs.SetOutput(stdout)
	keyFile := fs.String("mesh.key-file", "", "the mesh key file (required)")
	targets := fs.String("targets", "", "comma list of the services the process runs, as its -target (required)")
	out := fs.String("out", "", "file to write (mode 0600; required); with -per-service, a directory")
	perService := fs.Bool("per-service", false, "one process per service: write <out>/<service>/mesh.cred for each of -targets")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if *keyFile == "" || *targets == "" || *out == "" {
		return fmt.Errorf("%w: -mesh.key-file, -targets and -out are required", errUsage)
	}
	var svcs []string
	for _, t := range strings.Split(*targets, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(bus.Services, t) {
			return fmt.Errorf("%w: -targets: %q is not one of %v", errUsage, t, bus.Services)
		}
		svcs = append(svcs, t)
	}
	key, err := auth.LoadMeshKey(*keyFile)
	if err != nil {
		return err
	}
	issue := func(svcs []string, path string) error {
		c, err := auth.IssueCredentials(key, svcs, bus.UserFor(svcs), bus.Services)
		if err != nil {
			return err
		}
		if err := auth.WriteCredentials(path, c); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "credentials of %s (NATS user %s) written to %s\n", strings.Join(svcs, ","), c.NATSUser, path)
		return err
	}
	if !*perService {
		return issue(svcs, *out)
	}
	for _, s := range svcs {
		dir := filepath.Join(*out, s)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := issue([]string{s}, filepath.Join(dir, "mesh.cred")); err != nil {
			return err
		}
	}
	return nil
}
