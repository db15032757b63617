package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// maxManagerSettings caps the settings of a managing object quoted in a
// finding.
const maxManagerSettings = 5

// managerTimingRE and managerSourceRE rank the settings of a managing
// object: first when it refreshes what it manages, then from where.
var (
	managerTimingRE = regexp.MustCompile(`(?i)(interval|refresh|renew|schedule|duration|expir|rotat|every|period|poll|ttl|frequen|policy|time)`)
	managerSourceRE = regexp.MustCompile(`(?i)(store|source|remote|issuer)`)
)

func settingRank(path string) int {
	switch {
	case managerTimingRE.MatchString(path):
		return 0
	case managerSourceRE.MatchString(path):
		return 1
	}
	return 2
}

// annotateManagers adds, to every finding whose entity is an object that
// something else manages (a Secret synced by an ExternalSecret, a Secret
// issued by a Certificate, a ConfigMap rendered by an operator's custom
// resource), the manager and its settings, as described in the evidence.
func annotateManagers(ev *Evidence, findings []Finding) {
	for i := range findings {
		f := &findings[i]
		parts := strings.Split(f.Entity, "/")
		if len(parts) != 3 {
			continue
		}
		var obj *Resource
		for j := range ev.Resources {
			r := &ev.Resources[j]
			if strings.EqualFold(r.Kind, parts[0]) && r.Namespace == parts[1] && r.Name == parts[2] {
				obj = r
				break
			}
		}
		if obj == nil {
			continue
		}
		refs := append(append([]string(nil), obj.Owners...), obj.ManagedBy...)
		seen := map[string]bool{}
		for _, ref := range refs {
			kind, name, ok := strings.Cut(ref, "/")
			if !ok || seen[ref] {
				continue
			}
			seen[ref] = true
			m := ev.resource(kind, obj.Namespace, name)
			if m == nil {
				continue
			}
			settings := managerSettings(m.Signals)
			text := fmt.Sprintf("%s %s is managed by %s %s", obj.Kind, obj.Name, m.Kind, m.Name)
			if len(settings) > 0 {
				text += ": " + strings.Join(settings, ", ")
			}
			for _, c := range m.Conditions {
				if c.Reason != "" || c.Message != "" {
					text += fmt.Sprintf("; condition %s=%s %s", c.Type, c.Status, strings.TrimSpace(c.Reason+" "+c.Message))
					break
				}
			}
			f.validated(text, m.Cite)
			f.Statement += fmt.Sprintf("; %s %s is managed by %s %s", obj.Kind, obj.Name, m.Kind, m.Name)
			if len(settings) > 0 {
				f.Statement += " (" + strings.Join(settings[:min(2, len(settings))], ", ") + ")"
			}
		}
	}
}

// resource finds a described object; a namespaced lookup falls back to a
// cluster-scoped object of that kind and name.
func (ev *Evidence) resource(kind, ns, name string) *Resource {
	var fallback *Resource
	for j := range ev.Resources {
		r := &ev.Resources[j]
		if !strings.EqualFold(r.Kind, kind) || r.Name != name {
			continue
		}
		if r.Namespace == ns {
			return r
		}
		if r.Namespace == "" {
			fallback = r
		}
	}
	return fallback
}

// managerSettings picks the "path=value" lines of a manager worth quoting:
// refresh/timing/source settings first, then the rest of its spec.
func managerSettings(signals []string) []string {
	var lines []string
	for _, s := range signals {
		if strings.Contains(s, "=") && strings.HasPrefix(s, "spec.") && !strings.HasSuffix(s, "=<redacted>") {
			lines = append(lines, strings.TrimPrefix(s, "spec."))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool {
		pi, _, _ := strings.Cut(lines[i], "=")
		pj, _, _ := strings.Cut(lines[j], "=")
		return settingRank(pi) < settingRank(pj)
	})
	if len(lines) > maxManagerSettings {
		lines = lines[:maxManagerSettings]
	}
	return lines
}
