package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A signal extractor for settings: a bound (a lifetime, a timeout, a
// limit, a retention, an interval, a rotation) set to a value that means
// "never" or "nothing" (0, -1, false, off, unlimited, none). Such values
// are how a cache comes to keep an address forever, a connection never to
// be recycled or a key never to be renewed: the setting an SRE checks
// first when something that should change did not. The report quotes them
// (observations, each citing its object); they vote for nothing.

// reBoundKey: the key of a setting that bounds something.
var reBoundKey = regexp.MustCompile(`(?i)(ttl|timeout|age|limit|max|min|retention|interval|expir|rotat|renew|refresh|cache|hours|seconds|minutes|_ms\b|ms$|period|deadline|grace|backoff|retries)`)

// reExtremeSetting: key, separator and an extreme value, in a config
// line, an env var, a -D flag or a YAML/properties entry.
var reExtremeSetting = regexp.MustCompile(`(?i)(?:^|[\s"'{,(=])(?:-D|--?)?([A-Za-z_][\w.\-]{2,80})["']?\s*(?:[:=]|\s)\s*["']?(-1|0|0s|0ms|false|off|unlimited|none|never|infinite|infinity|disabled)["']?(?:\s|$|[,;#})])`)

// maxExtremeSettings bounds the settings quoted.
const maxExtremeSettings = 3

// extremeSettings are the bound settings at a "never"/"nothing" value in
// the ConfigMaps and container settings of evidence, those of the
// diagnosis's objects first; at most maxExtremeSettings.
func (ev *Evidence) extremeSettings(known string) []settingRef {
	type hit struct {
		settingRef
		named bool
	}
	var out []hit
	seen := map[string]bool{}
	add := func(where, line string, c Cite, named bool) {
		for _, m := range reExtremeSetting.FindAllStringSubmatch(line, 4) {
			key, val := m[1], m[2]
			if !reBoundKey.MatchString(key) {
				continue
			}
			st := key + "=" + val
			if seen[strings.ToLower(st)] || strings.Contains(known, strings.ToLower(key)) {
				continue
			}
			seen[strings.ToLower(st)] = true
			out = append(out, hit{settingRef{fmt.Sprintf("Setting at a never/nothing value: %s sets %s (%s)", where, st, quote(clip(strings.TrimSpace(line), 120))), c}, named})
		}
	}
	for _, r := range ev.Resources {
		named := strings.Contains(known, strings.ToLower(r.Name))
		for _, line := range dataLines(r) {
			add(fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name), line, r.Cite, named)
		}
	}
	for _, p := range ev.Pods {
		wl := firstNonEmptyStr(p.Workload, p.Name)
		named := strings.Contains(known, strings.ToLower(wl))
		for _, c := range p.Containers {
			for _, st := range c.Settings {
				add(fmt.Sprintf("%s container %s", wl, c.Name), st, p.Cite, named)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b hit) int {
		switch {
		case a.named && !b.named:
			return -1
		case b.named && !a.named:
			return 1
		}
		return 0
	})
	var refs []settingRef
	for _, h := range out[:min(maxExtremeSettings, len(out))] {
		refs = append(refs, h.settingRef)
	}
	return refs
}
