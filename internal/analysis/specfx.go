package analysis

import (
	"fmt"
	"regexp"
	"strings"
)

// The spec rows of the cause-to-effect table: a failure whose words are a
// row's effect, logged by (or about) a pod whose container runs with the
// row's setting, is that setting's: a configuration fault of the workload
// that carries it, whatever the effect alone would suggest (a write refused
// by a read-only root filesystem is the hardening's, not a failing disk's;
// a name the cluster's DNS knows that a host-network pod cannot resolve is
// its DNS policy's, not the Service's). Settings come from the pod spec
// (facts.Container.Settings, written by the tools service); effects are
// the kernel's, the kubelet's and the resolver's own words, which do not
// vary with the application.
type specEffect struct {
	setting *regexp.Regexp
	effect  *regexp.Regexp
	why     string
}

var specEffects = []specEffect{
	{
		regexp.MustCompile(`readOnlyRootFilesystem: true`),
		regexp.MustCompile(`(?i)read-only file ?system|\berofs\b`),
		"its securityContext makes the container's root filesystem read-only, so writes outside a mounted volume fail",
	},
	{
		regexp.MustCompile(`hostNetwork: true, dnsPolicy: (?:ClusterFirst|Default)$`),
		regexp.MustCompile(`(?i)no such host|could not resolve|name resolution|nxdomain|name or service not known|unknownhostexception|getaddrinfo|servfail|name not resolved`),
		"it runs on the host network with that DNS policy, so it resolves names through the node's resolver, which does not know the cluster's names (Kubernetes falls back to the node's DNS unless the policy is ClusterFirstWithHostNet)",
	},
	{
		regexp.MustCompile(`runAsNonRoot: true|runAsUser: [1-9]`),
		regexp.MustCompile(`(?i)(?:open|mkdir|write|create|chown|chmod|rename|unlink|bind|listen|exec)\b[^\n]{0,120}(?:permission denied|operation not permitted)|\beacces\b`),
		"it runs as a non-root user, which may not write or bind where the image expects",
	},
	{
		regexp.MustCompile(`capabilities drop`),
		regexp.MustCompile(`(?i)operation not permitted|\beperm\b|bind[^\n]{0,60}permission denied`),
		"its securityContext drops capabilities the process needs",
	},
	{
		regexp.MustCompile(`fsGroup: \d+`),
		regexp.MustCompile(`(?i)volume ownership|fsgroupchangepolicy|recursive(?:ly)? (?:chown|chmod|permission change)`),
		"the pod's fsGroup makes the kubelet change the ownership of every file of the volume at each mount",
	},
}

// maxSpecSettings bounds the settings quoted for one finding.
const maxSpecSettings = 2

// specExplained applies the spec rows to every fault finding: the pods its
// statement and claims name (or the pods of its workload) whose settings
// carry a row whose effect its words show make it a configuration fault of
// their workload, with the setting quoted.
func (ev *Evidence) specExplained(findings []Finding) {
	for i := range findings {
		f := &findings[i]
		if f.Healthy {
			continue
		}
		var b strings.Builder
		b.WriteString(f.Statement)
		for _, c := range f.Validated {
			b.WriteByte('\n')
			b.WriteString(c.Text)
		}
		text := b.String()
		for _, row := range specEffects {
			effect := row.effect.FindString(text)
			if effect == "" {
				continue
			}
			var hits []string
			owner := ""
			var cites []Cite
			for _, p := range ev.Pods {
				if !strings.Contains(text, p.Name) && !ev.podOfEntity(p, f.Entity) {
					continue
				}
				for _, c := range p.Containers {
					for _, st := range c.Settings {
						if !row.setting.MatchString(st) {
							continue
						}
						o := ev.ownerEntity(p)
						if o == "" {
							o = podEntity(p.Pod)
						}
						if owner != "" && o != owner {
							continue // one workload's setting per finding
						}
						owner = o
						cites = append(cites, p.Cite)
						if len(hits) < maxSpecSettings {
							hits = appendUnique(hits, fmt.Sprintf("%s container %s is configured with %s", firstNonEmptyStr(p.Workload, p.Name), c.Name, quote(st)))
						}
					}
				}
			}
			if owner == "" {
				continue
			}
			f.Category = catConfig
			f.Entity = owner
			f.Statement += fmt.Sprintf("; the failure (%s) comes from the pod's own spec: %s — %s", quote(effect), strings.Join(hits, "; "), row.why)
			for _, h := range hits {
				f.validated(h, cites...)
			}
			f.Chain = append([]string{"The workload's pod spec sets " + strings.Join(hits, "; ")}, f.Chain...)
			break
		}
	}
}

// podOfEntity: pod p is entity, or a pod of the workload entity names.
func (ev *Evidence) podOfEntity(p Pod, entity string) bool {
	if entity == podEntity(p.Pod) {
		return true
	}
	o := ev.ownerEntity(p)
	return o != "" && o == entity
}
