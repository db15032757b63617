package analysis

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
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
		owner := key[strings.IndexByte(key, 0)+1:]
		if len(g.pods) < 2 {
			continue
		}
		sort.Strings(g.pods)
		for _, i := range g.idx {
			f := &findings[i]
			pod := f.Entity
			f.Entity = owner
			f.Inferred = append(f.Inferred, Claim{Text: fmt.Sprintf("%d pods of %s show the same failure (%s): it belongs to the workload, not to %s alone", len(g.pods), owner, clip(strings.Join(g.pods, ", "), 200), pod), PinIDs: f.PinIDs})
		}
	}
}

// liftSolePods names the owning workload, in the diagnosis, for a
// reading about one pod that nothing distinguishes from the workload's
// spec: no other replica of the same revision runs beside it (the only
// replica, or the first pod of a new revision while the old one serves).
// The readings are ranked, and the next evidence chosen, on the pod: only
// the reported entity moves, and the report says why.
func (ev *Evidence) liftSolePods(res *Result) {
	podOwner := map[string]string{}
	for _, p := range ev.Pods {
		if o := ev.ownerEntity(p); o != "" {
			podOwner["pod/"+p.Namespace+"/"+p.Name] = o
		}
	}
	lift := func(ent string) (string, string, bool) {
		owner, ok := podOwner[ent]
		if !ok {
			return "", "", false
		}
		pod := ent[strings.LastIndexByte(ent, '/')+1:]
		why, ok := ev.onlyReplicaOfRevision(podOwner, owner, pod)
		if !ok {
			return "", "", false
		}
		return owner, fmt.Sprintf("Only pod %s of %s shows the failure, and %s: it belongs to the workload's spec, not to one replica", pod, owner, why), true
	}
	// Copies: the caller's result (the round's reading, which chooses the
	// next evidence by the pod) is left as it was.
	res.Findings = slices.Clone(res.Findings)
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Healthy {
			continue
		}
		if owner, why, ok := lift(f.Entity); ok {
			f.Entity = owner
			f.Inferred = append(slices.Clip(f.Inferred), Claim{Text: why, PinIDs: f.PinIDs})
		}
	}
	res.Hypotheses = slices.Clone(res.Hypotheses)
	for i, h := range res.Hypotheses {
		if h.GetCategory() == catHealthy {
			continue
		}
		if owner, why, ok := lift(h.GetEntity()); ok {
			c := proto.CloneOf(h)
			c.Entity = owner
			res.Hypotheses[i] = c
			if i == 0 {
				res.Claims = append(slices.Clip(res.Claims), &investigationv1.Claim{Claim: why, Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: h.GetPinIds()})
			}
		}
	}
}

// onlyReplicaOfRevision: the pod named pod is the only pod of the workload
// owner in the evidence, or the only one of its ReplicaSet (revision)
// while the workload's other pods belong to other revisions. why says
// which. A StatefulSet's or DaemonSet's pod among siblings is one replica.
func (ev *Evidence) onlyReplicaOfRevision(podOwner map[string]string, owner, pod string) (why string, ok bool) {
	var self *Pod
	var siblings []Pod
	for i := range ev.Pods {
		p := &ev.Pods[i]
		if podOwner["pod/"+p.Namespace+"/"+p.Name] != owner {
			continue
		}
		if p.Name == pod {
			self = p
		} else {
			siblings = append(siblings, *p)
		}
	}
	if self == nil {
		return "", false
	}
	if len(siblings) == 0 {
		return "it is the workload's only pod in the evidence", true
	}
	if !strings.HasPrefix(owner, "deployment/") {
		return "", false
	}
	rs := replicaSetOf(self.Pod)
	for _, s := range siblings {
		if replicaSetOf(s.Pod) == rs {
			return "", false // another replica of the same revision: one replica is affected
		}
	}
	return fmt.Sprintf("it is the only pod of ReplicaSet %s (the workload's other pods run other revisions)", rs), true
}
