// Package redact removes secrets from text and decoded JSON wherever data
// enters rcamesh: tool outputs (services/tools), alert payloads
// (internal/intake). Bearer tokens, passwords and other key=value
// credentials, AWS keys, private keys, JWTs, basic-auth URLs, session
// cookies, webhook URLs with credentials and the data of Kubernetes Secret
// manifests become [REDACTED].
package redact

import (
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// Redacted replaces every secret the redactor finds.
const Redacted = "[REDACTED]"

type redactRule struct {
	re   *regexp.Regexp
	repl string
	// keep, when set, spares matches that do not look like a credential.
	keep func(match []string) bool
	// keys prefilter the rule: it runs only on lines whose ASCII-lowercased
	// text contains one of them.
	keys []string
}

// plainWord reports whether a token is an ordinary word (letters only), not a credential.
func plainWord(tok string) bool {
	for _, c := range tok {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Order matters: whole-block rules first, then key=value rules.
var redactRules = []redactRule{
	// PEM private keys (RSA, EC, OPENSSH, PKCS#8, encrypted).
	{regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(-----END ([A-Z0-9 ]*)PRIVATE KEY-----|$)`), "-----BEGIN ${1}PRIVATE KEY-----" + Redacted + "-----END ${1}PRIVATE KEY-----", nil, nil},
	// JSON Web Tokens.
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+`), Redacted, nil, nil},
	// Bearer tokens (a letters-only word after "bearer" is prose, not a token).
	{regexp.MustCompile(`(?i)\b(bearer)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)`), "${1}${2}" + Redacted,
		func(m []string) bool { return plainWord(m[3]) }, nil},
	// Authorization headers of any scheme.
	{regexp.MustCompile(`(?i)\b(authorization\s*[:=]\s*(?:basic|digest|token|bearer|negotiate)?\s*)([A-Za-z0-9\-._~+/]{6,}=*)`), "${1}" + Redacted, nil, nil},
	// Basic-auth URLs: scheme://user:password@host.
	{regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@`), "${1}${2}:" + Redacted + "@", nil, nil},
	// AWS access key ids.
	{regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`), Redacted, nil, nil},
	// Slack / GitHub / generic vendor tokens.
	{regexp.MustCompile(`\b(xox[abposr]-[A-Za-z0-9-]{10,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|sk-[A-Za-z0-9_-]{20,})`), Redacted, nil, nil},
	// Webhook URLs whose path is the credential (Slack, Discord, Teams,
	// Google Chat keys in the query).
	{regexp.MustCompile(`(?i)\b(https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)|(?:discord(?:app)?\.com)/api/webhooks|[a-z0-9.-]*webhook\.office\.com/webhookb2)/)[^\s"'<>]+`), "${1}" + Redacted, nil, nil},
	// Credentials in URL query parameters.
	{regexp.MustCompile(`(?i)([?&](?:token|access_token|api_key|apikey|key|sig|signature|secret|password|auth)=)[^&\s"'<>]+`), "${1}" + Redacted, nil, nil},
	// Cookie headers: every cookie value is a session credential.
	{regexp.MustCompile(`(?i)\b((?:set-)?cookie\s*:\s*)[^\n]+`), "${1}" + Redacted, nil, nil},
	// KEY=value where the key ends like a credential (DB_PASS, SMTP_PWD,
	// SESSION_ID, CLIENT_SECRET): environment and config dumps.
	{regexp.MustCompile(`\b([A-Za-z0-9_]*(?:_PASS|_PASSWD|_PWD|_SECRET|_TOKEN|_APIKEY|_API_KEY|_SESSION|SESSIONID|_SID)\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&]+)`), "${1}" + Redacted, nil, nil},
}

var pemRule = redactRules[0]

// lineRules are the single-line rules with their prefilter keys.
var lineRules = func() []redactRule {
	keys := [][]string{
		nil, // pem: whole text, handled separately
		{"eyj"},
		{"bearer"},
		{"authorization"},
		{"://"},
		{"akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"},
		{"xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-"},
		{"hooks.slack.com", "/api/webhooks", "webhook.office.com"},
		{"token=", "key=", "sig=", "signature=", "secret=", "password=", "auth="},
		{"cookie"},
		{"_pass", "_pwd", "_secret", "_token", "_apikey", "_api_key", "_session", "sessionid", "_sid"},
	}
	var out []redactRule
	for i, r := range redactRules {
		if i == 0 {
			continue
		}
		r.keys = keys[i]
		out = append(out, r)
	}
	return out
}()

// secretKeyWords end a key that names a credential (db_password=, "api-key":, AUTH:).
var secretKeyWords = []string{"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
	"privatekey", "private_key", "private-key", "credentials", "credential", "auth"}

// proseValue: the unquoted value at line[vs:ve] is a lower-case word that
// a sentence continues after ("get credentials: failed to refresh cached
// credentials"): an error chain's wording, not a credential.
func proseValue(line string, vs, ve int) bool {
	// Only "key: value" with a space, the way prose writes it.
	sep := strings.TrimRight(line[:vs], " \t")
	if len(sep) == len(line[:vs]) || !strings.HasSuffix(sep, ":") || ve-vs < 3 {
		return false
	}
	for _, c := range line[vs:ve] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	rest := line[ve:]
	return len(rest) >= 3 && rest[0] == ' ' && rest[1] >= 'a' && rest[1] <= 'z' && rest[2] >= 'a' && rest[2] <= 'z'
}

// redactKeyValues blanks the value of every key=value / key: value /
// "key": "value" pair whose key ends with a credential word. lower is the
// ASCII-lowercased line (same offsets).
func redactKeyValues(line, lower string) string {
	var b strings.Builder
	last := 0
	i := 0
	for i < len(lower) {
		// Find the earliest keyword occurrence at or after i.
		at, kwLen := -1, 0
		for _, kw := range secretKeyWords {
			if j := strings.Index(lower[i:], kw); j >= 0 && (at < 0 || i+j < at || i+j == at && len(kw) > kwLen) {
				at, kwLen = i+j, len(kw)
			}
		}
		if at < 0 {
			break
		}
		e := at + kwLen
		// The keyword must end the key: optional closing quote, spaces, then = or :.
		k := e
		if k < len(lower) && (lower[k] == '"' || lower[k] == '\'') {
			k++
		}
		for k < len(lower) && (lower[k] == ' ' || lower[k] == '\t') {
			k++
		}
		if k >= len(lower) || (lower[k] != '=' && lower[k] != ':') || (k == e && e < len(lower) && textutil.IsWordByte(lower[e])) {
			i = at + 1
			continue
		}
		k++
		for k < len(lower) && (lower[k] == ' ' || lower[k] == '\t') {
			k++
		}
		if k >= len(line) {
			break
		}
		vs, ve := k, k
		switch q := line[k]; q {
		case '"', '\'':
			end := strings.IndexByte(line[k+1:], q)
			if end < 0 {
				i = k + 1
				continue
			}
			vs, ve = k+1, k+1+end
		default:
			for ve < len(line) && !strings.ContainsRune(" \t,;&'\"}[]", rune(line[ve])) {
				ve++
			}
		}
		if ve == vs || line[vs:ve] == Redacted || (vs > 0 && line[vs-1] == '[') || proseValue(line, vs, ve) {
			i = ve + 1
			continue
		}
		b.WriteString(line[last:vs])
		b.WriteString(Redacted)
		last = ve
		i = ve
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// anyKey is the union of every line rule's keys: lines without one are skipped.
var anyKey = func() []string {
	seen := map[string]bool{}
	out := append([]string(nil), secretKeyWords...)
	for _, r := range lineRules {
		for _, k := range r.keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}()

// keyTrigrams holds the hashed first three (lowercase) bytes of every
// keyword: a string without one of them cannot match any rule.
var keyTrigrams = func() *[1 << 15]bool {
	var t [1 << 15]bool
	for _, k := range append(append([]string(nil), anyKey...), "private key", "secret") {
		t[trigram(k[0], k[1], k[2])] = true
	}
	return &t
}()

func trigram(a, b, c byte) int {
	return (int(lowerByte(a))*961 + int(lowerByte(b))*31 + int(lowerByte(c))) & (1<<15 - 1)
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// mayContainSecret is a one-pass prefilter over s.
func mayContainSecret(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if keyTrigrams[trigram(s[i], s[i+1], s[i+2])] {
			return true
		}
	}
	return false
}

func containsAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func (r redactRule) apply(s string) string {
	if !r.re.MatchString(s) {
		return s
	}
	if r.keep == nil {
		return r.re.ReplaceAllString(s, r.repl)
	}
	return r.re.ReplaceAllStringFunc(s, func(m string) string {
		if r.keep(r.re.FindStringSubmatch(m)) {
			return m
		}
		return r.re.ReplaceAllString(m, r.repl)
	})
}

func redactLine(line, lower string) string {
	for _, r := range lineRules {
		if !containsAny(lower, r.keys) {
			continue
		}
		if r.keys[0] == "://" && !strings.Contains(lower, "@") {
			continue
		}
		if out := r.apply(line); out != line {
			line = out
			lower = textutil.ASCIILower(line)
		}
	}
	if containsAny(lower, secretKeyWords) {
		line = redactKeyValues(line, lower)
	}
	return line
}

// sensitiveKey reports whether a metadata/map key names a secret value.
// SensitiveKey reports whether a key names a credential (its value is
// redacted whole).
func SensitiveKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "secret_key", "secretkey", "api_key", "apikey", "access_key", "private_key", "client_secret", "authorization", "token"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Text removes secrets from free text: bearer tokens, passwords and
// other key=value credentials, AWS keys, private keys, JWTs, basic-auth URLs
// and the data of Kubernetes Secret manifests.
func Text(s string) string {
	if s == "" || !mayContainSecret(s) {
		return s
	}
	if strings.Contains(s, "Secret") {
		s = redactSecretManifests(s)
	}
	lower := textutil.ASCIILower(s)
	if strings.Contains(lower, "private key") {
		s = pemRule.apply(s)
		lower = textutil.ASCIILower(s)
	}
	// Keywords present anywhere: lines are only checked for those.
	var present []string
	for _, k := range anyKey {
		if strings.Contains(lower, k) {
			present = append(present, k)
		}
	}
	if len(present) == 0 {
		return s
	}
	var b strings.Builder
	changed := false
	for start := 0; start <= len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		if ll := lower[start:end]; containsAny(ll, present) {
			if out := redactLine(line, ll); out != line {
				if !changed {
					b.Grow(len(s))
					b.WriteString(s[:start])
					changed = true
				}
				line = out
			}
		}
		if changed {
			b.WriteString(line)
			if end < len(s) {
				b.WriteByte('\n')
			}
		}
		start = end + 1
	}
	if !changed {
		return s
	}
	return b.String()
}

var (
	secretKindLine = regexp.MustCompile(`(?m)^\s*kind:\s*Secret\s*$`)
	secretJSONKind = regexp.MustCompile(`"kind"\s*:\s*"Secret"`)
	jsonDataBlock  = regexp.MustCompile(`("(?:data|stringData)"\s*:\s*\{)([^{}]*)(\})`)
	jsonKV         = regexp.MustCompile(`("[^"]*"\s*:\s*)"[^"]*"`)
)

// redactSecretManifests blanks the values under data:/stringData: of Secret
// objects printed as YAML (kubectl get -o yaml) or JSON.
func redactSecretManifests(s string) string {
	if secretJSONKind.MatchString(s) {
		s = jsonDataBlock.ReplaceAllStringFunc(s, func(block string) string {
			m := jsonDataBlock.FindStringSubmatch(block)
			return m[1] + jsonKV.ReplaceAllString(m[2], `${1}"`+Redacted+`"`) + m[3]
		})
	}
	if !secretKindLine.MatchString(s) {
		return s
	}
	// YAML: split into documents and redact data blocks of Secret documents.
	docs := strings.Split(s, "\n---")
	for i, doc := range docs {
		if !secretKindLine.MatchString(doc) {
			continue
		}
		lines := strings.Split(doc, "\n")
		inData, dataIndent := false, 0
		for j, line := range lines {
			trimmed := strings.TrimLeft(line, " ")
			indent := len(line) - len(trimmed)
			if inData {
				if trimmed == "" {
					continue
				}
				if indent <= dataIndent {
					inData = false
				} else {
					if k := strings.Index(trimmed, ":"); k > 0 {
						lines[j] = line[:indent] + trimmed[:k+1] + " " + Redacted
					} else {
						lines[j] = line[:indent] + Redacted
					}
					continue
				}
			}
			if trimmed == "data:" || trimmed == "stringData:" {
				inData, dataIndent = true, indent
			}
		}
		docs[i] = strings.Join(lines, "\n")
	}
	return strings.Join(docs, "\n---")
}

// Value walks decoded JSON (maps, slices, strings) and redacts every
// string, every value under a sensitive key and the data of Secret objects.
// It reports whether anything changed. Maps and slices are redacted in
// place.
func Value(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		out := Text(t)
		return out, out != t
	case []any:
		return t, redactList(t)
	case map[string]any:
		return t, redactMap(t)
	}
	return v, false
}

// redactList and redactMap write an element or entry back only when it
// changed, and walk nested lists and maps without passing them through an
// interface: a write per key, and a string or slice boxed per element,
// were most of the walk's cost on a tool call's facts.
func redactList(t []any) bool {
	changed := false
	for i, e := range t {
		switch x := e.(type) {
		case string:
			if out := Text(x); out != x {
				t[i], changed = out, true
			}
		case []any:
			changed = redactList(x) || changed
		case map[string]any:
			changed = redactMap(x) || changed
		}
	}
	return changed
}

func redactMap(t map[string]any) bool {
	changed := false
	isSecret := false
	if k, ok := t["kind"].(string); ok && k == "Secret" {
		isSecret = true
	}
	for k, val := range t {
		if isSecret && (k == "data" || k == "stringData") {
			if m, ok := val.(map[string]any); ok {
				for dk, dv := range m {
					if dv != Redacted {
						m[dk] = Redacted
						changed = true
					}
				}
				continue
			}
		}
		switch x := val.(type) {
		case string:
			if SensitiveKey(k) {
				if x != Redacted {
					t[k], changed = Redacted, true
				}
			} else if out := Text(x); out != x {
				t[k], changed = out, true
			}
		case []any:
			changed = redactList(x) || changed
		case map[string]any:
			changed = redactMap(x) || changed
		}
	}
	return changed
}
