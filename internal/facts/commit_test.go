package facts

import "testing"

func TestCommitPathNames(t *testing.T) {
	c := Commit{Files: []CommitFile{{Path: "apps/orders/pickup-api/hpa.yaml"}, {Path: "mesh/ledger/posting-engine-destinationrule.yaml"}, {Path: "charts/cart_values.yaml"}}}
	for name, want := range map[string]bool{
		"pickup-api":      true, // a folder
		"hpa":             true, // a file
		"posting-engine":  true, // a file that begins with it
		"destinationrule": true, // a file that ends with it
		"cart":            true, // an underscore separates too
		"orders-api":      false,
		"pick":            false, // a prefix without a separator
		"ap":              false, // too short
	} {
		if got := c.PathNames(name); got != want {
			t.Errorf("PathNames(%q) = %v, want %v", name, got, want)
		}
	}
}
