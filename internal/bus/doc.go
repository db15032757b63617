// Package bus is rcamesh's event bus on NATS JetStream: stream, subject and
// bucket names, idempotent publishing of evidence-pin and lifecycle events,
// replay, live follow, durable consumers, the alert work queue and KV buckets.
//
// # Public contract (version v1)
//
// The subject scheme and the payloads below are a public contract, versioned
// like the protos (see [Version]). Other platforms may subscribe to them.
//
// Stream RCAMESH_EVENTS (file storage, limits retention, max age 7 days by
// default, duplicate window 2 minutes) holds every session event:
//
//	rcamesh.v1.session.<session>.pin.<added|updated|rejected>
//	rcamesh.v1.session.<session>.lifecycle.<kind>
//
// <session> is the session id escaped into one subject token by [Token], an
// injective and reversible ([ParseToken]) escape: the bytes A-Z a-z 0-9 '-'
// and '_' stand for themselves, and every other byte becomes '=' followed by
// its value in two upper-case hex digits ('.' is "=2E", ':' is "=3A", '=' is
// "=3D", "é" is "=C3=A9"); the empty id is "=". So the ids rcamesh generates
// ("inc-0f3a9c21b7d4e5f6-lds4") and other simple ids appear unchanged, and
// two distinct ids never share a subject: "team-a.prod" is
// rcamesh.v1.session.team-a=2Eprod.…, "team-a_prod" is
// rcamesh.v1.session.team-a_prod.…. [SessionOfSubject] decodes the session
// of a subject. Session ids are validated at the edge (internal/sessionid: 1
// to 128 bytes of A-Z a-z 0-9 . _ : -), and the bus refuses any subject or
// filter longer than [MaxSubjectBytes] rather than let NATS close the shared
// connection over an over-long protocol line. <kind> of a
// lifecycle event is the lower snake case of the LifecycleEventKind name
// without its prefix: alert_received, started, stage, guardrail, diagnosed,
// delivered, completed, failed, noise, alert_attached.
//
// Useful filters: "rcamesh.v1.session.>" (everything), [SessionFilter]
// ("rcamesh.v1.session.<session>.>"), "rcamesh.v1.session.*.pin.added" (one
// kind of every session), "rcamesh.v1.session.<session>.lifecycle.>".
//
// Payloads are protobuf binary (Content-Type: application/protobuf):
// rcamesh.evidence.v1.PinEvent on pin subjects and
// rcamesh.evidence.v1.LifecycleEvent on lifecycle subjects. Headers:
//
//	Rcamesh-Event-Kind: pin | lifecycle
//	Rcamesh-Schema:     rcamesh.evidence.v1.PinEvent | rcamesh.evidence.v1.LifecycleEvent
//	Rcamesh-Publisher:  the publishing process (its NATS connection name: targets@host:pid)
//	Content-Type:       application/protobuf
//	Nats-Msg-Id:        idempotency key (see below)
//	traceparent, tracestate, baggage: W3C trace context and baggage
//
// The JSON form of a payload (used by the REST gateway and for debugging) is
// the protojson mapping of the same message with proto field names
// (session_id, not sessionId), enums as their names and unpopulated fields
// omitted.
//
// Idempotency: a pin event's message id is
// "pin:<session>:<pin id>:<kind>:<version>" (<session> escaped as in the
// subject), so republishing the same version of a pin within the duplicate
// window stores nothing new and returns the sequence of the first copy. A
// lifecycle event's message id is "lifecycle:<session>:<event_id>".
//
// Sequences: a SessionEvent's sequence is the JetStream stream sequence.
// Replay and Follow take fromSeq and deliver the events whose sequence is
// greater than fromSeq, so a client resumes by passing back the last sequence
// it saw; 0 means from the beginning. A cursor beyond the stream's last
// sequence (up to 2^64-1) is clamped to it ([StartSequence]): Replay returns
// nothing and Follow delivers only new events.
//
// Events whose timestamps fall outside what protojson can express (years 1
// to 9999) are refused at publish time: no reader could decode them to JSON.
//
// Stream RCAMESH_WORK (work-queue retention) carries alerts to investigate,
// each on "rcamesh.v1.work.alert.<key>" (WorkSubject: the investigation id,
// escaped by Token; older versions used "rcamesh.v1.work.alert"), consumed by
// the shared durable "brain-work". WorkPending tells whether the queue still
// holds an item (the brain's orphan sweeper asks).
//
// KV buckets (created on first use): rcamesh_sessions, rcamesh_records,
// rcamesh_reports, rcamesh_fingerprints, rcamesh_critic, rcamesh_history,
// rcamesh_open (investigations not yet final), rcamesh_outbox (pages no
// destination has accepted yet).
//
// Replicas: every stream and KV bucket has -nats.replicas replicas (1 for
// the embedded server, 3 in a NATS cluster); every publish waits for the
// stream's acknowledgement, so an acknowledged event survives the loss of a
// minority of the cluster's nodes.
package bus

// Version is the version of the subject scheme and payload contract; it is
// the second token of every subject.
const Version = "v1"
