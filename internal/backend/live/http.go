package live

import (
	"fmt"
	"net/http"

	"github.com/rcamesh/rcamesh/internal/integrations"
)

// authTransport adds credentials to each request. The secret is resolved
// once at construction and never logged.
type authTransport struct {
	next   http.RoundTripper
	header string
	value  string
	user   string
	pass   string
	org    string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	switch {
	case t.user != "":
		r.SetBasicAuth(t.user, t.pass)
	case t.header != "":
		r.Header.Set(t.header, t.value)
	}
	if t.org != "" {
		r.Header.Set("X-Scope-OrgID", t.org)
	}
	return t.next.RoundTrip(r)
}

// transport builds an http.RoundTripper with the configured credentials.
func transport(a integrations.Auth, org string) (http.RoundTripper, error) {
	t := &authTransport{next: http.DefaultTransport, org: org}
	switch {
	case !a.BearerToken.IsZero():
		v, err := a.BearerToken.Resolve()
		if err != nil {
			return nil, fmt.Errorf("bearer_token: %w", err)
		}
		t.header, t.value = "Authorization", "Bearer "+v
	case !a.APIKey.IsZero():
		v, err := a.APIKey.Resolve()
		if err != nil {
			return nil, fmt.Errorf("api_key: %w", err)
		}
		t.header, t.value = "Authorization", "ApiKey "+v
	case a.Username != "":
		v, err := a.Password.Resolve()
		if err != nil {
			return nil, fmt.Errorf("password: %w", err)
		}
		t.user, t.pass = a.Username, v
	}
	return t, nil
}

// statusError turns a non-2xx response into an error a user can act on.
func statusError(what string, code int, body []byte) error {
	msg := string(body)
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s: HTTP %d: credentials rejected (check the auth section): %s", what, code, msg)
	case http.StatusNotFound:
		return fmt.Errorf("%s: HTTP 404: wrong URL or index: %s", what, msg)
	}
	return fmt.Errorf("%s: HTTP %d: %s", what, code, msg)
}
