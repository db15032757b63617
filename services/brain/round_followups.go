package brain

import (
	"context"
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/intent"
)

// maxConfigFollowUps bounds the ConfigMaps read for one suspect;
// maxNamedFollowUps the objects named in failing lines described per round.
const (
	maxConfigFollowUps = 2
	maxNamedFollowUps  = 2
)

// configFollowUps describes the ConfigMaps mounted by the pods of the
// leading hypothesis's workload that no call has read yet: a suspect's
// settings (limits, policies, pool sizes) often are the explanation.
func (s *Service) configFollowUps(ctx context.Context, st *invState) []pendingCall {
	if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentDescribe]; !ok {
		return nil
	}
	_, res, err := s.evidence(ctx, st)
	if err != nil {
		return nil
	}
	// Objects the failing lines name ("PodDisruptionBudget ns/name") are
	// described first: their spec and conditions are the next evidence,
	// whatever the leading hypothesis is.
	var named []pendingCall
	for _, o := range res.NamedObjects() {
		if len(named) >= maxNamedFollowUps {
			break
		}
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": o.Kind, "name": o.Name, "namespace": o.Namespace}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			named = append(named, c)
		}
	}
	if len(named) > 0 {
		return named
	}
	if len(res.Hypotheses) == 0 {
		return nil
	}
	ent := res.Hypotheses[0].GetEntity()
	if res.Hypotheses[0].GetDetector() == "dns_failure" && clusterDNSName(ent) {
		// A cluster-local name that does not resolve: the cluster DNS
		// server's own logs and configuration are the next evidence.
		var out []pendingCall
		for _, c := range []pendingCall{
			{Intent: intentPodLogs, Params: map[string]any{"namespace": dnsNamespace, "pod": dnsWorkload + "-*"}, Origin: originExpand},
			{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": dnsWorkload, "namespace": dnsNamespace}, Origin: originExpand},
		} {
			if !st.ranEquivalent(c) {
				out = append(out, c)
			}
		}
		return out
	}
	if lead := res.Hypotheses[0]; lead.GetDetector() == "dependency_failure" {
		// A dependency that went away may have been taken down on purpose:
		// planned maintenance and change records, cluster-wide.
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"query": "maintenance OR \"change window\""}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentSearchLogs]; ok && !st.ranEquivalent(c) {
			out := []pendingCall{c}
			if droppedConnRe.MatchString(lead.GetStatement()) {
				if ns := firstNonEmpty(st.rec.GetAlert().GetNamespace(), st.rec.GetAlert().GetLabels()["namespace"]); ns != "" {
					out = append(out, pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}, Origin: originExpand})
				}
			}
			return out
		}
	}
	if lead := res.Hypotheses[0]; lead.GetDetector() == "dependency_failure" && droppedConnRe.MatchString(lead.GetStatement()) {
		// Connections to a dependency that time out (not refused) are
		// dropped on the path: the caller namespace's NetworkPolicies are
		// the first suspect.
		if ns := st.rec.GetAlert().GetNamespace(); ns != "" || st.rec.GetAlert().GetLabels()["namespace"] != "" {
			if ns == "" {
				ns = st.rec.GetAlert().GetLabels()["namespace"]
			}
			c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}, Origin: originExpand}
			if !st.ranEquivalent(c) {
				return []pendingCall{c}
			}
		}
	}
	parts := strings.Split(ent, "/")
	if len(parts) < 2 {
		return nil
	}
	var out []pendingCall
	if (parts[0] == "persistentvolumeclaim" || parts[0] == "pod") && len(parts) == 3 {
		// How the rest of the namespace experiences the suspect: its
		// clients' log lines that name it (by its pod, the PVC's owner).
		target := parts[2]
		if parts[0] == "persistentvolumeclaim" {
			if i := strings.Index(target, "-"); i > 0 {
				target = target[i+1:] // data-<pod> → <pod>
			}
		}
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"namespace": parts[1], "query": `"` + target + `"`}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentSearchLogs]; ok && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		if parts[0] == "persistentvolumeclaim" {
			return out
		}
	}
	if len(parts) == 3 && parts[0] == "job" {
		// A batch run is judged by its own output: how it ended.
		c := pendingCall{Intent: intentPodLogs, Params: map[string]any{"namespace": parts[1], "pod": parts[2] + "-*"}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentPodLogs]; ok && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	if len(parts) == 3 && managedObjectKind(parts[0]) {
		// A Secret, ConfigMap or certificate is rarely wrong on its own:
		// whatever owns or manages it (an ExternalSecret, a Certificate,
		// an operator's custom resource) holds the settings that made it
		// so. Describing it brings its managers along.
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": parts[0], "name": parts[2], "namespace": parts[1]}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "pod", "service":
	default:
		return out
	}
	name := parts[len(parts)-1]
	seen := map[string]bool{}
	for _, p := range st.pods() {
		if p.Name != name && p.Workload != name && !strings.HasPrefix(p.Name, name+"-") {
			continue
		}
		for _, c := range p.Containers {
			for _, cm := range c.ConfigMaps {
				key := p.Namespace + "/" + cm
				if seen[key] || len(out) >= maxConfigFollowUps {
					continue
				}
				seen[key] = true
				call := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": cm, "namespace": p.Namespace}, Origin: originExpand}
				if !st.ranEquivalent(call) {
					out = append(out, call)
				}
			}
		}
	}
	return out
}

const intentDescribe = string(intent.DescribeResource)

// managedObjectKind: kinds of objects that hold configuration or
// credentials and are usually produced by something else (a controller's
// custom resource, an owner).
func managedObjectKind(kind string) bool {
	k := strings.ToLower(kind)
	switch k {
	case "secret", "configmap", "certificate", "certificaterequest":
		return true
	}
	return strings.Contains(k, "secret") || strings.Contains(k, "certificate")
}

const (
	intentSearchLogs = string(intent.SearchLogs)
	intentPodLogs    = string(intent.FetchPodLogs)
	// The cluster DNS server of Kubernetes (CoreDNS, deployed as kube-dns
	// compatible "coredns" in kube-system by kubeadm, EKS, GKE and AKS).
	dnsNamespace = "kube-system"
	dnsWorkload  = "coredns"
)

// clusterDNSName: the hypothesis entity is a Service reached by its cluster
// DNS name (service/<ns>/<name>, from <name>.<ns>.svc...).
func clusterDNSName(ent string) bool {
	return strings.HasPrefix(ent, "service/") && strings.Count(ent, "/") == 2
}

// droppedConnRe: connection errors of dropped packets (a timeout while
// dialing), as opposed to refusals from a listening peer.
var droppedConnRe = regexp.MustCompile(`(?i)(i/o timeout|dial tcp[^']{0,80}timeout|connect(ion)? timed? ?out|etimedout)`)
