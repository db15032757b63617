package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rcamesh/rcamesh/internal/catprior"
)

// priorCmd trains the category prior (internal/catprior) on labelled
// scenario sets and writes the model file the brain reads
// (-brain.category-prior=<file>, or embedded when written over
// internal/catprior/model.json.gz).
func priorCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("prior", flag.ContinueOnError)
	fs.SetOutput(stdout)
	root := fs.String("scenarios", "scenarios", "folder whose subfolders are scenario sets")
	sets := fs.String("sets", "", "comma list of the sets to learn from (required: a set still to be scored blind must stay out)")
	out := fs.String("out", "", "model file to write (required)")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	var names []string
	for _, s := range strings.Split(*sets, ",") {
		if s = strings.TrimSpace(s); s != "" {
			names = append(names, s)
		}
	}
	if len(names) == 0 || *out == "" {
		return fmt.Errorf("%w: prior needs -sets and -out", errUsage)
	}
	m, err := catprior.Train(*root, names)
	if err != nil {
		return err
	}
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fmt.Errorf("prior: %w", err)
	}
	fmt.Fprintf(stdout, "prior: %d incidents from %d sets, %d terms, %d bytes -> %s\n", m.Incidents(), len(m.Sets), len(m.Postings), len(b), *out)
	return nil
}
