package bus

import (
	"errors"
	"fmt"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// Stream, consumer and subject names. All subjects are declared here.
const (
	// StreamEvents holds every session event (pins and lifecycle).
	StreamEvents = "RCAMESH_EVENTS"
	// StreamWork is the work queue of alerts to investigate.
	StreamWork = "RCAMESH_WORK"

	// ConsumerCritic is the durable consumer of pin.added the critic uses to revalidate pins.
	ConsumerCritic = "critic-revalidate"
	// ConsumerWork is the shared durable consumer of the work queue.
	ConsumerWork = "brain-work"
	// ConsumerHistory is the durable consumer of lifecycle events that
	// saves finished investigations to the history store.
	ConsumerHistory = "history-recorder"

	// SubjectPrefix is the prefix of every rcamesh subject.
	SubjectPrefix = "rcamesh." + Version
	// SessionSubjects matches every session event (the subjects of StreamEvents).
	SessionSubjects = SubjectPrefix + ".session.>"
	// WorkSubjects matches every work subject (the subjects of StreamWork).
	WorkSubjects = SubjectPrefix + ".work.>"
	// SubjectWorkAlert is the work-queue subject of alerts to investigate.
	SubjectWorkAlert = SubjectPrefix + ".work.alert"
	// PinAddedFilter matches pin.added events of every session.
	PinAddedFilter = SubjectPrefix + ".session.*.pin.added"
	// LifecycleAllFilter matches lifecycle events of every session.
	LifecycleAllFilter = SubjectPrefix + ".session.*.lifecycle.*"

	// KV buckets.
	BucketSessions = "rcamesh_sessions"
	BucketRecords  = "rcamesh_records"
	BucketReports  = "rcamesh_reports"
	// BucketFingerprints is the alert-fingerprint dedup guardrail of intake:
	// the brain alone writes it (its NATS permission).
	BucketFingerprints = "rcamesh_fingerprints"
	// BucketPageClaims holds delivery's claims on fingerprints it paged
	// (one page per fingerprint per window); delivery alone writes it.
	BucketPageClaims = "rcamesh_page_claims"
	// BucketHistory holds finished investigations (the default history store).
	BucketHistory = "rcamesh_history"
	// BucketCritic holds the critic's per-session lease and verdict stamp, so
	// that critic replicas judge one session in turn and each sees the
	// verdicts of the others.
	BucketCritic = "rcamesh_critic"
	// BucketOpen indexes the investigations not yet final (the brain's
	// orphan sweeper reads it instead of every record).
	BucketOpen = "rcamesh_open"
	// BucketOutbox holds the pages delivery has not had accepted yet.
	BucketOutbox = "rcamesh_outbox"

	// Header names.
	HeaderEventKind   = "Rcamesh-Event-Kind"
	HeaderSchema      = "Rcamesh-Schema"
	HeaderContentType = "Content-Type"
	// HeaderPublisher names the process that published an event (its NATS
	// connection name, e.g. "rcamesh-brain@host-1234"): which replica ran what.
	HeaderPublisher    = "Rcamesh-Publisher"
	ContentType        = "application/protobuf"
	EventKindPin       = "pin"
	EventKindLifecycle = "lifecycle"
	// EventKindWork labels work-queue publishes in metrics (not a header value).
	EventKindWork = "work"
)

// TokenEscape starts an escape in a session token: TokenEscape followed by
// two upper-case hex digits stands for one byte.
const TokenEscape = '='

// MaxSubjectBytes is the longest subject (or filter) the bus publishes or
// subscribes to. NATS closes a connection whose protocol line exceeds the
// server's max_control_line (4 KiB by default); a subject that long is refused
// with an error before it reaches the connection.
const MaxSubjectBytes = 1024

// Token escapes s into one subject token, injectively: the bytes
// A-Z a-z 0-9 '-' and '_' stand for themselves, every other byte (including
// '.', '*', '>', white space, TokenEscape itself and each byte of a non-ASCII
// character) becomes "=XX" with XX its upper-case hex value, and the empty
// string becomes "=" (which no non-empty input produces). Distinct inputs give
// distinct tokens and ParseToken inverts it. The result is a valid NATS
// subject token and a valid JetStream KV key.
func Token(s string) string {
	if s == "" {
		return string(TokenEscape)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if tokenByte(c) {
			b = append(b, c)
			continue
		}
		b = append(b, TokenEscape, hex[c>>4], hex[c&0x0f])
	}
	return string(b)
}

// tokenByte reports whether c stands for itself in a token.
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// ParseToken inverts Token. It fails on a token Token cannot produce (a byte
// outside the token alphabet, an escape that is not "=" plus two upper-case
// hex digits, or an escape of a byte that needs none).
func ParseToken(tok string) (string, error) {
	if tok == string(TokenEscape) {
		return "", nil
	}
	if tok == "" {
		return "", errors.New("bus: empty subject token")
	}
	if !strings.ContainsRune(tok, TokenEscape) {
		for i := 0; i < len(tok); i++ {
			if !tokenByte(tok[i]) {
				return "", fmt.Errorf("bus: byte %q at %d of token %q is not in the token alphabet", tok[i], i, tok)
			}
		}
		return tok, nil
	}
	b := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case tokenByte(c):
			b = append(b, c)
		case c == TokenEscape:
			if i+2 >= len(tok) {
				return "", fmt.Errorf("bus: truncated escape at %d of token %q", i, tok)
			}
			hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("bus: bad escape %q at %d of token %q", tok[i:i+3], i, tok)
			}
			v := byte(hi<<4 | lo)
			if tokenByte(v) {
				return "", fmt.Errorf("bus: escape %q at %d of token %q stands for a byte that needs none", tok[i:i+3], i, tok)
			}
			b = append(b, v)
			i += 2
		default:
			return "", fmt.Errorf("bus: byte %q at %d of token %q is not in the token alphabet", c, i, tok)
		}
	}
	return string(b), nil
}

// unhex is the value of an upper-case hex digit, -1 for anything else.
func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// SessionOfSubject returns the session id of a session event subject
// ("rcamesh.v1.session.<token>.…"), decoded with ParseToken.
func SessionOfSubject(subject string) (string, error) {
	prefix := SubjectPrefix + ".session."
	if !strings.HasPrefix(subject, prefix) {
		return "", fmt.Errorf("bus: %q is not a session subject", subject)
	}
	tok, _, ok := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
	if !ok {
		return "", fmt.Errorf("bus: %q has no event kind after the session", subject)
	}
	return ParseToken(tok)
}

// checkSubject refuses a subject or filter longer than MaxSubjectBytes.
func checkSubject(subject string) error {
	if len(subject) > MaxSubjectBytes {
		return fmt.Errorf("bus: subject of %d bytes exceeds the limit of %d (a session id that long is refused at the edge)", len(subject), MaxSubjectBytes)
	}
	return nil
}

// PinKindToken is the subject token of a pin event kind: added, updated,
// rejected (unspecified for an unknown value).
func PinKindToken(kind evidencev1.PinEventKind) string {
	if t, ok := pinKindTokens[kind]; ok {
		return t
	}
	return enumToken(kind.String(), "PIN_EVENT_KIND_")
}

// pinKindTokens holds the token of every known pin event kind (computed
// once: two are needed per published pin).
var pinKindTokens = func() map[evidencev1.PinEventKind]string {
	m := make(map[evidencev1.PinEventKind]string, len(evidencev1.PinEventKind_name))
	for n := range evidencev1.PinEventKind_name {
		k := evidencev1.PinEventKind(n)
		m[k] = enumToken(k.String(), "PIN_EVENT_KIND_")
	}
	return m
}()

// LifecycleKindToken is the subject token of a lifecycle event kind, e.g.
// "stage", "diagnosed", "alert_received".
func LifecycleKindToken(kind evidencev1.LifecycleEventKind) string {
	return enumToken(kind.String(), "LIFECYCLE_EVENT_KIND_")
}

func enumToken(name, prefix string) string {
	if !strings.HasPrefix(name, prefix) {
		return "unspecified" // a number the generated code does not know
	}
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

// PinSubject is "rcamesh.v1.session.<session>.pin.<kind>".
func PinSubject(session string, kind evidencev1.PinEventKind) string {
	return SubjectPrefix + ".session." + Token(session) + ".pin." + PinKindToken(kind)
}

// LifecycleSubject is "rcamesh.v1.session.<session>.lifecycle.<kind>".
func LifecycleSubject(session string, kind evidencev1.LifecycleEventKind) string {
	return SubjectPrefix + ".session." + Token(session) + ".lifecycle." + LifecycleKindToken(kind)
}

// SessionFilter matches every event of one session: "rcamesh.v1.session.<session>.>".
func SessionFilter(session string) string {
	return SubjectPrefix + ".session." + Token(session) + ".>"
}

// PinFilter matches pin events of one session and kind; session "*" matches every session.
func PinFilter(session string, kind evidencev1.PinEventKind) string {
	if session == "*" {
		return SubjectPrefix + ".session.*.pin." + PinKindToken(kind)
	}
	return PinSubject(session, kind)
}

// WorkSubject is the work-queue subject of one work item:
// "rcamesh.v1.work.alert.<key>" with the key escaped by Token.
func WorkSubject(key string) string {
	return SubjectWorkAlert + "." + Token(key)
}

// LifecycleFilter matches every lifecycle event of one session.
func LifecycleFilter(session string) string {
	return SubjectPrefix + ".session." + Token(session) + ".lifecycle.>"
}
