package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// alertsPath is where webhooks post alerts (POST /api/v4/alerts[/source]).
const alertsPath = "/api/v4/alerts"

type httpError struct {
	Code    int32    `json:"code"`
	Message string   `json:"message"`
	Details []string `json:"details"`
}

func writeErr(w http.ResponseWriter, status int, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(httpError{Code: int32(code), Message: msg, Details: []string{}})
}

func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sameOrigin reports whether origin names the host the request was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// Middleware guards the REST API (mount it around the gateway's /api/
// handler): cross-origin requests only from -http.cors-origins (preflight
// answered here), state-changing requests only with a JSON content type (a
// cross-origin "simple" text/plain or form POST is refused whatever the
// origin), and, when authentication is on, a valid credential: an API token
// or JWT as "Authorization: Bearer", or for alert intake the source's
// webhook secret. The authenticated caller travels to the gRPC server in
// the context (DelegationMetadata); the Authorization header does not.
// maxBody bounds the body read to check a PagerDuty signature.
func (a *Authenticator) Middleware(maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			if !slices.Contains(a.cors, strings.TrimRight(origin, "/")) {
				a.log.InfoContext(r.Context(), "refused: cross-origin request from an origin not in -http.cors-origins", "origin", origin, "path", r.URL.Path)
				writeErr(w, http.StatusForbidden, codes.PermissionDenied, "cross-origin requests from "+origin+" are not allowed (see -http.cors-origins)")
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if stateChanging(r.Method) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
				writeErr(w, http.StatusUnsupportedMediaType, codes.InvalidArgument,
					fmt.Sprintf("%s %s needs Content-Type: application/json", r.Method, r.URL.Path))
				return
			}
		}
		p, err := a.authenticateHTTP(r, maxBody)
		if err != nil {
			if a.enabled {
				a.log.InfoContext(r.Context(), "refused: authentication failed", "method", r.Method, "path", r.URL.Path, "reason", err.Error())
				w.Header().Set("WWW-Authenticate", `Bearer realm="rcamesh"`)
				writeErr(w, http.StatusUnauthorized, codes.Unauthenticated, err.Error())
				return
			}
			p = nil // open mode: unknown credentials are ignored
		}
		if p == nil {
			p = &Principal{Name: "anonymous", Via: "anonymous"}
		}
		r.Header.Del("Authorization")
		// grpc-gateway turns Grpc-Metadata-* headers into metadata: no
		// HTTP caller may set the delegation keys itself.
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "grpc-metadata-x-rcamesh-") {
				r.Header.Del(k)
			}
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// webhookSource is the alert source of a POST to the intake, "" otherwise.
func webhookSourceOf(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	if r.URL.Path == alertsPath {
		return WebhookSourceDefault
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, alertsPath+"/"); ok && rest != "" && !strings.Contains(rest, "/") {
		return rest
	}
	return ""
}

// authenticateHTTP identifies the caller of r; (nil, nil) when it brings no
// credential and authentication is off.
func (a *Authenticator) authenticateHTTP(r *http.Request, maxBody int64) (*Principal, error) {
	if src := webhookSourceOf(r); src != "" {
		if ws := a.webhooks[src]; ws != nil {
			var body []byte
			if ws.needsBody() && r.Body != nil {
				b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
				if err != nil {
					return nil, fmt.Errorf("%w: reading the body: %v", ErrUnauthenticated, err)
				}
				body = b
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			if ws.check(r, body) {
				return &Principal{Name: "webhook:" + src, Roles: []Role{RoleIngest}, Via: "webhook"}, nil
			}
		}
	}
	tok, ok := bearerToken(r)
	if !ok {
		if _, pw, basic := r.BasicAuth(); basic {
			tok, ok = pw, true // Alertmanager/Grafana basic_auth with a token as password
		}
	}
	if !ok {
		if !a.enabled {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s %s needs 'Authorization: Bearer <token>' (or the source's webhook secret)", ErrUnauthenticated, r.Method, r.URL.Path)
	}
	return a.Authenticate(r.Context(), tok)
}

// DelegationMetadata is a grpc-gateway metadata annotator
// (runtime.WithMetadata): it passes the caller Middleware authenticated to
// the gRPC server, which honours it only from the service identity.
func DelegationMetadata(ctx context.Context, r *http.Request) metadata.MD {
	p := PrincipalFrom(r.Context())
	if p == nil {
		p = &Principal{Name: "anonymous"}
	}
	return metadata.Pairs(MDDelegateName, p.Name, MDDelegateRoles, p.roleNames())
}

// RequireRole lets through (after Middleware) only a caller holding need
// when authentication is on; 403 otherwise.
func (a *Authenticator) RequireRole(need Role, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.enabled && !PrincipalFrom(r.Context()).Has(need) {
			writeErr(w, http.StatusForbidden, codes.PermissionDenied, fmt.Sprintf("%s %s needs the %s role", r.Method, r.URL.Path, need))
			return
		}
		next.ServeHTTP(w, r)
	})
}
