package live

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Dynamic returns a dynamic client for objects of any kind and a
// discovery-based kind mapper (cached; reset once on a miss, so CRDs
// installed after start resolve).
func Dynamic(k *integrations.Kubernetes) (dynamic.Interface, backend.KindMapper, error) {
	cfg, err := RESTConfig(k)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(disc)
	return dc, &DiscoveryKinds{disc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

// DiscoveryKinds implements backend.KindMapper with API discovery.
type DiscoveryKinds struct {
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	mu     sync.Mutex
}

// Resolve implements backend.KindMapper.
func (d *DiscoveryKinds) Resolve(_ context.Context, kind string) (backend.KindResolution, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := strings.ToLower(strings.TrimSpace(kind))
	res, group, _ := strings.Cut(want, ".")
	for attempt := 0; attempt < 2; attempt++ {
		gvr, err := d.mapper.ResourceFor(schema.GroupVersionResource{Group: group, Resource: res})
		if err == nil {
			gvk, kerr := d.mapper.KindFor(gvr)
			if kerr == nil {
				m, merr := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if merr == nil {
					return backend.KindResolution{GVR: gvr, Kind: gvk.Kind, Namespaced: m.Scope.Name() == "namespace"}, nil
				}
			}
		}
		d.mapper.Reset()
	}
	return backend.KindResolution{}, fmt.Errorf("%w %q", backend.ErrUnknownKind, kind)
}

// Custom implements backend.KindMapper: listable namespaced resources of
// non-built-in groups, at their preferred version.
func (d *DiscoveryKinds) Custom(_ context.Context) ([]backend.KindResolution, error) {
	lists, err := d.disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("kubernetes: discovery: %w", err)
	}
	var out []backend.KindResolution
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil || backend.BuiltinGroup(gv.Group) {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			out = append(out, backend.KindResolution{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced})
		}
	}
	return out, nil
}

func hasVerb(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
