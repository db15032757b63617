package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedConfig configures an embedded NATS server.
type EmbeddedConfig struct {
	// StoreDir is where JetStream keeps its files. Required.
	StoreDir string
	// Listen is a host:port for NATS clients in other processes; "" serves
	// only the in-process connection; port 0 picks a free port.
	Listen string
	// ServerName names the server in logs and monitoring ("rcamesh" when empty).
	ServerName string
	// ReadyTimeout bounds the wait for the server to accept connections (10s when zero).
	ReadyTimeout time.Duration
	// Users, when set, are the only clients the server accepts (anonymous
	// clients are refused); ClientUser and ClientPassword are the
	// in-process connection's (one of Users).
	Users                      []*server.User
	ClientUser, ClientPassword string
	// TLS, when set, is required of TCP clients (the in-process connection
	// does not use TCP); TLSVerify requires and verifies client certificates.
	TLS       *tls.Config
	TLSVerify bool
}

// StartEmbedded starts a NATS server with JetStream on file storage in
// storeDir that serves only in-process clients, and returns it with an
// in-process connection. The caller drains the connection, then calls
// Shutdown and WaitForShutdown on the server.
func StartEmbedded(ctx context.Context, storeDir string, logger *slog.Logger) (*server.Server, *nats.Conn, error) {
	return StartEmbeddedConfig(ctx, EmbeddedConfig{StoreDir: storeDir}, logger)
}

// StartEmbeddedConfig is StartEmbedded with more options, e.g. a TCP listener
// so that processes running other services can share the server.
func StartEmbeddedConfig(ctx context.Context, cfg EmbeddedConfig, logger *slog.Logger) (*server.Server, *nats.Conn, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StoreDir == "" {
		return nil, nil, errors.New("bus: embedded NATS needs a store dir")
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		NoSigs:             true,
		DontListen:         cfg.Listen == "",
		MaxPayload:         8 << 20,
		JetStreamMaxMemory: 256 << 20,
	}
	if opts.ServerName == "" {
		opts.ServerName = "rcamesh"
	}
	if cfg.Listen != "" {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, nil, fmt.Errorf("bus: embedded NATS listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, nil, fmt.Errorf("bus: embedded NATS listen address %q: bad port", cfg.Listen)
		}
		if p == 0 {
			p = server.RANDOM_PORT
		}
		if host == "" {
			host = "127.0.0.1" // loopback unless a host is given
		}
		opts.Host, opts.Port = host, p
	}
	if len(cfg.Users) > 0 {
		if err := checkUsers(cfg.Users); err != nil {
			return nil, nil, err
		}
		opts.Users = cfg.Users
	}
	if cfg.TLS != nil {
		opts.TLSConfig, opts.TLS, opts.TLSVerify = cfg.TLS, true, cfg.TLSVerify
		opts.TLSTimeout = 5 // the in-process connection skips TLS (nats-server)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("bus: new embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(&natsLogger{l: logger.With("component", "nats-server")}, false, false, false)
	go srv.Start()

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if !srv.ReadyForConnections(timeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, fmt.Errorf("bus: embedded NATS server not ready after %s", timeout)
	}
	copts := []nats.Option{nats.InProcessServer(srv), nats.Name(opts.ServerName + "-inprocess"), nats.MaxReconnects(-1)}
	if cfg.ClientUser != "" {
		copts = append(copts, nats.UserInfo(cfg.ClientUser, cfg.ClientPassword))
	}
	nc, err := nats.Connect("", copts...)
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, fmt.Errorf("bus: in-process connection: %w", err)
	}
	logger.Info("embedded NATS started", "component", "bus", "store_dir", cfg.StoreDir, "client_url", clientURL(srv, cfg.Listen))
	return srv, nc, nil
}

func clientURL(srv *server.Server, listen string) string {
	if listen == "" {
		return "in-process"
	}
	return srv.ClientURL()
}

// Dial connects to an external NATS server at opts.URL with reconnects that
// never give up. opts.URL must be set (an empty URL means embedded mode,
// handled by StartEmbedded).
func Dial(ctx context.Context, opts Options) (*nats.Conn, error) {
	if opts.URL == "" {
		return nil, errors.New("bus: Dial needs a NATS URL")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := opts.Name
	if name == "" {
		name = "rcamesh"
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	extra := []nats.Option{}
	if opts.User != "" {
		extra = append(extra, nats.UserInfo(opts.User, opts.Password))
	}
	if opts.TLS != nil {
		extra = append(extra, nats.Secure(opts.TLS))
	}
	nc, err := nats.Connect(opts.URL, append(extra,
		nats.Name(name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			logger.Warn("NATS disconnected", "component", "bus", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("NATS reconnected", "component", "bus", "url", c.ConnectedUrlRedacted())
		}),
		// Asynchronous errors, e.g. a permissions violation of this user.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			logger.Warn("NATS error", "component", "bus", "err", err)
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect to NATS %s as %q: %w", redactURL(opts.URL), opts.User, err)
	}
	return nc, nil
}

// redactURL drops user info from a NATS URL so that credentials never reach a log.
func redactURL(u string) string {
	for i := 0; i+3 <= len(u); i++ {
		if u[i:i+3] == "://" {
			rest := u[i+3:]
			for j := 0; j < len(rest); j++ {
				if rest[j] == '@' {
					return u[:i+3] + "REDACTED@" + rest[j+1:]
				}
				if rest[j] == '/' {
					break
				}
			}
			break
		}
	}
	return u
}

// natsLogger adapts slog to the nats-server logger interface.
type natsLogger struct{ l *slog.Logger }

func (n *natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }

// ConnectInProcess opens another in-process connection to srv as the
// client user of cfg, named name.
func ConnectInProcess(srv *server.Server, cfg EmbeddedConfig, name string) (*nats.Conn, error) {
	copts := []nats.Option{nats.InProcessServer(srv), nats.Name(name), nats.MaxReconnects(-1)}
	if cfg.ClientUser != "" {
		copts = append(copts, nats.UserInfo(cfg.ClientUser, cfg.ClientPassword))
	}
	nc, err := nats.Connect("", copts...)
	if err != nil {
		return nil, fmt.Errorf("bus: in-process connection %s: %w", name, err)
	}
	return nc, nil
}
