package tools

import (
	"fmt"
	"net/http"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rcamesh/rcamesh/internal/backend"
)

// ErrReadOnly is returned (wrapped) when a tool tries to change the
// inspected system (the one error of internal/backend).
var ErrReadOnly = backend.ErrReadOnly

// readVerbs are the Kubernetes verbs a tool may use.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// ReadOnlyTransport refuses every HTTP method but GET and HEAD; see
// backend.ReadOnlyTransport.
func ReadOnlyTransport(next http.RoundTripper) http.RoundTripper {
	return backend.ReadOnlyTransport(next)
}

// ReadOnlyRESTConfig returns a copy of cfg whose transport refuses writes.
func ReadOnlyRESTConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(ReadOnlyTransport)
	return c
}

// reactorClient is implemented by client-go's fake clientsets.
type reactorClient interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
}

// ReadOnlyReactor refuses every action but get, list and watch on a fake clientset.
func ReadOnlyReactor(action k8stesting.Action) (bool, runtime.Object, error) {
	if readVerbs[action.GetVerb()] {
		return false, nil, nil
	}
	res := action.GetResource().Resource
	if sub := action.GetSubresource(); sub != "" {
		res += "/" + sub
	}
	return true, nil, fmt.Errorf("%w: %s %s", ErrReadOnly, action.GetVerb(), res)
}

// ReadOnlyKube makes k refuse every verb but get, list and watch, and
// returns it with whether enforcement is in place:
//   - a client-go fake clientset gets a reactor in front of all others;
//   - a *kubernetes.Clientset gets ReadOnlyTransport on the HTTP clients of
//     all its API groups (in place: do this before the client is shared);
//   - any other implementation is returned as is with enforced=false.
func ReadOnlyKube(k kubernetes.Interface) (kubernetes.Interface, bool) {
	if k == nil || reflect.ValueOf(k).IsNil() {
		return nil, false
	}
	if rc, ok := k.(reactorClient); ok {
		rc.PrependReactor("*", "*", ReadOnlyReactor)
		return k, true
	}
	if cs, ok := k.(*kubernetes.Clientset); ok {
		return k, wrapClientset(cs)
	}
	return k, false
}

type restClientGetter interface{ RESTClient() rest.Interface }

// wrapClientset installs ReadOnlyTransport on every group client's
// http.Client. It reports false when some group client could not be wrapped.
func wrapClientset(cs *kubernetes.Clientset) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	seen := map[*http.Client]bool{}
	v := reflect.ValueOf(cs)
	t := v.Type()
	ok = true
	wrapped := 0
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 {
			continue
		}
		out := v.Method(i).Call(nil)[0]
		if out.Kind() == reflect.Interface || out.Kind() == reflect.Pointer {
			if out.IsNil() {
				continue
			}
		}
		g, isGroup := out.Interface().(restClientGetter)
		if !isGroup {
			continue
		}
		rc, isREST := g.RESTClient().(*rest.RESTClient)
		if !isREST || rc == nil || rc.Client == nil {
			ok = false
			continue
		}
		if seen[rc.Client] {
			continue
		}
		seen[rc.Client] = true
		rc.Client.Transport = ReadOnlyTransport(rc.Client.Transport)
		wrapped++
	}
	return ok && wrapped > 0
}
