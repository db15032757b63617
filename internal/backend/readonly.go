package backend

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrReadOnly is returned (wrapped) when a request would change an inspected
// system. Tools only read.
var ErrReadOnly = errors.New("read-only: write refused")

type readOnlyTransport struct{ next http.RoundTripper }

// ReadOnlyTransport refuses every HTTP method but GET and HEAD before it
// reaches the server (Kubernetes get, list, watch and logs are GETs). Use it
// as rest.Config.WrapTransport for live Kubernetes clients.
func ReadOnlyTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if _, ok := next.(*readOnlyTransport); ok {
		return next
	}
	return &readOnlyTransport{next: next}
}

func (t *readOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s %s", ErrReadOnly, req.Method, req.URL.Path)
	}
	return t.next.RoundTrip(req)
}
