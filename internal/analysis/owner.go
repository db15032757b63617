package analysis

import (
	"fmt"
	"sort"
	"strings"
)

// Stage 7's entity rule: the root-cause entity is the owning object, not
// one of its pods, unless only one replica is affected. Detectors read pods
// one by one; when the same failure (one detector's mode) is found on two
// or more pods of one workload, each of those findings names the workload
// instead, and says which pods showed it.

// ownerEntity is the workload entity owning pod p ("deployment/ns/name",
// "statefulset/ns/name", "daemonset/ns/name"); "" when the owner is not a
// long-running workload (a Job's pod, a bare pod) or is not known.
func (ev *Evidence) ownerEntity(p Pod) string {
	kind := strings.ToLower(p.OwnerKind)
	switch kind {
	case "statefulset", "daemonset":
		if p.OwnerName != "" {
			return kind + "/" + p.Namespace + "/" + p.OwnerName
		}
		return ""
	case "", "replicaset", "deployment":
	default:
		return "" // a Job's, a CronJob's or a custom controller's pod
	}
	w := ev.workloadOf(p.Pod)
	if w == "" {
		return ""
	}
	for _, d := range ev.Deployments {
		if d.Name == w && (d.Namespace == "" || d.Namespace == p.Namespace) {
			return deploymentEntity(p.Namespace, w)
		}
	}
	if kind == "replicaset" || kind == "deployment" {
		return deploymentEntity(p.Namespace, w)
	}
	return ""
}

// liftToOwners rewrites the entity of every pod finding whose mode was
// found on two or more pods of the same workload to that workload.
func (ev *Evidence) liftToOwners(findings []Finding) {
	podOwner := map[string]string{}
	for _, p := range ev.Pods {
		if o := ev.ownerEntity(p); o != "" {
			podOwner["pod/"+p.Namespace+"/"+p.Name] = o
		}
	}
	type group struct {
		idx  []int
		pods []string
	}
	groups := map[string]*group{}
	for i, f := range findings {
		o, ok := podOwner[f.Entity]
		if !ok || f.Healthy {
			continue
		}
		key := f.Mode + "\x00" + o
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
		}
		g.idx = append(g.idx, i)
		g.pods = appendUnique(g.pods, f.Entity[strings.LastIndexByte(f.Entity, '/')+1:])
	}
	for key, g := range groups {
		if len(g.pods) < 2 {
			continue
		}
		owner := key[strings.IndexByte(key, 0)+1:]
		sort.Strings(g.pods)
		for _, i := range g.idx {
			f := &findings[i]
			pod := f.Entity
			f.Entity = owner
			f.Inferred = append(f.Inferred, Claim{Text: fmt.Sprintf("%d pods of %s show the same failure (%s): it belongs to the workload, not to %s alone", len(g.pods), owner, clip(strings.Join(g.pods, ", "), 200), pod), PinIDs: f.PinIDs})
		}
	}
}
