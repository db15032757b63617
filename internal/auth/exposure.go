package auth

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// Loopback reports whether a listen address (host:port) accepts
// connections from this machine only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckExposure refuses to listen beyond loopback without authentication
// unless -auth.insecure-open is set. listeners maps a flag name to the
// address it listens on ("" for none).
func (c Config) CheckExposure(listeners map[string]string) error {
	if c.Enabled() || c.InsecureOpen {
		return nil
	}
	var open []string
	for flagName, addr := range listeners {
		if addr != "" && !Loopback(addr) {
			open = append(open, fmt.Sprintf("-%s %s", flagName, addr))
		}
	}
	if len(open) == 0 {
		return nil
	}
	sort.Strings(open)
	return fmt.Errorf("auth: refusing to listen beyond loopback without authentication (%s): configure -auth.tokens-file or -auth.jwt.*, "+
		"listen on 127.0.0.1, or accept an open mesh with -auth.insecure-open", strings.Join(open, ", "))
}
