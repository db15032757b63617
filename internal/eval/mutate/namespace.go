package mutate

import (
	"regexp"
	"sort"
	"strings"
)

// namespaceKeys are the keys that name a Kubernetes namespace in any alert
// format (Prometheus, kube-state-metrics, Datadog, OpenTelemetry, old
// relabelling examples). Compared after folding case and `.`, `-`, `/` to `_`.
var namespaceKeys = map[string]bool{
	"namespace": true, "kube_namespace": true, "k8s_namespace": true, "k8s_namespace_name": true,
	"exported_namespace": true, "kubernetes_namespace": true, "kubernetes_namespace_name": true,
	"kube_namespace_name": true, "ns": true,
}

func isNamespaceKey(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	k = strings.NewReplacer(".", "_", "-", "_", "/", "_").Replace(k)
	k = strings.TrimPrefix(k, "var_") // a Grafana dashboard variable
	return namespaceKeys[k]
}

// dropNamespace removes the namespace from an alert payload: every
// namespace-like key of every object, Datadog "k:v" tags and scopes,
// label matchers and label-list lines naming it, and the namespace part of
// texts ("ns/name", "namespace ns", "svc.ns.svc.cluster.local", URL query
// parameters). The evidence is not touched.
func dropNamespace(b []byte) ([]byte, error) {
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	values := map[string]bool{}
	collectNamespaces(doc, "", values)
	ns := make([]string, 0, len(values))
	for v := range values {
		ns = append(ns, v)
	}
	sort.Slice(ns, func(i, j int) bool { return len(ns[i]) > len(ns[j]) || len(ns[i]) == len(ns[j]) && ns[i] < ns[j] })
	doc = walkAlert(doc, "", func(_ string, m map[string]any) {
		for k := range m {
			if isNamespaceKey(k) {
				delete(m, k)
			}
		}
	}, func(key, s string) string {
		if tagKeys[key] {
			s = dropNamespaceTags(s)
		}
		for _, n := range ns {
			s = stripNamespaceText(s, n)
		}
		return s
	})
	doc = dropNamespaceURLParams(doc)
	return encodeJSON(doc, true)
}

// collectNamespaces gathers the values of namespace-like keys and tags.
func collectNamespaces(v any, key string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && isNamespaceKey(k) && strings.TrimSpace(s) != "" {
				out[strings.TrimSpace(s)] = true
			}
			collectNamespaces(c, k, out)
		}
	case []any:
		for _, c := range x {
			collectNamespaces(c, key, out)
		}
	case string:
		if tagKeys[key] {
			for _, t := range tagItems(x) {
				if k, val, ok := strings.Cut(t, ":"); ok && isNamespaceKey(k) && strings.TrimSpace(val) != "" {
					out[strings.TrimSpace(val)] = true
				}
			}
		}
		for _, m := range reMatcher.FindAllStringSubmatch(x, -1) {
			if isNamespaceKey(m[2]) && m[7] != "" {
				out[m[7]] = true
			}
		}
	}
}

func dropNamespaceTags(s string) string {
	parts := strings.Split(s, ",")
	kept := parts[:0]
	for _, p := range parts {
		if k, _, ok := strings.Cut(p, ":"); ok && isNamespaceKey(k) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ",")
}

// stripNamespaceText removes the namespace ns from one text.
func stripNamespaceText(s, ns string) string {
	orig := s
	q := regexp.QuoteMeta(ns)
	// A "Labels:" list line: " - namespace = shop".
	s = regexp.MustCompile(`(?m)^[ \t]*-[ \t]*[A-Za-z_.\-]*namespace[A-Za-z_]*[ \t]*=[ \t]*`+q+`[ \t]*\r?\n?`).ReplaceAllString(s, "")
	// Label matchers and pairs: namespace="shop", kube_namespace:shop (with a comma on either side).
	s = replaceSubmatches(s, regexp.MustCompile(`(,?\s*)([A-Za-z_][A-Za-z0-9_.\-]*)(\s*)(=~|=|:)(\s*)(["'\x60]?)`+q+`(["'\x60]?)(\s*,?)`),
		func(m []string, start int, full string) string {
			if !isNamespaceKey(m[2]) || m[6] != m[7] {
				return m[0]
			}
			if start > 0 && m[1] == "" && (isNameByte(full[start-1]) || full[start-1] == '-' || full[start-1] == '.') {
				return m[0] // part of a longer key
			}
			if end := start + len(m[0]) - len(m[8]) - len(m[7]); m[7] == "" && end < len(full) && continuesName(full[end]) {
				return m[0] // a longer value ("shop-eu" when the namespace is "shop")
			}
			// Keep one separator when the pair sat between two others.
			if strings.Contains(m[1], ",") && strings.Contains(m[8], ",") {
				return ","
			}
			if strings.Contains(m[1], ",") || strings.Contains(m[8], ",") {
				return ""
			}
			return strings.TrimRight(m[1], " ")
		})
	// In-cluster host names: svc.shop.svc.cluster.local -> svc.
	s = regexp.MustCompile(`\b([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)\.`+q+`\.svc(?:\.cluster\.local)?\b`).ReplaceAllString(s, "$1")
	// "namespace shop", "namespace: shop", "in namespace 'shop'", "the shop namespace".
	s = regexp.MustCompile(`(?i)\b(?:in\s+)?(?:the\s+)?(?:namespace|ns)\s*[:=]?\s*(?:["'\x60]`+q+`["'\x60]|`+q+`\b)`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`(?i)(?:\bin\s+)?(?:\bthe\s+)?(?:["'\x60]`+q+`["'\x60]|\b`+q+`)\s+namespace\b`).ReplaceAllString(s, "")
	// "shop/checkout" (namespace/name) -> "checkout".
	s = replaceSubmatches(s, regexp.MustCompile(q+`/`), func(m []string, start int, full string) string {
		if start > 0 && continuesName(full[start-1]) {
			return m[0]
		}
		return ""
	})
	if s != orig {
		s = reSpaces.ReplaceAllString(s, " ")
		s = strings.ReplaceAll(s, " ,", ",")
	}
	return s
}

var reSpaces = regexp.MustCompile(`[ \t]{2,}`)

// continuesName: a character that glues to a name on either side.
func continuesName(c byte) bool { return isNameByte(c) || c == '-' || c == '.' }

// dropNamespaceURLParams removes namespace-like query parameters
// (var-namespace=shop) from every URL of the payload.
func dropNamespaceURLParams(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			x[k] = dropNamespaceURLParams(c)
		}
	case []any:
		for i, c := range x {
			x[i] = dropNamespaceURLParams(c)
		}
	case string:
		return dropURLParams(x)
	}
	return v
}

func dropURLParams(s string) string {
	if !(strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) || strings.ContainsAny(s, " \n") {
		return s
	}
	base, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	params := strings.Split(query, "&")
	kept := params[:0]
	for _, p := range params {
		k, _, _ := strings.Cut(p, "=")
		if isNamespaceKey(k) {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(params) {
		return s
	}
	if len(kept) == 0 {
		return base
	}
	return base + "?" + strings.Join(kept, "&")
}
