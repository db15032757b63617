package tools

import "github.com/rcamesh/rcamesh/internal/redact"

// Redacted replaces every secret the redactor finds.
const Redacted = redact.Redacted

// RedactText removes secrets from free text (internal/redact).
func RedactText(s string) string { return redact.Text(s) }

// redactValue walks decoded JSON and redacts every string, every value under
// a sensitive key and the data of Secret objects (internal/redact).
func redactValue(v any) (any, bool) { return redact.Value(v) }
