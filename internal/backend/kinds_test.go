package backend

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPluralResource(t *testing.T) {
	for kind, want := range map[string]string{
		"Widget": "widgets", "Policy": "policies", "Gateway": "gateways", "Ingress": "ingresses", "Box": "boxes", "Patch": "patches",
	} {
		if got := PluralResource(kind); got != want {
			t.Errorf("PluralResource(%q) = %q, want %q", kind, got, want)
		}
	}
}

func TestStaticKindsResolve(t *testing.T) {
	k := StaticKinds{{GVR: schema.GroupVersionResource{Group: "acme.example.io", Version: "v2", Resource: "widgets"}, Kind: "Widget", Namespaced: true}}
	tests := []struct {
		in      string
		wantErr bool
	}{
		{"Widget", false}, {"widget", false}, {"widgets", false}, {"widget.acme.example.io", false}, {"widgets.acme.example.io", false},
		{"gadget", true}, {"widget.other.io", true},
	}
	for _, tc := range tests {
		r, err := k.Resolve(t.Context(), tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrUnknownKind) {
				t.Errorf("Resolve(%q) err = %v, want ErrUnknownKind", tc.in, err)
			}
			continue
		}
		if err != nil || r.Kind != "Widget" || r.GVR.Resource != "widgets" {
			t.Errorf("Resolve(%q) = %+v, %v", tc.in, r, err)
		}
	}
}
