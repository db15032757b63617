package tools

import (
	"slices"
	"testing"

	"github.com/rcamesh/rcamesh/internal/intent"
)

// TestRegistryIsTheIntentVocabulary: the registry's tools and the shared
// intent constants are the same list, so a name the router, the brain or the
// critic uses is a tool that exists.
func TestRegistryIsTheIntentVocabulary(t *testing.T) {
	reg, err := DefaultRegistry()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range intent.All {
		want = append(want, n.String())
	}
	got := reg.Intents()
	slices.Sort(got)
	slices.Sort(want)
	if n := len(slices.Compact(slices.Clone(want))); n != len(want) {
		t.Errorf("the vocabulary names an intent twice: %v", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("registry %v, intent vocabulary %v", got, want)
	}
}
