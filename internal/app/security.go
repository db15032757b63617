package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/server"
)

// MeshKeyName is the mesh key's file in -data.dir when -mesh.key-file is not set.
const MeshKeyName = "mesh.key"

// MeshKey loads -mesh.key-file, or <data.dir>/mesh.key (created on first
// start) for a process with embedded NATS. A process against an external
// NATS shares the mesh with others and needs the file (or
// -mesh.credentials-file, see Identity).
func (c Config) MeshKey() ([]byte, error) {
	if c.Auth.MeshKeyFile != "" {
		return auth.LoadMeshKey(c.Auth.MeshKeyFile)
	}
	if c.NATSURL != "" {
		return nil, errors.New("app: -mesh.key-file or -mesh.credentials-file is required with -nats.url: every process of a split mesh signs pins and authenticates to the others (create a key with `openssl rand -hex 32`, credentials with `rcamesh mesh-credentials`)")
	}
	k, _, err := auth.EnsureMeshKey(filepath.Join(c.DataDir, MeshKeyName))
	return k, err
}

// Identity is this process's mesh identity: from -mesh.credentials-file
// (issued for its services only; needs -nats.url, since the embedded NATS
// must know every user), else from the mesh key (MeshKey).
func (c Config) Identity() (*auth.Identity, error) {
	if f := c.Auth.CredentialsFile; f != "" {
		if c.Auth.MeshKeyFile != "" {
			return nil, errors.New("app: give -mesh.key-file or -mesh.credentials-file, not both")
		}
		if c.NATSURL == "" {
			return nil, errors.New("app: -mesh.credentials-file needs -nats.url: the process that runs the embedded NATS knows every user, so it holds the mesh key")
		}
		return auth.LoadCredentials(f)
	}
	key, err := c.MeshKey()
	if err != nil {
		return nil, err
	}
	return auth.IdentityFromMeshKey(key)
}

// security is the identity and transport security of one process.
type security struct {
	cfg   auth.Config
	id    *auth.Identity
	authn *auth.Authenticator
	tls   *auth.Reloader // nil without -tls.cert-file
}

func (a *App) setupSecurity(ctx context.Context, log *slog.Logger) (*security, error) {
	c := a.cfg.Auth
	grpcAddr, httpAddr := a.cfg.Server.GRPCAddr, a.cfg.Server.HTTPAddr
	if a.cfg.GRPCListener != nil {
		grpcAddr = a.cfg.GRPCListener.Addr().String()
	}
	if a.cfg.HTTPListener != nil {
		httpAddr = a.cfg.HTTPListener.Addr().String()
	}
	if err := c.CheckExposure(map[string]string{"grpc.addr": grpcAddr, "http.addr": httpAddr}); err != nil {
		return nil, err
	}
	id, err := a.cfg.Identity()
	if err != nil {
		return nil, err
	}
	authn, err := auth.NewForIdentity(ctx, c, id, a.logger)
	if err != nil {
		return nil, err
	}
	s := &security{cfg: c, id: id, authn: authn}
	if c.TLS.Enabled() {
		if s.tls, err = auth.NewReloader(c.TLS); err != nil {
			return nil, err
		}
	}
	if s.tls == nil && (a.cfg.NATSURL != "" || len(a.cfg.ServiceAddrs) > 0) && (c.Enabled() || !auth.Loopback(grpcAddr)) {
		log.Warn("split mode without -tls.cert-file: the service token and all RPCs cross the network in clear; turn on TLS (README, Security)")
	}
	switch {
	case c.Enabled():
		log.Info("authentication on", "tokens", c.TokensFile != "", "jwt", c.JWT.Enabled(), "webhook_secrets", c.WebhooksFile != "", "tls", s.tls != nil, "mtls", c.TLS.RequireClientCert)
	case c.InsecureOpen:
		log.Warn("OPEN MODE (-auth.insecure-open): no authentication; anyone who reaches the listeners can drive the mesh", "grpc", grpcAddr, "http", httpAddr)
	default:
		log.Info("no authentication configured: listening on loopback only (see README, Security)", "grpc", grpcAddr, "http", httpAddr)
	}
	return s, nil
}

// grpcOptions are the auth interceptors and the server's credentials.
func (s *security) grpcOptions() []server.Option {
	opts := []server.Option{server.WithAuth(s.authn.UnaryInterceptor(), s.authn.StreamInterceptor())}
	if s.tls != nil {
		opts = append(opts, server.WithServerOptions(grpc.Creds(credentials.NewTLS(s.tls.ServerConfig()))))
	}
	return opts
}

// selfDial are the dial options toward this process's own gRPC server: the
// service identity, over TLS pinned to the process's own certificate.
func (s *security) selfDial() []grpc.DialOption {
	if s.tls == nil {
		return []grpc.DialOption{grpc.WithPerRPCCredentials(s.authn.ServiceCredentials(false))}
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(s.tls.SelfConfig())),
		grpc.WithPerRPCCredentials(s.authn.ServiceCredentials(true)),
	}
}

// remoteDial are the dial options toward another process of the mesh.
func (s *security) remoteDial(addr string) []grpc.DialOption {
	if s.tls == nil {
		return []grpc.DialOption{grpc.WithPerRPCCredentials(s.authn.ServiceCredentials(false))}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(s.tls.ClientConfig(host))),
		grpc.WithPerRPCCredentials(s.authn.ServiceCredentials(true)),
	}
}

// gateway adds the API middleware and the delegation of the HTTP caller.
func (s *security) gateway(gc *server.GatewayConfig) {
	max := gc.MaxBodyBytes
	gc.APIMiddleware = func(next http.Handler) http.Handler { return s.authn.Middleware(max, next) }
	// A module's own surface (MCP: start investigations, steer) needs an
	// authenticated caller with the steer role.
	gc.ModuleMiddleware = func(next http.Handler) http.Handler {
		return s.authn.Middleware(max, s.authn.RequireRole(auth.RoleSteer, next))
	}
	gc.ServeMuxOptions = append(gc.ServeMuxOptions, runtime.WithMetadata(auth.DelegationMetadata))
}

// httpListener serves HTTPS when TLS is configured.
func (s *security) httpListener(l net.Listener) net.Listener {
	if s.tls == nil {
		return l
	}
	return tls.NewListener(l, s.tls.ServerConfig())
}

// natsEmbedded is the embedded server's security: the mesh's users (no
// anonymous client), the in-process connection as UserAll, TLS on its TCP
// listener when -tls.* is set.
func (s *security) natsEmbedded(listen string) (bus.EmbeddedConfig, error) {
	var reader string
	if f := s.cfg.NATS.ReaderPasswordFile; f != "" {
		pw, err := readPassword(f)
		if err != nil {
			return bus.EmbeddedConfig{}, fmt.Errorf("app: -nats.reader-password-file: %w", err)
		}
		reader = pw
	}
	if !s.id.HasMeshKey() {
		return bus.EmbeddedConfig{}, errors.New("app: the embedded NATS needs the mesh key (it knows every user), not -mesh.credentials-file")
	}
	pw := func(u string) string { p, _ := s.id.NATSPassword(u); return p }
	ec := bus.EmbeddedConfig{
		Users:          bus.Users(pw, reader),
		ClientUser:     bus.UserAll,
		ClientPassword: pw(bus.UserAll),
	}
	if s.tls != nil && listen != "" {
		ec.TLS, ec.TLSVerify = s.tls.ServerConfig(), s.cfg.TLS.RequireClientCert
	}
	return ec, nil
}

// natsClient is the identity of this process toward an external NATS:
// -nats.user and -nats.password-file, or rcamesh-<target> with the password
// derived from the mesh key; TLS for a tls:// URL.
func (s *security) natsClient(url string, targets []string) (user, password string, tlsc *tls.Config, err error) {
	user = bus.UserFor(targets)
	if !s.id.HasMeshKey() {
		user = s.id.NATSUser()
	}
	if s.cfg.NATS.User == "" {
		if password, err = s.id.NATSPassword(user); err != nil {
			return "", "", nil, err
		}
	} else {
		user = s.cfg.NATS.User
		if password, err = readPassword(s.cfg.NATS.PasswordFile); err != nil {
			return "", "", nil, fmt.Errorf("app: -nats.password-file: %w", err)
		}
	}
	if s.tls != nil && strings.HasPrefix(url, "tls://") {
		host := strings.TrimPrefix(url, "tls://")
		if i := strings.IndexAny(host, ",/"); i >= 0 {
			host = host[:i]
		}
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		tlsc = s.tls.ClientConfig(host)
	}
	return user, password, tlsc, nil
}

func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	pw := strings.TrimSpace(string(b))
	if len(pw) < 16 {
		return "", fmt.Errorf("the password in %s is shorter than 16 characters", path)
	}
	return pw, nil
}
