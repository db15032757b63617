package tools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// lastAppliedKey is the annotation kubectl apply keeps: the object as it
// was last applied, the baseline an edit (kubectl edit, a console, a
// hot-fix) departs from.
const lastAppliedKey = "kubectl.kubernetes.io/last-applied-configuration"

// reSetting finds "key = value" and "key: value" settings inside a value
// that is a whole configuration file (postgresql.conf, an application
// YAML, a properties file).
var reSetting = regexp.MustCompile(`(?m)([A-Za-z_][\w.\-]*)\s*[=:]\s*("[^"\n]*"|'[^'\n]*'|[^\s,;#]+)`)

// appliedDiff compares an object with its last-applied configuration and
// names what an edit changed: "path: old -> new" for every value the last
// apply set that differs now, and, inside values that are configuration
// files, the settings whose values differ. Secrets are never compared (the
// values are the secret). Nil when the object carries no last-applied
// configuration or nothing it set differs.
func appliedDiff(kind string, obj map[string]any) []string {
	if strings.EqualFold(kind, "Secret") || obj == nil {
		return nil
	}
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	raw, _ := ann[lastAppliedKey].(string)
	if raw == "" {
		return nil
	}
	var applied map[string]any
	if err := json.Unmarshal([]byte(raw), &applied); err != nil {
		return nil
	}
	var out []string
	for _, top := range []string{"data", "spec"} {
		was, ok := applied[top]
		if !ok {
			continue
		}
		out = append(out, diffValues(top, was, obj[top])...)
	}
	sort.Strings(out)
	return out
}

func diffValues(path string, was, now any) []string {
	switch w := was.(type) {
	case map[string]any:
		n, _ := now.(map[string]any)
		var out []string
		for k, v := range w {
			nv, ok := n[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: removed", path, k))
				continue
			}
			out = append(out, diffValues(path+"."+k, v, nv)...)
		}
		return out
	case []any:
		n, _ := now.([]any)
		var out []string
		for i, v := range w {
			if i >= len(n) {
				out = append(out, fmt.Sprintf("%s[%d]: removed", path, i))
				continue
			}
			out = append(out, diffValues(fmt.Sprintf("%s[%d]", path, i), v, n[i])...)
		}
		return out
	}
	ws, ns := fmt.Sprint(was), fmt.Sprint(now)
	if ws == ns {
		return nil
	}
	if strings.Contains(ws, "\n") || strings.Contains(ns, "\n") || len(reSetting.FindAllString(ws, 2)) > 1 {
		// A configuration file: the settings both versions have, whose
		// values differ.
		if d := settingDiff(ws, ns); len(d) > 0 {
			out := make([]string, len(d))
			for i, s := range d {
				out[i] = path + ": " + s
			}
			return out
		}
	}
	return []string{fmt.Sprintf("%s: %s -> %s", path, clipValue(ws), clipValue(ns))}
}

func settingDiff(was, now string) []string {
	settings := func(text string) map[string]string {
		m := map[string]string{}
		for _, g := range reSetting.FindAllStringSubmatch(text, -1) {
			m[g[1]] = strings.Trim(g[2], `"'`)
		}
		return m
	}
	w, n := settings(was), settings(now)
	var out []string
	for k, v := range w {
		if nv, ok := n[k]; ok && nv != v {
			out = append(out, fmt.Sprintf("%s %s -> %s", k, clipValue(v), clipValue(nv)))
		}
	}
	sort.Strings(out)
	return out
}

func clipValue(s string) string { return textutil.TruncateEllipsis(strings.TrimSpace(s), 60) }

// addAppliedDiff names, on the edit rows of chs, what the edit changed
// against the last-applied configuration.
func addAppliedDiff(chs []facts.ObjectChange, kind string, obj map[string]any) {
	var diff []string
	for i := range chs {
		if chs[i].Action != "edited" {
			continue
		}
		if diff == nil {
			diff = appliedDiff(kind, obj)
			if len(diff) == 0 {
				return
			}
		}
		fields := append([]string(nil), diff...)
		if len(fields) > maxChangeFields {
			fields = append(fields[:maxChangeFields], fmt.Sprintf("+%d more", len(fields)-maxChangeFields))
		}
		chs[i].Fields = fields
	}
}
