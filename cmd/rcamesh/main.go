// Command rcamesh is the one binary of the mesh: `rcamesh serve` runs any set
// of services (all of them by default, with embedded NATS), and the other
// subcommands drive investigations and evaluations from the command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is a subcommand: args exclude the subcommand's name.
type command func(ctx context.Context, args []string, stdout io.Writer) error

// commands maps subcommand names to their implementation. investigate, eval
// and scenarios are hooks the lead fills in (see notYet).
var commands = map[string]command{
	"serve":            serveCmd,
	"version":          versionCmd,
	"healthcheck":      healthcheckCmd,
	"investigate":      investigateCmd,
	"eval":             evalCmd,
	"scenarios":        scenariosCmd,
	"prior":            priorCmd,
	"triage":           triageCmd,
	"token":            tokenCmd,
	"nats-config":      natsConfigCmd,
	"mesh-credentials": meshCredentialsCmd,
}

// summaries are the one-line descriptions `rcamesh help` prints.
var summaries = map[string]string{
	"serve":            "run services: -target=all (default, embedded NATS) or a comma list",
	"version":          "print the version",
	"healthcheck":      "probe a running process's /readyz (container health checks)",
	"investigate":      "investigate a scenario or alert and print the report",
	"eval":             "run the evaluation suites and print their tables",
	"scenarios":        "list the bundled scenarios",
	"prior":            "train the category prior on labelled scenario sets and write its model file",
	"triage":           "triage a SARIF file's findings against a repository (TRUE_POSITIVE, FALSE_POSITIVE, NEEDS_REVIEW)",
	"token":            "create an API token and its -auth.tokens-file line",
	"nats-config":      "print the nats-server config (users, permissions) of a split mesh's external NATS",
	"mesh-credentials": "issue a split process's credentials (its services' signing keys and NATS password only) from the mesh key",
}

// errUsage marks command-line mistakes (exit code 2).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "rcamesh:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "rcamesh:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	return cmd(ctx, args[1:], stdout)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "rcamesh: an AI SRE that investigates incidents as a mesh of services.")
	fmt.Fprintln(w, "\nUsage: rcamesh <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, summaries[n])
	}
	fmt.Fprintln(w, "\nRun rcamesh <command> -h for the command's flags. Every flag can also be set")
	fmt.Fprintln(w, "through the environment: -nats.url as RCAMESH_NATS_URL.")
}

func notYet(name string) command {
	return func(context.Context, []string, io.Writer) error {
		return fmt.Errorf("%s is not available in this build", name)
	}
}

// envName maps a flag name to its environment variable: nats.url -> RCAMESH_NATS_URL.
func envName(flagName string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return "RCAMESH_" + strings.ToUpper(r.Replace(flagName))
}

// parseFlags parses args, then fills every flag not given on the command line
// from its RCAMESH_* environment variable (flags win over the environment).
func parseFlags(fs *flag.FlagSet, args []string, lookupEnv func(string) (string, bool)) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v, ok := lookupEnv(envName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%w: %s=%q: %v", errUsage, envName(f.Name), v, serr)
			}
		}
	})
	return err
}
