package bus

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Signature headers of session events. A signature is
// base64(HMAC-SHA256(key, signer "\n" subject "\n" event kind "\n" payload)):
// it binds the event to its subject (so to its session and kind) and to the
// service that published it.
const (
	HeaderSigner    = "Rcamesh-Signer"
	HeaderSignature = "Rcamesh-Signature"
)

// Publishers lists, per kind of session event, the services that publish it:
// the tools service its pins (and the router the pin of a tool call that
// could not run, the brain the copy of a sub-investigation's pin in its
// parent session), the critic its verdicts on pins, the brain the lifecycle
// of investigations. A verified event from any other service is refused.
// The NATS permissions (Permissions) are built from the same table.
var Publishers = map[string][]string{
	"pin.added":    {"tools", "router", "brain", "triage"},
	"pin.updated":  {"critic"},
	"pin.rejected": {"critic"},
	"lifecycle":    {"brain", "triage"},
}

// ErrForged marks an event refused by its signature.
var ErrForged = errors.New("bus: event refused: not signed by a service allowed to publish it")

// As returns a Bus on the same connection that signs as service.
func (b *Bus) As(service string) *Bus {
	c := *b
	c.signer = service
	c.logger = b.logger.With("signer", service)
	return &c
}

func (b *Bus) mac(signer, subject, kind string, data []byte) []byte {
	m := hmac.New(sha256.New, b.cfg.SigningKey)
	m.Write([]byte(signer + "\n" + subject + "\n" + kind + "\n"))
	m.Write(data)
	return m.Sum(nil)
}

// sign adds the signature headers when the Bus has a key.
func (b *Bus) sign(msg *nats.Msg) {
	if len(b.cfg.SigningKey) == 0 {
		return
	}
	signer := b.signer
	if signer == "" {
		signer = "unknown"
	}
	msg.Header.Set(HeaderSigner, signer)
	msg.Header.Set(HeaderSignature, base64.RawStdEncoding.EncodeToString(b.mac(signer, msg.Subject, msg.Header.Get(HeaderEventKind), msg.Data)))
}

// publisherKey is the Publishers row of a session subject.
func publisherKey(subject string) string {
	parts := strings.Split(subject, ".")
	// rcamesh.v1.session.<token>.pin.<kind> | .lifecycle.<kind>
	if len(parts) == 6 && parts[4] == "pin" {
		return "pin." + parts[5]
	}
	if len(parts) == 6 && parts[4] == "lifecycle" {
		return "lifecycle"
	}
	return ""
}

// verify checks the signature of a stored event; nil when the Bus has no key.
// A refused event is logged (subject, sequence, claimed signer, reason:
// never the key or the signature) and recorded on the current span.
func (b *Bus) verify(ctx context.Context, subject string, seq uint64, h nats.Header, data []byte) error {
	if len(b.cfg.SigningKey) == 0 {
		return nil
	}
	var signer, sig, kind string
	if h != nil {
		signer, sig, kind = h.Get(HeaderSigner), h.Get(HeaderSignature), h.Get(HeaderEventKind)
	}
	reason := ""
	switch raw, err := base64.RawStdEncoding.DecodeString(sig); {
	case sig == "" || signer == "":
		reason = "unsigned"
	case err != nil || !hmac.Equal(raw, b.mac(signer, subject, kind, data)):
		reason = "bad signature"
	case !slices.Contains(Publishers[publisherKey(subject)], signer):
		reason = fmt.Sprintf("%s may not publish %s events", signer, publisherKey(subject))
	}
	if reason == "" {
		return nil
	}
	b.logger.WarnContext(ctx, "refused a forged or unsigned event", "subject", subject, "seq", seq, "claimed_signer", signer, "reason", reason)
	trace.SpanFromContext(ctx).AddEvent("rcamesh.event_refused", trace.WithAttributes(
		attribute.String("messaging.destination.name", subject), attribute.Int64("rcamesh.seq", int64(seq)), attribute.String("rcamesh.reason", reason)))
	return fmt.Errorf("%w (seq %d on %s: %s)", ErrForged, seq, subject, reason)
}
