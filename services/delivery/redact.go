package delivery

import (
	"regexp"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// redactionMark replaces a secret.
const redactionMark = "[REDACTED]"

// secretPatterns match secrets that must never leave in a report. Each
// pattern's first group, when present, is kept (the key name), the rest is
// replaced.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys.
	regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`),
	// Webhook URLs with their token in the path.
	regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+`),
	regexp.MustCompile(`https://[a-z0-9.-]*(?:webhook\.office\.com|discord(?:app)?\.com/api/webhooks)/[^\s"'<>)]+`),
	// Credentials in URLs: scheme://user:password@host.
	regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(@)`),
	// Authorization headers and bearer tokens.
	regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]+`),
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{12,}`),
	// key=value and "key": "value" forms with secret-looking key names.
	regexp.MustCompile(`(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token|session[_-]?key|credentials?)["']?\s*[:=]\s*["']?)[^\s"',;&}]{3,}`),
	// Well-known token formats.
	regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`),
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`),
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`),
}

// redact removes secrets from text.
func redact(s string) string {
	for _, re := range secretPatterns {
		if re.NumSubexp() == 0 {
			s = re.ReplaceAllString(s, redactionMark)
			continue
		}
		if re.NumSubexp() == 2 {
			s = re.ReplaceAllString(s, "${1}"+redactionMark+"${2}")
			continue
		}
		s = re.ReplaceAllString(s, "${1}"+redactionMark)
	}
	return s
}

// redactMessage returns a copy of m with every string field redacted.
func redactMessage[T proto.Message](m T) T {
	c := proto.Clone(m).(T)
	redactReflect(c.ProtoReflect())
	return c
}

func redactReflect(m protoreflect.Message) {
	if !m.IsValid() {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				switch fd.Kind() {
				case protoreflect.StringKind:
					l.Set(i, protoreflect.ValueOfString(redact(l.Get(i).String())))
				case protoreflect.MessageKind, protoreflect.GroupKind:
					redactReflect(l.Get(i).Message())
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				switch fd.MapValue().Kind() {
				case protoreflect.StringKind:
					mp.Set(k, protoreflect.ValueOfString(redact(mv.String())))
				case protoreflect.MessageKind:
					redactReflect(mv.Message())
				}
				return true
			})
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(redact(v.String())))
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			redactReflect(v.Message())
		}
		return true
	})
}
