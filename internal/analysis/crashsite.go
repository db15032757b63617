package analysis

import (
	"fmt"
	"regexp"
	"strings"
)

// A signal extractor: where a crash happened in the program's own code.
// After a runtime's crash header (a Go panic, a Java exception, a Python
// traceback, a Node error) come the stack frames; the first frame outside
// the runtime's and the dependencies' code is the crash site, the line an
// SRE opens first and the file a commit that caused it touched.

var (
	// reFrame matches one stack frame and captures its file:line: Go
	// ("\t/src/pkg/x.go:88 +0x1d4"), Java and Kotlin ("at a.b.C.m(C.java:42)"),
	// Python ('File "/app/x.py", line 42, in f'), Node ("at f (/app/x.js:4:2)").
	reFrame = regexp.MustCompile(`^\s*(?:at\s+[\w$.<>]+\(([\w$]+\.(?:java|kt|scala|groovy):\d+)\)|File "([^"]+)", line (\d+)(?:, in \S+)?|at\s+(?:[\w$.<>\[\] ]+\s+\()?([^\s()]+\.(?:js|mjs|cjs|ts):\d+)(?::\d+)?\)?|(/\S+\.go:\d+)(?:\s+\+0x[0-9a-f]+)?)\s*$`)
	// reRuntimeFrame: frames of a language runtime, its standard library
	// or installed dependencies, never the program's own.
	reRuntimeFrame = regexp.MustCompile(`(?:^|/)(?:usr/local/go/src|go/src/runtime|go/pkg/mod|site-packages|dist-packages|lib/python\d|node_modules|internal/(?:modules|process|timers))/|^(?:java|javax|jdk|sun|kotlin|scala)\.|^node:`)
	// reFrameFunc: a Go frame's function line ("pkg.(*T).Method(0xc...)").
	reFrameFunc = regexp.MustCompile(`^([\w./*()-]+)\(`)
)

// crashSite is the first frame of the program's own code after a crash
// header.
type crashSite struct {
	header, site, function, pod string
	cite                        Cite
}

// crashSites are the distinct crash sites in the logs, one per site.
func (ev *Evidence) crashSites() []crashSite {
	var out []crashSite
	seen := map[string]bool{}
	byPod := map[string][]LogLine{}
	var order []string
	for _, l := range ev.Logs {
		k := l.Pod + "|" + l.LogLine.Source
		if _, ok := byPod[k]; !ok {
			order = append(order, k)
		}
		byPod[k] = append(byPod[k], l)
	}
	for _, k := range order {
		lines := byPod[k]
		for i, l := range lines {
			if !reCrashHeader.MatchString(l.Message) {
				continue
			}
			pySite := ""
			for j := i + 1; j < len(lines) && j <= i+60; j++ {
				m := reFrame.FindStringSubmatch(lines[j].Message)
				if m == nil {
					if pySite != "" && !strings.HasPrefix(lines[j].Message, " ") {
						break // the exception line ends a Python traceback
					}
					continue
				}
				if m[2] != "" {
					// Python lists the innermost frame last: the site is
					// the last frame of the program's own code.
					if !reRuntimeFrame.MatchString(m[2]) {
						pySite = m[2] + ":" + m[3]
					}
					continue
				}
				site := firstNonEmptyStr(m[1], m[4], m[5])
				path := firstNonEmptyStr(m[4], m[5])
				if reRuntimeFrame.MatchString(path) || (m[1] != "" && reRuntimeFrame.MatchString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[j].Message), "at ")))) {
					continue
				}
				fn := ""
				if m[5] != "" && j > 0 {
					if f := reFrameFunc.FindStringSubmatch(strings.TrimSpace(lines[j-1].Message)); f != nil {
						fn = f[1]
					}
				}
				if !seen[site] {
					seen[site] = true
					out = append(out, crashSite{header: strings.TrimSpace(l.Message), site: site, function: fn, pod: l.Pod, cite: l.Cite})
				}
				pySite = ""
				break
			}
			if pySite != "" && !seen[pySite] {
				seen[pySite] = true
				out = append(out, crashSite{header: strings.TrimSpace(l.Message), site: pySite, pod: l.Pod, cite: l.Cite})
			}
		}
	}
	return out
}

func (c crashSite) text() string {
	where := c.site
	if c.function != "" {
		where += " in " + c.function
	}
	return fmt.Sprintf("crash site in the program's own code: %s, after %s (%s)", where, quote(clip(c.header, 160)), firstNonEmptyStr(c.pod, "logs"))
}
