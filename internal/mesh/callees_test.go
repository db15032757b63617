package mesh

import (
	"slices"
	"testing"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

func TestCallees(t *testing.T) {
	type deps struct {
		Brain brainv1.BrainServiceClient
		Tools toolsv1.ToolsServiceClient
		Other toolsv1.ToolsServiceClient // a second client of one service counts once
		tools toolsv1.ToolsServiceClient // unexported: not a dependency
		Name  string
	}
	type none struct{ Name string }
	tests := []struct {
		deps any
		want []string
	}{
		{deps{}, []string{Tools, Brain}},
		{&deps{}, []string{Tools, Brain}},
		{none{}, nil},
		{42, nil},
		{nil, nil},
	}
	for _, tc := range tests {
		if got := Callees(tc.deps); !slices.Equal(got, tc.want) {
			t.Errorf("Callees(%T) = %v, want %v", tc.deps, got, tc.want)
		}
	}
}
