package intake

import (
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/target"
)

// Alertmanager's default text templates (the PagerDuty, Opsgenie and
// e-mail receivers' "details"/"description") render an alert's labels and
// annotations as sections of "key = value" lines:
//
//	Labels:
//	 - alertname = KubeDeploymentRolloutStuck
//	 - namespace = shop
//	Annotations:
//	 - summary = Rollout is not progressing
//	Source: http://prometheus/graph...
//
// A payload that forwards such a text carries the source alert's labels only
// inside it; textBlock reads them back so target resolution sees the same
// labels as a webhook that sends them as an object.

// maxBlockText bounds how much of one text is read for a label block.
const maxBlockText = 64 << 10

// textBlock returns the labels and annotations of every "Labels:" and
// "Annotations:" section of text. Lines are "key = value", "- key = value"
// or "key: value" inside a section; a line that is neither ends it. The
// first value of a key wins (a text listing several alerts names the first
// alert's labels first).
func textBlock(text string) (labels, annotations map[string]string) {
	if len(text) > maxBlockText {
		text = text[:maxBlockText]
	}
	labels, annotations = map[string]string{}, map[string]string{}
	var cur map[string]string
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if m, rest, ok := inlineSection(line, labels, annotations); ok {
			// "Labels: alertname=X, severity=critical" on one line (a
			// chat notification's compact template).
			for _, p := range strings.Split(rest, ",") {
				if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && k != "" && !strings.ContainsAny(k, " \t") && strings.TrimSpace(v) != "" {
					setMissing(m, strings.TrimSpace(k), strings.TrimSpace(v))
				}
			}
			cur = nil
			continue
		}
		switch strings.ToLower(strings.TrimRight(line, ": ")) {
		case "labels", "common labels", "group labels":
			cur = labels
			continue
		case "annotations", "common annotations":
			cur = annotations
			continue
		}
		if cur == nil {
			// Outside a section, a "Key: value" line whose key names an
			// entity (a chat card's "**Namespace:** shop", an e-mail's
			// "Service: checkout") is a label too.
			if k, v, ok := proseEntityPair(line); ok {
				setMissing(labels, k, v)
			}
			continue
		}
		k, v, ok := blockPair(line)
		if !ok {
			cur = nil
			continue
		}
		setMissing(cur, k, v)
	}
	return labels, annotations
}

// proseEntityPair reads a "Key: value" line of prose whose key (markdown
// emphasis stripped) names an entity kind and whose value is one token;
// the key is returned folded.
func proseEntityPair(line string) (string, string, bool) {
	line = strings.NewReplacer("**", "", "__", "", "`", "").Replace(line)
	k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimLeft(line, "-*•> ")), ":")
	if !ok {
		return "", "", false
	}
	k, v = strings.Trim(strings.TrimSpace(k), "*_"), strings.Trim(strings.TrimSpace(v), "*_\"'")
	if target.KindOf(k) == "" || v == "" || strings.ContainsAny(v, " \t") || strings.Contains(v, "://") {
		return "", "", false
	}
	return target.Fold(k), v, true
}

// blockPair reads one "- key = value" (or "key: value") line of a section.
func blockPair(line string) (string, string, bool) {
	line = strings.TrimSpace(strings.TrimLeft(line, "-*• "))
	if line == "" {
		return "", "", false
	}
	sep := strings.Index(line, "=")
	if c := strings.Index(line, ":"); sep < 0 || (c >= 0 && c < sep) {
		sep = c
	}
	if sep <= 0 {
		return "", "", false
	}
	k := strings.TrimSpace(line[:sep])
	v := strings.Trim(strings.TrimSpace(line[sep+1:]), `"'`)
	if !labelKey(k) || v == "" {
		return "", "", false
	}
	return k, v, true
}

// labelKey: a Prometheus label name (letters, digits, underscores, not
// starting with a digit), with the dots and dashes other systems' tag keys
// use.
func labelKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_' || r == '.' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// mergeTextBlocks moves multi-line values out of labels (a label is one
// line; a multi-line value is a forwarded text) into the annotations, and
// merges the labels and annotations written inside every text of the alert
// where the alert does not already carry them.
func mergeTextBlocks(labels, annotations map[string]string, texts ...string) {
	for k, v := range labels {
		if strings.Contains(v, "\n") {
			delete(labels, k)
			setMissing(annotations, k, v)
		}
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := annotations[k]; strings.Contains(v, "\n") {
			texts = append(texts, v)
		}
	}
	for _, t := range texts {
		if !strings.Contains(t, "\n") {
			continue
		}
		l, a := textBlock(t)
		mergeMissing(labels, l)
		mergeMissing(annotations, a)
	}
}

// describedText is the description of an alert whose text forwards
// label/annotation sections: the description or summary its sections name,
// with the whole text kept as the "details" annotation; a text without
// sections is its own description.
func describedText(text string, annotations map[string]string) string {
	if !strings.Contains(text, "\n") {
		return text
	}
	l, a := textBlock(text)
	if len(l) == 0 && len(a) == 0 {
		return text
	}
	setMissing(annotations, "details", text)
	if d := firstNonEmpty(a["description"], a["summary"], a["message"]); d != "" {
		return d
	}
	return ""
}

// headline is the first line of a text with its markdown emphasis and
// heading marks removed: a chat card's or e-mail's first line is its
// title.
func headline(text string) string {
	for _, l := range strings.Split(text, "\n") {
		l = strings.NewReplacer("**", "", "__", "", "`", "").Replace(l)
		if l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#>*-• ")); l != "" {
			return l
		}
	}
	return ""
}

// inlineSection: line is a section header with its pairs on the same line
// ("Labels: a=b, c=d"); m is the section's map and rest the pairs.
func inlineSection(line string, labels, annotations map[string]string) (m map[string]string, rest string, ok bool) {
	head, rest, found := strings.Cut(line, ":")
	if !found || !strings.Contains(rest, "=") {
		return nil, "", false
	}
	switch strings.ToLower(strings.TrimSpace(head)) {
	case "labels", "common labels", "group labels":
		return labels, rest, true
	case "annotations", "common annotations":
		return annotations, rest, true
	}
	return nil, "", false
}
