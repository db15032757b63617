package backend

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// StaticKinds is a KindMapper over a fixed list of kinds (fixtures, tests).
type StaticKinds []KindResolution

// Resolve implements KindMapper: the kind, its lower-case plural resource
// or "<kind>.<group>" match case-insensitively.
func (k StaticKinds) Resolve(_ context.Context, kind string) (KindResolution, error) {
	want := strings.ToLower(strings.TrimSpace(kind))
	for _, r := range k {
		lk := strings.ToLower(r.Kind)
		switch want {
		case lk, r.GVR.Resource, lk + "." + r.GVR.Group, r.GVR.Resource + "." + r.GVR.Group:
			return r, nil
		}
	}
	return KindResolution{}, fmt.Errorf("%w %q", ErrUnknownKind, kind)
}

// BuiltinGroup: an API group of Kubernetes itself (the core group, the
// unqualified groups such as apps and batch, the *.k8s.io groups), not of
// a custom resource.
func BuiltinGroup(g string) bool {
	return g == "" || !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io")
}

// Custom implements KindMapper: every kind of the list outside the
// built-in groups, sorted by kind.
func (k StaticKinds) Custom(context.Context) ([]KindResolution, error) {
	var out []KindResolution
	for _, r := range k {
		if !BuiltinGroup(r.GVR.Group) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// PluralResource is the resource name Kubernetes derives from a kind
// (lower case, plural) when no RESTMapper is at hand.
func PluralResource(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}
