package brain

import "testing"

func TestManagedObjectKind(t *testing.T) {
	for kind, want := range map[string]bool{
		"secret": true, "configmap": true, "certificate": true, "Certificate": true, "externalsecret": true, "sealedsecret": true,
		"deployment": false, "pod": false, "service": false, "job": false, "db": false,
	} {
		if got := managedObjectKind(kind); got != want {
			t.Errorf("managedObjectKind(%q) = %v, want %v", kind, got, want)
		}
	}
}
