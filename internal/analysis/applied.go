package analysis

import (
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Object changes a deployer announces in its log. kubectl apply, Argo CD,
// Flux and Helm report what they did to each object in the same
// vocabulary: the object ("Ingress shop/web", "ingress.networking.k8s.io/web",
// "configmap/flags") and the verb ("configured", "created", "deleted").
// Such a line is a row of the change ledger like an edit read from the
// object itself: its kind and name are the changed entity, its time the
// change's time.

// reAppliedObject: an object reference, kind (optionally with its API
// group) then "namespace/name" or "name", followed by an apply verb.
var reAppliedObject = regexp.MustCompile(`(?i)\b([a-z]+)((?:\.[a-z0-9-]+)+)?([ /])([a-z0-9][a-z0-9.-]*(?:/[a-z0-9][a-z0-9.-]*)?)\s+(configured|created|deleted|pruned|patched|updated|synced)\b`)

// appliedKinds maps the words a deployer uses for an object's kind (the
// kind, its resource plural, its short name) to the kind.
var appliedKinds = func() map[string]string {
	m := map[string]string{}
	for _, k := range []struct {
		kind  string
		words []string
	}{
		{"Ingress", []string{"ingress", "ingresses", "ing"}},
		{"Service", []string{"service", "services", "svc"}},
		{"ConfigMap", []string{"configmap", "configmaps", "cm"}},
		{"Secret", []string{"secret", "secrets"}},
		{"Deployment", []string{"deployment", "deployments", "deploy"}},
		{"StatefulSet", []string{"statefulset", "statefulsets", "sts"}},
		{"DaemonSet", []string{"daemonset", "daemonsets", "ds"}},
		{"CronJob", []string{"cronjob", "cronjobs", "cj"}},
		{"Job", []string{"job", "jobs"}},
		{"NetworkPolicy", []string{"networkpolicy", "networkpolicies", "netpol"}},
		{"HorizontalPodAutoscaler", []string{"horizontalpodautoscaler", "horizontalpodautoscalers", "hpa"}},
		{"PodDisruptionBudget", []string{"poddisruptionbudget", "poddisruptionbudgets", "pdb"}},
		{"HTTPRoute", []string{"httproute", "httproutes"}},
		{"Gateway", []string{"gateway", "gateways"}},
		{"VirtualService", []string{"virtualservice", "virtualservices"}},
		{"DestinationRule", []string{"destinationrule", "destinationrules"}},
		{"ServiceAccount", []string{"serviceaccount", "serviceaccounts", "sa"}},
		{"Role", []string{"role", "roles"}},
		{"RoleBinding", []string{"rolebinding", "rolebindings"}},
		{"Certificate", []string{"certificate", "certificates"}},
		{"Issuer", []string{"issuer", "issuers", "clusterissuer", "clusterissuers"}},
		{"ScaledObject", []string{"scaledobject", "scaledobjects"}},
		{"ResourceQuota", []string{"resourcequota", "resourcequotas", "quota"}},
		{"LimitRange", []string{"limitrange", "limitranges"}},
		{"PriorityClass", []string{"priorityclass", "priorityclasses"}},
		{"PersistentVolumeClaim", []string{"persistentvolumeclaim", "persistentvolumeclaims", "pvc"}},
		{"StorageClass", []string{"storageclass", "storageclasses"}},
		{"IngressClass", []string{"ingressclass", "ingressclasses"}},
	} {
		for _, w := range k.words {
			m[w] = k.kind
		}
	}
	return m
}()

// appliedChanges are the object changes deployers announce in the log
// lines of the evidence (not errors), as ObjectChange rows: the kind and
// name from the reference, the namespace from it or from the line, the
// changed fields a line names (an image, replicas) so the change is
// classified like an edit read from the object.
func (ev *Evidence) appliedChanges() []ObjectChange {
	var out []ObjectChange
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) {
			continue
		}
		for _, m := range reAppliedObject.FindAllStringSubmatch(l.Message, -1) {
			kind, ok := ev.appliedKind(m[1], m[2] != "", m[3] == "/" && strings.Contains(m[4], "/"))
			if !ok {
				continue
			}
			ns, name := "", strings.ToLower(m[4])
			if a, b, two := strings.Cut(name, "/"); two {
				ns, name = a, b
			} else {
				// No namespace in the reference: the deployer runs in a
				// namespace of its own; the object lives where the
				// evidence has it (or a workload of its name), else in the
				// line's namespace.
				ns = firstNonEmptyStr(ev.namespaceOfNamed(kind, name), l.Namespace)
			}
			key := kind + "/" + ns + "/" + name + "@" + l.Timestamp.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			var fields []string
			low := strings.ToLower(l.Message)
			switch {
			case strings.Contains(low, "image"):
				fields = append(fields, "spec.template.spec.containers.image")
			case strings.Contains(low, "replicas"):
				fields = append(fields, "spec.replicas")
			}
			action := "edited"
			if v := strings.ToLower(m[5]); v == "created" || v == "deleted" || v == "pruned" {
				action = v
			}
			out = append(out, ObjectChange{ObjectChange: facts.ObjectChange{
				Kind: kind, Namespace: ns, Name: name, At: l.Timestamp, Action: action,
				Manager: logOrigin(l), Fields: fields, Note: clip(l.Message, 240),
			}, Cite: l.Cite})
		}
	}
	return out
}

// appliedKind is the kind a deployer's word names: a kind of the table
// above; else any kind of object the evidence holds (custom resources:
// a mesh's policies, an operator's topics), by its kind or its plural;
// else a word written as a kind in the "Kind/namespace/name" form Argo CD
// prints (capitalised, then a namespaced reference: slashed) or as a
// resource with its API group ("sidecar.networking.istio.io/default"),
// kept as written.
func (ev *Evidence) appliedKind(word string, grouped, slashed bool) (string, bool) {
	low := strings.ToLower(word)
	if k, ok := appliedKinds[low]; ok {
		return k, true
	}
	for _, r := range ev.Resources {
		if k := strings.ToLower(r.Kind); k != "" && (k == low || k+"s" == low || k+"es" == low) {
			return r.Kind, true
		}
	}
	if len(word) < 3 {
		return "", false
	}
	if grouped {
		return word, true
	}
	if !slashed {
		return "", false
	}
	if word[0] >= 'A' && word[0] <= 'Z' && strings.ToLower(word[1:]) == word[1:] || isCamelKind(word) {
		return word, true
	}
	return "", false
}

// isCamelKind: a CamelCase word of two or more capitalised parts
// ("PeerAuthentication"), how Kubernetes kinds are spelt.
func isCamelKind(w string) bool {
	if w == "" || w[0] < 'A' || w[0] > 'Z' {
		return false
	}
	uppers := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'A' && c <= 'Z':
			uppers++
		case c >= 'a' && c <= 'z':
		default:
			return false
		}
	}
	return uppers >= 2 && uppers < len(w)/2+1
}

// namespaceOfNamed is the namespace of an object of kind called name in
// the evidence, else of a workload or Service of that name (objects named
// after the workload they serve: its autoscaler, its routes), "" when the
// evidence has neither or several namespaces hold one.
func (ev *Evidence) namespaceOfNamed(kind, name string) string {
	pick := func(nss []string) string {
		if len(nss) == 1 {
			return nss[0]
		}
		return ""
	}
	var same, named []string
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Name, name) || r.Namespace == "" {
			continue
		}
		if strings.EqualFold(r.Kind, kind) {
			same = appendUnique(same, r.Namespace)
		} else {
			named = appendUnique(named, r.Namespace)
		}
	}
	if ns := pick(same); ns != "" {
		return ns
	}
	for _, d := range ev.Deployments {
		if strings.EqualFold(d.Name, name) && d.Namespace != "" {
			named = appendUnique(named, d.Namespace)
		}
	}
	for _, p := range ev.Pods {
		if p.Namespace != "" && strings.EqualFold(ev.workloadOf(p.Pod), name) {
			named = appendUnique(named, p.Namespace)
		}
	}
	return pick(named)
}
