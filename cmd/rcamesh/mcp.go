package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/mcpserver"
	"github.com/rcamesh/rcamesh/internal/server"
)

func init() {
	commands["mcp"] = mcpCmd
	summaries["mcp"] = "serve the Model Context Protocol over stdio (for coding agents and chat tools)"
}

func mcpCmd(ctx context.Context, args []string, stdout io.Writer) error {
	return runMCP(ctx, args, os.Stdin, stdout, os.Stderr, os.LookupEnv)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// runMCP serves MCP on in/out against a running rcamesh (-addr) or, with
// -scenario, against every service started in this process on a recorded
// scenario. Logs go to logOut: out carries the protocol only.
func runMCP(ctx context.Context, args []string, in io.Reader, out, logOut io.Writer, lookupEnv func(string) (string, bool)) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:9090", "gRPC address of a running rcamesh (rcamesh serve)")
	scen := fs.String("scenario", "", "instead of -addr, run every service in this process on a recorded scenario folder (e.g. scenarios/demo)")
	lc := &logConfig{}
	lc.registerFlags(fs)
	if err := parseFlags(fs, args, lookupEnv); err != nil {
		return err
	}
	logger, err := lc.logger(logOut)
	if err != nil {
		return err
	}
	var conn grpc.ClientConnInterface
	if *scen != "" {
		set, _, err := fixture.FromDir(*scen, logger)
		if err != nil {
			return fmt.Errorf("%w: -scenario: %v", errUsage, err)
		}
		dir, err := os.MkdirTemp("", "rcamesh-mcp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		m, err := startMesh(ctx, set, dir, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			return err
		}
		defer func() { _ = m.stop() }()
		conn = m.conn
	} else {
		cc, err := server.NewClientConn(*addr)
		if err != nil {
			return fmt.Errorf("%w: -addr %q: %v", errUsage, *addr, err)
		}
		defer cc.Close()
		conn = cc
	}
	srv := mcpserver.New(mcpserver.ClientsFor(conn), mcpserver.Options{Version: version})
	logger.Info("serving MCP on stdio", "addr", *addr, "scenario", *scen)
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
