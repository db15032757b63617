package tools

import (
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// reEnvHost: a host an environment value names as a URL's authority
// (scheme://[user[:password]@]host[:port]) or as host:port. The user
// information is matched only to be skipped: credentials are never kept.
var reEnvHost = regexp.MustCompile(`(?i)(?:[a-z][a-z0-9+.-]*://(?:[^@/\s]*@)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)|(?:^|[\s,;=])([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*):\d{2,5}\b)`)

// maxCalls bounds the call edges kept per workload.
const maxCalls = 16

// calledHosts are the hosts a pod template's containers name in their
// literal environment values (never values from Secrets or ConfigMaps,
// never the credentials of a URL): in-cluster Services by their name
// (pgbouncer of pgbouncer.escrow.svc.cluster.local), other hosts whole.
// Loopback and IP addresses are no call edge to a named object.
func calledHosts(spec *corev1.PodSpec) []string {
	var out []string
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.Value == "" {
					continue
				}
				for _, m := range reEnvHost.FindAllStringSubmatch(e.Value, -1) {
					h := strings.ToLower(m[1] + m[2])
					if h = callName(h); h != "" && !slices.Contains(out, h) && len(out) < maxCalls {
						out = append(out, h)
					}
				}
			}
		}
	}
	return out
}

// callName is the object a host names: an in-cluster Service's name, an
// outside host whole; "" for loopback and addresses.
func callName(h string) string {
	h = strings.TrimSuffix(h, ".")
	if h == "localhost" || reIPv4.MatchString(h) {
		return ""
	}
	if i := strings.Index(h, ".svc"); i > 0 && (h[i:] == ".svc" || strings.HasPrefix(h[i:], ".svc.")) {
		name, _, _ := strings.Cut(h[:i], ".")
		return name
	}
	return h
}

var reIPv4 = regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3}){3}$`)
