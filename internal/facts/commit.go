package facts

import (
	"path"
	"strings"
)

// PathNames reports whether a file path of c names name (three characters
// or more, case-insensitive): a path segment or file that is name, or a
// segment that begins with name and a separator ("pickup-api-hpa.yaml",
// "pickup-api_values") or ends with a dash and name. Platform, policy and
// GitOps repositories name the services they configure this way
// ("apps/orders/pickup-api/hpa.yaml").
func (c Commit) PathNames(name string) bool {
	name = strings.ToLower(name)
	if len(name) < 3 {
		return false
	}
	for _, f := range c.Files {
		for _, seg := range strings.Split(strings.ToLower(f.Path), "/") {
			base := strings.TrimSuffix(seg, path.Ext(seg))
			if seg == name || base == name || strings.HasSuffix(base, "-"+name) {
				return true
			}
			if strings.HasPrefix(base, name) && strings.ContainsRune("-_.", rune(base[len(name)])) {
				return true
			}
		}
	}
	return false
}
