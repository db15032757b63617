package sessionid_test

import (
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/sessionid"
)

// FuzzCheck: an id is accepted exactly when it is 1 to MaxLen bytes of the
// documented alphabet; every accepted id makes subjects within the bus's
// limit; a refusal's message is short (it never echoes a long id into logs
// and responses).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "s1", "inc-0f3a9c21b7d4e5f6-lds4", "team-a.prod", "team:a", "a b", "a/b", "ü", "a\xff",
		strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("a", 4000), strings.Repeat(".", 128)} {
		f.Add(s)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"
	f.Fuzz(func(t *testing.T, id string) {
		err := sessionid.Check("session_id", id)
		want := len(id) >= 1 && len(id) <= sessionid.MaxLen && strings.Trim(id, alphabet) == ""
		if (err == nil) != want {
			t.Fatalf("Check(%q) = %v, want valid=%v", id, err, want)
		}
		if err != nil {
			if len(err.Error()) > 160 {
				t.Fatalf("Check(%.40q…) message is %d bytes long", id, len(err.Error()))
			}
			return
		}
		for _, subject := range []string{
			bus.PinSubject(id, evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED),
			bus.LifecycleSubject(id, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED),
			bus.SessionFilter(id),
		} {
			if len(subject) > bus.MaxSubjectBytes {
				t.Fatalf("valid id %q makes a %d-byte subject", id, len(subject))
			}
		}
	})
}
