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

// A workload named as one variant of an application (a blue-green colour,
// a canary, a version) has the application's name as the base its records
// use; another name has none.
func TestVariantBase(t *testing.T) {
	for name, want := range map[string]string{
		"ice-schedule-blue":   "ice-schedule",
		"fare-engine-canary":  "fare-engine",
		"Quote-API-Green":     "quote-api",
		"ledger-writer-v2":    "ledger-writer",
		"checkout-blue":       "", // the base would be one word, too vague to search
		"payment-api":         "",
		"blue-green-switcher": "",
	} {
		if got := variantBase(name); got != want {
			t.Errorf("variantBase(%q) = %q, want %q", name, got, want)
		}
	}
}

// The culprit is described before it is blamed when it is a Kubernetes
// object the describe tool reads; a pod (its listing carries it), a
// commit, a database, a host or a node (its own tools read them) are not.
func TestDescribableCulprit(t *testing.T) {
	for kind, want := range map[string]bool{
		"httproute": true, "horizontalpodautoscaler": true, "ingress": true, "statefulset": true, "cronjob": true, "certificate": true, "Deployment": true,
		"pod": false, "commit": false, "db": false, "host": false, "node": false, "": false, "environment": false,
	} {
		if got := describableCulprit(kind); got != want {
			t.Errorf("describableCulprit(%q) = %v, want %v", kind, got, want)
		}
	}
}

// A scheduled run's name gives its CronJob; another name gives none.
func TestScheduledRunOwner(t *testing.T) {
	for name, want := range map[string]string{
		"lesson-invoices-29362050": "lesson-invoices",
		"nightly-29001440":         "nightly",
		"backfill-2024":            "",
		"db-migrate":               "",
	} {
		got := ""
		if m := reScheduledRun.FindStringSubmatch(name); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("owner of %q = %q, want %q", name, got, want)
		}
	}
}
