package brain

import (
	"context"
	"sort"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// toolDefs returns the tool registry (cached for a minute).
func (s *Service) toolDefs(ctx context.Context, sid string) map[string]*evidencev1.ToolDefinition {
	s.defsMu.Lock()
	if s.defs != nil && s.now().Sub(s.defsAt) < time.Minute {
		d := s.defs
		s.defsMu.Unlock()
		return d
	}
	s.defsMu.Unlock()
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	defs, err := mesh.ToolDefinitions(cctx, s.clients.Tools, sid)
	if err != nil {
		s.log.WarnContext(ctx, "tool definitions unavailable; calls carry only context", "err", err)
		return nil
	}
	m := make(map[string]*evidencev1.ToolDefinition, len(defs))
	for _, d := range defs {
		m[d.GetIntent()] = d
	}
	s.defsMu.Lock()
	s.defs, s.defsAt = m, s.now()
	s.defsMu.Unlock()
	return m
}

// inferParams fills the parameters of a requested intent from the alert and
// the evidence; parameters with a context default are left to the tools
// service, which fills them from the RouterContext.
func (s *Service) inferParams(ctx context.Context, st *invState, intent string) map[string]any {
	params := map[string]any{}
	def := s.toolDefs(ctx, st.rec.GetSessionId())[intent]
	if def == nil {
		return params
	}
	vals := st.candidates()
	for _, p := range def.GetParamsSchema() {
		if f := p.GetDefaultFromContext(); f != "" && mesh.ContextValue(st.rc, f) != "" {
			continue
		}
		name := strings.ToLower(p.GetName())
		switch p.GetType() {
		case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
			if name == "previous" && vals["_restarted"] == "true" {
				params[p.GetName()] = true
			}
			continue
		case evidencev1.ParamType_PARAM_TYPE_NUMBER:
			continue
		}
		v := vals[name]
		if nodeTool(intent) && (name == "name" || name == "resource_name") {
			// A node tool's "name" is a node: the alert's pod or service
			// name would match nothing; empty lists every node.
			v = vals["node"]
		}
		if v == "" && (name == "query" || name == "pattern" || name == "q") && logTool(def) {
			// A log search scoped to the alert's service or pod: every line,
			// errors first, unless the alert names its error; unscoped, errors.
			switch {
			case vals["_symptom"] != "":
				v = vals["_symptom"]
			case vals["service"] != "" || vals["pod"] != "":
				v = "*"
			case p.GetRequired():
				v = "error"
			}
		}
		if v == "" && p.GetRequired() && (name == "query" || name == "pattern" || name == "q") {
			v = firstNonEmpty(vals["_symptom"], "error")
		}
		if v == "" {
			continue
		}
		if opts := p.GetOptions(); len(opts) > 0 && p.GetType() == evidencev1.ParamType_PARAM_TYPE_SELECT {
			ok := false
			for _, o := range opts {
				if strings.EqualFold(o, v) {
					v, ok = o, true
					break
				}
			}
			if !ok {
				continue
			}
		}
		params[p.GetName()] = v
	}
	return params
}

// nodeTool: the intent inspects Kubernetes nodes.
func nodeTool(intent string) bool { return strings.Contains(intent, "node") }

// logTool: the tool searches logs.
func logTool(def *evidencev1.ToolDefinition) bool {
	return def.GetCategory() == evidencev1.ToolCategory_TOOL_CATEGORY_LOGS
}

// candidates are parameter values inferred from the alert and the pins,
// kept while the pins are the same input (a round infers parameters for
// many intents; the map is read-only for callers).
func (st *invState) candidates() map[string]string {
	if c := st.cands; c != nil && c.rev == st.pinsRev && c.alert == st.rec.GetAlert() {
		return c.vals
	}
	v := st.inferCandidates()
	st.cands = &candidateValues{rev: st.pinsRev, alert: st.rec.GetAlert(), vals: v}
	return v
}

// candidateValues are candidates at one pins revision.
type candidateValues struct {
	rev   uint64
	alert *investigationv1.Alert
	vals  map[string]string
}

func (st *invState) inferCandidates() map[string]string {
	a := st.rec.GetAlert()
	v := map[string]string{
		"namespace": a.GetNamespace(), "service": a.GetService(), "app": a.GetService(), "cluster": a.GetCluster(),
	}
	pod, restarted := st.bestPod()
	v["pod"], v["pod_name"] = pod, pod
	if pod == "" && a.GetService() != "" {
		// No pod in evidence yet: the workload's pods by name prefix.
		v["pod"] = strings.TrimSuffix(a.GetService(), "-") + "-*"
	}
	if restarted {
		v["_restarted"] = "true"
	}
	kind, name := a.GetResourceKind(), a.GetResourceName()
	if kind == "" && pod != "" {
		kind, name = "pod", pod
	}
	v["kind"], v["resource_kind"] = kind, kind
	v["name"], v["resource_name"], v["resource"] = name, name, name
	workload := firstNonEmpty(a.GetLabels()["workload_name"], a.GetLabels()["deployment"], a.GetLabels()["kube_deployment"], a.GetService())
	v["deployment"], v["workload"] = workload, workload
	switch kind {
	case "node":
		v["node"], v["node_name"] = name, name
	case "db_instance":
		v["db_instance"], v["instance"], v["db_instance_identifier"], v["db"] = name, name, name, name
	}
	if v["node"] == "" {
		v["node"] = st.podNode(pod)
		v["node_name"] = v["node"]
	}
	v["_symptom"] = firstNonEmpty(a.GetErrorMessage(), "")
	return v
}

// bestPod picks the pod to look at: the alert's, else the unhealthiest pod of
// the alerting service seen in the evidence.
func (st *invState) bestPod() (string, bool) {
	a := st.rec.GetAlert()
	pods := st.pods()
	if a.GetPod() != "" {
		for _, p := range pods {
			if p.Name == a.GetPod() {
				return p.Name, p.Restarts > 0
			}
		}
		return a.GetPod(), false
	}
	type scored struct {
		p     facts.Pod
		score int
	}
	var cands []scored
	for _, p := range pods {
		if a.GetNamespace() != "" && p.Namespace != "" && p.Namespace != a.GetNamespace() {
			continue
		}
		sc := 0
		if !p.Ready {
			sc += 4
		}
		if p.Reason != "" || p.OOMKilled {
			sc += 3
		}
		sc += int(min(p.Restarts, 5))
		if a.GetService() != "" && (p.Workload == a.GetService() || strings.HasPrefix(p.Name, a.GetService())) {
			sc += 2
		} else if r := a.GetResourceName(); r != "" && (p.Workload == r || strings.HasPrefix(p.Name, r+"-")) {
			sc += 2 // the resource the alert names (Alerta's resource, under a platform-level service)
		}
		if sc > 0 {
			cands = append(cands, scored{p, sc})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	return cands[0].p.Name, cands[0].p.Restarts > 0
}

func (st *invState) podNode(pod string) string {
	if pod == "" {
		return ""
	}
	for _, p := range st.pods() {
		if p.Name == pod {
			return p.Node
		}
	}
	return ""
}

func (st *invState) pods() []facts.Pod {
	var out []facts.Pod
	for _, pin := range st.pins {
		var ps []facts.Pod
		if ok, err := facts.Decode(pin.GetMetadata(), facts.KeyPods, &ps); ok && err == nil {
			out = append(out, ps...)
		}
	}
	return out
}
