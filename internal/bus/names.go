package bus

import (
	"strings"
	"unicode"

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

	// KV buckets.
	BucketSessions     = "rcamesh_sessions"
	BucketRecords      = "rcamesh_records"
	BucketReports      = "rcamesh_reports"
	BucketFingerprints = "rcamesh_fingerprints"

	// Header names.
	HeaderEventKind    = "Rcamesh-Event-Kind"
	HeaderSchema       = "Rcamesh-Schema"
	HeaderContentType  = "Content-Type"
	ContentType        = "application/protobuf"
	EventKindPin       = "pin"
	EventKindLifecycle = "lifecycle"
)

// Token escapes s into one subject token: '.', '*', '>' and white space become
// '_'; an empty string becomes "_".
func Token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '.', r == '*', r == '>', unicode.IsSpace(r), unicode.IsControl(r):
			return '_'
		}
		return r
	}, s)
}

// PinKindToken is the subject token of a pin event kind: added, updated,
// rejected (unspecified for an unknown value).
func PinKindToken(kind evidencev1.PinEventKind) string {
	return enumToken(kind.String(), "PIN_EVENT_KIND_")
}

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

// LifecycleFilter matches every lifecycle event of one session.
func LifecycleFilter(session string) string {
	return SubjectPrefix + ".session." + Token(session) + ".lifecycle.>"
}
