package auth

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata keys by which the gateway (a service-role caller) passes on the
// HTTP caller it authenticated. They are ignored from any other caller.
const (
	MDDelegateName  = "x-rcamesh-delegate-name"
	MDDelegateRoles = "x-rcamesh-delegate-roles"
)

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the caller authenticated for ctx (nil when none).
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// authorize identifies the caller of method from the incoming metadata and
// checks the role Policy requires. It returns the context with the principal.
func (a *Authenticator) authorize(ctx context.Context, method string) (context.Context, error) {
	need, ok := Required(method)
	if !ok {
		a.log.WarnContext(ctx, "refused: method has no row in the auth policy", "method", method)
		return ctx, status.Errorf(codes.PermissionDenied, "%s is not in the access policy", method)
	}
	if need == RolePublic {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	auths := md.Get("authorization")
	if len(auths) == 0 {
		if !a.enabled {
			return ctx, nil // open: loopback only, or -auth.insecure-open
		}
		return ctx, status.Errorf(codes.Unauthenticated, "%s needs a bearer token (role %s)", method, need)
	}
	if len(auths) > 1 {
		return ctx, status.Error(codes.Unauthenticated, "more than one authorization header")
	}
	tok, found := strings.CutPrefix(auths[0], "Bearer ")
	if !found {
		tok, found = strings.CutPrefix(auths[0], "bearer ")
	}
	if !found {
		return ctx, status.Error(codes.Unauthenticated, "the authorization header is not 'Bearer <token>'")
	}
	p, err := a.Authenticate(ctx, strings.TrimSpace(tok))
	if err != nil {
		if !a.enabled {
			// Open mode ignores credentials it does not know (a client
			// configured for another mesh still works on a laptop).
			return ctx, nil
		}
		a.log.InfoContext(ctx, "refused: authentication failed", "method", method, "reason", err.Error())
		return ctx, status.Errorf(codes.Unauthenticated, "%s: %v", method, err)
	}
	if p.Via == "service" {
		if dp, err := delegated(md); err != nil {
			return ctx, status.Error(codes.Unauthenticated, err.Error())
		} else if dp != nil {
			p = dp
		}
	}
	if !a.enabled && p.Via == "delegated" {
		return WithPrincipal(ctx, p), nil // open mode: the gateway's anonymous callers pass
	}
	if !p.Has(need) {
		a.log.InfoContext(ctx, "refused: role missing", "method", method, "principal", p.Name, "roles", p.roleNames(), "need", string(need))
		return ctx, status.Errorf(codes.PermissionDenied, "%s needs role %s; %s has %s", method, need, p.Name, p.roleNames())
	}
	return WithPrincipal(ctx, p), nil
}

// delegated is the HTTP caller the gateway authenticated, nil when the
// service called on its own behalf.
func delegated(md metadata.MD) (*Principal, error) {
	names, roles := md.Get(MDDelegateName), md.Get(MDDelegateRoles)
	if len(names) == 0 && len(roles) == 0 {
		return nil, nil
	}
	if len(names) != 1 || len(roles) != 1 {
		return nil, errors.New("malformed delegation metadata")
	}
	p := &Principal{Name: names[0], Via: "delegated"}
	if roles[0] != "" {
		rs, err := ParseRoles(roles[0])
		if err != nil {
			return nil, errors.New("malformed delegation metadata: " + err.Error())
		}
		p.Roles = rs
	}
	return p, nil
}

// UnaryInterceptor enforces Policy on unary RPCs.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := a.authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor enforces Policy on streaming RPCs.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := a.authorize(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &principalStream{ServerStream: ss, ctx: ctx})
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }

// ServiceCredentials are the per-RPC credentials of the mesh's own clients:
// the service token as a bearer token. requireTLS is false only for
// connections that stay on loopback.
func (a *Authenticator) ServiceCredentials(requireTLS bool) credentials.PerRPCCredentials {
	return bearerCreds{token: a.svcToken, tls: requireTLS}
}

type bearerCreds struct {
	token string
	tls   bool
}

func (b bearerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearerCreds) RequireTransportSecurity() bool { return b.tls }

// TokenCredentials are per-RPC credentials for a client holding token.
func TokenCredentials(token string, requireTLS bool) credentials.PerRPCCredentials {
	return bearerCreds{token: token, tls: requireTLS}
}
