package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/protocheck"
)

// Options says how a process reaches NATS.
type Options struct {
	// URL of an external NATS server; "" means the in-process embedded server.
	URL string
	// Name of the connection, shown by NATS monitoring.
	Name   string
	Logger *slog.Logger
	// User and Password authenticate the connection (never logged).
	User, Password string
	// TLS, when set, is used toward the server.
	TLS *tls.Config
}

// Config holds the stream and consumer settings. The zero value is not
// valid: start from DefaultConfig.
type Config struct {
	// EventsMaxAge is how long RCAMESH_EVENTS keeps events.
	EventsMaxAge time.Duration
	// WorkMaxAge is how long an unconsumed work item stays in RCAMESH_WORK.
	WorkMaxAge time.Duration
	// DuplicateWindow is how long a message id is remembered for deduplication.
	DuplicateWindow time.Duration
	// AckWait is how long a durable consumer waits for an ack before
	// redelivering; a running handler extends it with progress acks.
	AckWait time.Duration
	// MaxDeliver is how often a durable consumer delivers one message before
	// it gives up on it (the message is terminated and logged).
	MaxDeliver int
	// NakDelay is the redelivery delay after the first failure; it doubles per
	// failure up to NakMaxDelay.
	NakDelay    time.Duration
	NakMaxDelay time.Duration
	// Replicas of each stream (1 for a single server).
	Replicas int
	// RequestTimeout bounds one attempt of a JetStream request (a publish
	// waiting for its ack, a stream lookup): a request in flight on the
	// connection to a server that dies is never answered, so no attempt may
	// wait for the caller's whole deadline.
	RequestTimeout time.Duration
	// RetryFor is how long a publish that timed out or found no stream
	// leader (a cluster electing one after a node died) keeps being retried
	// under its message id, which makes the retry idempotent.
	RetryFor time.Duration
	// TracerProvider for producer and consumer spans; nil uses the global one.
	TracerProvider trace.TracerProvider
	// Keys, when set, sign every session event this process publishes with
	// the key of the service publishing it, and refuse, on every read,
	// events whose signature is missing or wrong, or by a service that may
	// not publish them (sign.go). Not a flag: the app gives its identity
	// (the mesh key or the process's issued credentials).
	Keys Keys
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		EventsMaxAge:    7 * 24 * time.Hour,
		WorkMaxAge:      7 * 24 * time.Hour,
		DuplicateWindow: 2 * time.Minute,
		AckWait:         30 * time.Second,
		MaxDeliver:      10,
		NakDelay:        200 * time.Millisecond,
		NakMaxDelay:     30 * time.Second,
		Replicas:        1,
		RequestTimeout:  5 * time.Second,
		RetryFor:        30 * time.Second,
	}
}

// RegisterFlags registers the -bus.* flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.EventsMaxAge, "bus.events-max-age", c.EventsMaxAge, "how long the "+StreamEvents+" stream keeps session events")
	fs.DurationVar(&c.WorkMaxAge, "bus.work-max-age", c.WorkMaxAge, "how long an unconsumed alert stays in the "+StreamWork+" work queue")
	fs.DurationVar(&c.DuplicateWindow, "bus.duplicate-window", c.DuplicateWindow, "how long message ids are remembered for idempotent publishing")
	fs.DurationVar(&c.AckWait, "bus.ack-wait", c.AckWait, "how long a durable consumer waits for an ack before redelivering")
	fs.IntVar(&c.MaxDeliver, "bus.max-deliver", c.MaxDeliver, "deliveries of one message to a durable consumer before it is given up")
	fs.IntVar(&c.Replicas, "nats.replicas", c.Replicas, "replicas of each JetStream stream and KV bucket: 1 for one server (the embedded default), 3 in a NATS cluster")
	fs.DurationVar(&c.RequestTimeout, "nats.request-timeout", c.RequestTimeout, "longest wait for one JetStream request (a publish's ack, a stream lookup) before it is retried or fails")
	fs.DurationVar(&c.RetryFor, "nats.retry-for", c.RetryFor, "how long a publish is retried (same message id, so stored once) while the NATS cluster fails over")
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.EventsMaxAge <= 0:
		return fmt.Errorf("bus: EventsMaxAge (-bus.events-max-age) must be positive, got %s", c.EventsMaxAge)
	case c.WorkMaxAge <= 0:
		return fmt.Errorf("bus: WorkMaxAge (-bus.work-max-age) must be positive, got %s", c.WorkMaxAge)
	case c.DuplicateWindow <= 0 || c.DuplicateWindow > c.EventsMaxAge:
		return fmt.Errorf("bus: DuplicateWindow (-bus.duplicate-window) must be positive and at most the max age, got %s", c.DuplicateWindow)
	case c.AckWait < time.Second:
		return fmt.Errorf("bus: AckWait (-bus.ack-wait) must be at least 1s, got %s", c.AckWait)
	case c.MaxDeliver < 1:
		return fmt.Errorf("bus: MaxDeliver (-bus.max-deliver) must be at least 1, got %d", c.MaxDeliver)
	case c.NakDelay <= 0 || c.NakMaxDelay < c.NakDelay:
		return fmt.Errorf("bus: NakDelay must be positive and at most NakMaxDelay, got %s and %s", c.NakDelay, c.NakMaxDelay)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("bus: Replicas (-nats.replicas) must be 1..5, got %d", c.Replicas)
	case c.RequestTimeout < 100*time.Millisecond:
		return fmt.Errorf("bus: RequestTimeout (-nats.request-timeout) must be at least 100ms, got %s", c.RequestTimeout)
	case c.RetryFor < 0:
		return fmt.Errorf("bus: RetryFor (-nats.retry-for) must not be negative, got %s", c.RetryFor)
	}
	return nil
}

// Bus publishes and consumes rcamesh events on JetStream. It is safe for
// concurrent use. It does not own the connection: the caller drains it.
type Bus struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	logger *slog.Logger
	cfg    Config
	kv     *kvCache
	// signer is the service whose name signs what this Bus publishes (As).
	signer string
	// verified remembers signatures already checked (sign.go).
	verified *verifiedCache
}

// kvCache is shared by a Bus and its As copies.
type kvCache struct {
	mu  sync.Mutex
	kvs map[string]jetstream.KeyValue
	// events is the handle of the events stream once looked up (a handle
	// only names the stream: every call on it asks the server afresh).
	events jetstream.Stream
}

// eventsStream returns the handle of the events stream, looking it up on
// first use only (each lookup is a request for the stream's whole info).
func (b *Bus) eventsStream(ctx context.Context) (jetstream.Stream, error) {
	b.kv.mu.Lock()
	st := b.kv.events
	b.kv.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := b.js.Stream(ctx, StreamEvents)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", StreamEvents, err)
	}
	b.kv.mu.Lock()
	b.kv.events = st
	b.kv.mu.Unlock()
	return st, nil
}

// Connect ensures the streams exist with the default configuration and
// returns a Bus on nc.
func Connect(ctx context.Context, nc *nats.Conn, logger *slog.Logger) (*Bus, error) {
	return ConnectConfig(ctx, nc, logger, DefaultConfig())
}

// ConnectConfig is Connect with explicit settings. Streams are created or
// updated (idempotent), so every process may call it at start-up.
func ConnectConfig(ctx context.Context, nc *nats.Conn, logger *slog.Logger, cfg Config) (*Bus, error) {
	if nc == nil {
		return nil, errors.New("bus: nil NATS connection")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc, jsOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	b := &Bus{nc: nc, js: js, logger: logger.With("component", "bus"), cfg: cfg, kv: &kvCache{kvs: map[string]jetstream.KeyValue{}}, verified: &verifiedCache{}}
	for _, sc := range b.streamConfigs() {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("bus: create or update stream %s: %w", sc.Name, err)
		}
	}
	return b, nil
}

// ConnectReader returns a Bus on nc for a client that may only read (the
// reader user): it neither creates nor updates streams.
func ConnectReader(nc *nats.Conn, cfg Config) *Bus {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout, cfg.RetryFor = DefaultConfig().RequestTimeout, DefaultConfig().RetryFor
	}
	js, _ := jetstream.New(nc, jsOptions(cfg)...) // fails only for a nil connection
	return &Bus{nc: nc, js: js, logger: slog.New(slog.DiscardHandler), cfg: cfg, kv: &kvCache{kvs: map[string]jetstream.KeyValue{}}, verified: &verifiedCache{}}
}

// jsOptions bound every JetStream request without a deadline of its own,
// and every asynchronous publish's ack, by cfg.RequestTimeout.
func jsOptions(cfg Config) []jetstream.JetStreamOpt {
	return []jetstream.JetStreamOpt{
		jetstream.WithDefaultTimeout(cfg.RequestTimeout),
		jetstream.WithPublishAsyncTimeout(cfg.RequestTimeout),
	}
}

func (b *Bus) streamConfigs() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		{
			Name:        StreamEvents,
			Description: "rcamesh session events (evidence pins and investigation lifecycle), contract " + Version,
			Subjects:    []string{SessionSubjects},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      b.cfg.EventsMaxAge,
			Duplicates:  b.cfg.DuplicateWindow,
			Replicas:    b.cfg.Replicas,
			Discard:     jetstream.DiscardOld,
		},
		{
			Name:        StreamWork,
			Description: "rcamesh work queue (alerts to investigate), contract " + Version,
			Subjects:    []string{WorkSubjects},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      b.cfg.WorkMaxAge,
			Duplicates:  b.cfg.DuplicateWindow,
			Replicas:    b.cfg.Replicas,
		},
	}
}

// Conn is the underlying NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream is the underlying JetStream context.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// PinMsgID is the idempotency key of a pin event. The session is escaped by
// Token (which never contains ':'), so two sessions never share a key.
func PinMsgID(session, pinID string, kind evidencev1.PinEventKind, version int64) string {
	return "pin:" + Token(session) + ":" + pinID + ":" + PinKindToken(kind) + ":" + strconv.FormatInt(version, 10)
}

// LifecycleMsgID is the idempotency key of a lifecycle event.
func LifecycleMsgID(session, eventID string) string {
	return "lifecycle:" + Token(session) + ":" + eventID
}

// PublishPin publishes a pin event on PinSubject(session, kind) and returns
// its stream sequence once JetStream has stored it. The session is
// ev.session_id, or the pin's session_id when that is empty. Republishing the
// same version of a pin is deduplicated and returns the first copy's sequence.
func (b *Bus) PublishPin(ctx context.Context, ev *evidencev1.PinEvent) (uint64, error) {
	subject, msgID, ev, err := pinMessage(ev)
	if err != nil {
		return 0, err
	}
	return b.publish(ctx, subject, msgID, EventKindPin, ev)
}

// PublishPins publishes a batch of pin events without waiting for each
// acknowledgement in turn: every message is sent at once (asynchronously),
// then every acknowledgement is awaited and checked. It returns the stream
// sequences in the order of evs, or the first error (events before it in
// the batch may be stored; republishing the batch is idempotent).
func (b *Bus) PublishPins(ctx context.Context, evs []*evidencev1.PinEvent) (seqs []uint64, err error) {
	return b.PublishPinsTraced(ctx, evs, nil)
}

// PublishPinsTraced is PublishPins for events that each belong to a trace
// of their own: traces[i], when there is one, is the context event i is
// published in (its producer span's parent, the trace its readers
// continue), as PublishPin would publish it alone. Without traces the
// batch has one producer span.
func (b *Bus) PublishPinsTraced(ctx context.Context, evs []*evidencev1.PinEvent, traces []context.Context) (seqs []uint64, err error) {
	if len(evs) == 0 {
		return nil, nil
	}
	// Every event is checked before the first is sent; each is then encoded
	// just before it is sent, so the server stores the first ones while the
	// rest are encoded.
	ids := make([]string, len(evs))
	subjects := make([]string, len(evs))
	checked := make([]*evidencev1.PinEvent, len(evs))
	for i, ev := range evs {
		if subjects[i], ids[i], checked[i], err = pinMessage(ev); err != nil {
			return nil, err
		}
	}
	var spans []trace.Span
	if len(traces) == 0 {
		var span trace.Span
		ctx, span = b.startProducer(ctx, SessionSubjects, fmt.Sprintf("batch of %d", len(evs)))
		spans = []trace.Span{span}
	} else {
		traces = slices.Clone(traces)
		for i := range evs {
			tctx := ctx
			if i < len(traces) && traces[i] != nil {
				tctx = traces[i]
			}
			tctx, span := b.startProducer(tctx, subjects[i], ids[i])
			if i < len(traces) {
				traces[i] = tctx
			} else {
				traces = append(traces, tctx)
			}
			spans = append(spans, span)
		}
	}
	defer func() {
		for _, span := range spans {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}()
	// Each event is encoded into a pooled buffer (publish's), given back
	// once the client no longer holds the message. The events are signed
	// in groups of up to signedBatchMax, one signature a group (signBatch):
	// a group is encoded and signed when its first event is to be sent.
	bufs := make([]*[]byte, len(evs))
	built := make([]*nats.Msg, len(evs))
	seqs, err = b.publishBatch(ctx, ids, func(i int) (*nats.Msg, error) {
		if built[i] != nil {
			return built[i], nil
		}
		start := i - i%signedBatchMax
		end := min(start+signedBatchMax, len(evs))
		for j := start; j < end; j++ {
			if built[j] != nil {
				continue
			}
			mctx := ctx
			if len(traces) > 0 {
				mctx = traces[j]
			}
			buf := payloadBuffers.Get().(*[]byte)
			msg, err := b.unsignedMessageIn(mctx, subjects[j], EventKindPin, checked[j], *buf)
			if err != nil {
				payloadBuffers.Put(buf)
				return nil, err
			}
			*buf, bufs[j], built[j] = msg.Data, buf, msg
		}
		if err := b.signBatch(built[start:end]); err != nil {
			return nil, err
		}
		return built[i], nil
	}, func(i int) {
		if buf := bufs[i]; buf != nil && cap(*buf) <= maxPooledPayload {
			payloadBuffers.Put(buf)
		}
	})
	if err != nil {
		metrics.NATSPublished.WithLabelValues(EventKindPin, "error").Add(float64(len(evs)))
		return nil, err
	}
	metrics.NATSPublished.WithLabelValues(EventKindPin, "ok").Add(float64(len(evs)))
	return seqs, nil
}

// pinMessage checks a pin event and returns its subject, message id and the
// event with its session, id and time filled in.
func pinMessage(ev *evidencev1.PinEvent) (string, string, *evidencev1.PinEvent, error) {
	if ev == nil {
		return "", "", nil, errors.New("bus: nil pin event")
	}
	if ev.GetPin() == nil {
		return "", "", nil, errors.New("bus: pin event has no pin")
	}
	if ev.GetPin().GetId() == "" {
		return "", "", nil, errors.New("bus: pin event's pin has no id")
	}
	if _, ok := evidencev1.PinEventKind_name[int32(ev.GetKind())]; !ok || ev.GetKind() == evidencev1.PinEventKind_PIN_EVENT_KIND_UNSPECIFIED {
		return "", "", nil, fmt.Errorf("bus: pin event kind %v is not added, updated or rejected", ev.GetKind())
	}
	session := ev.GetSessionId()
	if session == "" {
		session = ev.GetPin().GetSessionId()
	}
	if session == "" {
		return "", "", nil, errors.New("bus: pin event has no session_id")
	}
	msgID := PinMsgID(session, ev.GetPin().GetId(), ev.GetKind(), ev.GetPin().GetVersion())
	if ev.GetSessionId() == "" || ev.GetEventId() == "" || ev.GetTime() == nil {
		ev = filledPinEvent(ev, session, msgID)
	}
	return PinSubject(session, ev.GetKind()), msgID, ev, nil
}

// filledPinEvent is ev with its session, event id and time filled in, for
// encoding only: a new event that shares ev's pin (never modified) instead
// of a deep copy of it, which cost a copy of every fact of the pin per
// publish. TestFilledPinEventCarriesEveryField fails when PinEvent gains a
// field this does not carry.
func filledPinEvent(ev *evidencev1.PinEvent, session, msgID string) *evidencev1.PinEvent {
	out := &evidencev1.PinEvent{
		EventId:   ev.GetEventId(),
		Kind:      ev.GetKind(),
		SessionId: session,
		Pin:       ev.GetPin(),
		Time:      ev.GetTime(),
	}
	if out.EventId == "" {
		out.EventId = msgID
	}
	if out.Time == nil {
		out.Time = timestamppb.Now()
	}
	if u := ev.ProtoReflect().GetUnknown(); len(u) > 0 {
		out.ProtoReflect().SetUnknown(u)
	}
	return out
}

// PublishLifecycle publishes a lifecycle event on LifecycleSubject(session,
// kind). An empty event_id is filled with a unique id; callers that retry
// should set it so that the retry is deduplicated.
func (b *Bus) PublishLifecycle(ctx context.Context, ev *evidencev1.LifecycleEvent) (uint64, error) {
	if ev == nil {
		return 0, errors.New("bus: nil lifecycle event")
	}
	if ev.GetSessionId() == "" {
		return 0, errors.New("bus: lifecycle event has no session_id")
	}
	if _, ok := evidencev1.LifecycleEventKind_name[int32(ev.GetKind())]; !ok || ev.GetKind() == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_UNSPECIFIED {
		return 0, fmt.Errorf("bus: lifecycle event kind %v is not a known kind", ev.GetKind())
	}
	if ev.GetEventId() == "" || ev.GetTime() == nil {
		ev = proto.CloneOf(ev)
		if ev.EventId == "" {
			ev.EventId = nuid.Next()
		}
		if ev.Time == nil {
			ev.Time = timestamppb.Now()
		}
	}
	msgID := LifecycleMsgID(ev.GetSessionId(), ev.GetEventId())
	return b.publish(ctx, LifecycleSubject(ev.GetSessionId(), ev.GetKind()), msgID, EventKindLifecycle, ev)
}

// message builds the stored form of an event: protobuf payload, headers
// and the trace context of ctx.
func (b *Bus) message(ctx context.Context, subject, kind string, payload proto.Message) (*nats.Msg, error) {
	return b.messageIn(ctx, subject, kind, payload, nil)
}

// messageIn is message with the payload encoded into buf (from its start),
// which the message then holds until it is sent.
func (b *Bus) messageIn(ctx context.Context, subject, kind string, payload proto.Message, buf []byte) (*nats.Msg, error) {
	msg, err := b.unsignedMessageIn(ctx, subject, kind, payload, buf)
	if err != nil {
		return nil, err
	}
	if err := b.sign(msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// unsignedMessageIn is messageIn without the signature (signBatch signs a
// group of such messages at once).
func (b *Bus) unsignedMessageIn(ctx context.Context, subject, kind string, payload proto.Message, buf []byte) (*nats.Msg, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	if err := protocheck.Timestamps(payload); err != nil {
		return nil, fmt.Errorf("bus: %s event on %s: %w", kind, subject, err)
	}
	data, err := proto.MarshalOptions{}.MarshalAppend(buf[:0], payload)
	if err != nil {
		return nil, fmt.Errorf("bus: marshal %s event: %w", kind, err)
	}
	// The header's values share one backing array (one allocation for all).
	vals := [...]string{kind, string(payload.ProtoReflect().Descriptor().FullName()), ContentType, b.nc.Opts.Name}
	msg := &nats.Msg{Subject: subject, Data: data, Header: make(nats.Header, 8)}
	msg.Header[HeaderEventKind] = vals[0:1:1]
	msg.Header[HeaderSchema] = vals[1:2:2]
	msg.Header[HeaderContentType] = vals[2:3:3]
	if vals[3] != "" {
		msg.Header[HeaderPublisher] = vals[3:4:4]
	}
	InjectTrace(ctx, msg.Header)
	return msg, nil
}

// payloadBuffers holds the buffers publish encodes events into (every pin
// and verdict of the fast path was a new one, about 4 KB);
// maxPooledPayload bounds what goes back (a rare huge event is not kept).
var payloadBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledPayload = 256 << 10

func (b *Bus) publish(ctx context.Context, subject, msgID, kind string, payload proto.Message) (seq uint64, err error) {
	ctx, span := b.startProducer(ctx, subject, msgID)
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	// The payload is encoded into a pooled buffer: the client copies a
	// message as it sends it (retries included) and keeps nothing of it
	// once the publish is acknowledged or given up.
	buf := payloadBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledPayload {
			payloadBuffers.Put(buf)
		}
	}()
	msg, err := b.messageIn(ctx, subject, kind, payload, *buf)
	if err != nil {
		return 0, err
	}
	*buf = msg.Data
	start := time.Now()
	ack, err := b.publishAcked(ctx, msg, msgID)
	metrics.NATSPublishDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.NATSPublished.WithLabelValues(kind, "error").Inc()
		return 0, fmt.Errorf("bus: publish %s: %w", subject, err)
	}
	if ack.Duplicate {
		metrics.NATSPublished.WithLabelValues(kind, "duplicate").Inc()
	} else {
		metrics.NATSPublished.WithLabelValues(kind, "ok").Inc()
	}
	if ack.Duplicate {
		b.logger.DebugContext(ctx, "duplicate publish ignored", "subject", subject, "msg_id", msgID, "seq", ack.Sequence)
	}
	return ack.Sequence, nil
}

// request bounds one JetStream API request by Config.RequestTimeout (see
// retry.go: a request in flight when its server dies is never answered).
func (b *Bus) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.RequestTimeout)
}

// Decode turns a stored message into a SessionEvent.
func Decode(subject string, seq uint64, header nats.Header, data []byte) (*evidencev1.SessionEvent, error) {
	return decode(subject, seq, header, data, false)
}

// decode is Decode, a pin's facts kept encoded when factsEncoded
// (FactsEncoded).
func decode(subject string, seq uint64, header nats.Header, data []byte, factsEncoded bool) (*evidencev1.SessionEvent, error) {
	return decodeChecked(subject, seq, header, data, factsEncoded, true)
}

// decodeChecked is decode, a pin's facts kept encoded checked as
// protobuf-go would decode them only when checkFacts (Bus.open passes
// false for an event this process encoded and signed: ownFactsMax).
func decodeChecked(subject string, seq uint64, header nats.Header, data []byte, factsEncoded, checkFacts bool) (*evidencev1.SessionEvent, error) {
	kind := ""
	if header != nil {
		kind = headerCarrier(header).Get(HeaderEventKind)
	}
	out := &evidencev1.SessionEvent{Sequence: seq, Subject: subject}
	switch kind {
	case EventKindPin:
		ev := &evidencev1.PinEvent{}
		if err := unmarshalPinEvent(data, ev, factsEncoded, checkFacts); err != nil {
			return nil, fmt.Errorf("bus: decode pin event seq %d: %w", seq, err)
		}
		out.Event = &evidencev1.SessionEvent_Pin{Pin: ev}
	case EventKindLifecycle:
		ev := &evidencev1.LifecycleEvent{}
		if err := proto.Unmarshal(data, ev); err != nil {
			return nil, fmt.Errorf("bus: decode lifecycle event seq %d: %w", seq, err)
		}
		out.Event = &evidencev1.SessionEvent_Lifecycle{Lifecycle: ev}
	default:
		return nil, fmt.Errorf("bus: message seq %d on %s has %s %q, want %q or %q", seq, subject, HeaderEventKind, kind, EventKindPin, EventKindLifecycle)
	}
	return out, nil
}

// readOpts say how open decodes an event: with slim, a verdict without
// the content binding replaces (slimVerdict); with factsEncoded, a pin
// without decoding its facts (FactsEncoded).
type readOpts struct {
	slim, factsEncoded bool
}

// decodeMsg decodes a stored message after checking its signature (when
// the Bus has a signing key).
func (b *Bus) decodeMsg(ctx context.Context, msg jetstream.Msg, ro readOpts) (*evidencev1.SessionEvent, *jetstream.MsgMetadata, error) {
	md, err := msg.Metadata()
	if err != nil {
		return nil, nil, fmt.Errorf("bus: message metadata: %w", err)
	}
	ev, err := b.open(ctx, msg.Subject(), md.Sequence.Stream, msg.Headers(), msg.Data(), ro)
	return ev, md, err
}

func eventFilter(filter string) (string, error) {
	if filter == "" {
		return SessionSubjects, nil
	}
	return filter, checkSubject(filter)
}

// StartSequence is the first stream sequence to deliver to a reader whose
// cursor is fromSeq (it has seen every event up to fromSeq), given the
// stream's last sequence: fromSeq+1, where a cursor beyond the end of the
// stream is clamped to the end. So fromSeq 2^64-1 never wraps around to 0
// (which JetStream would read as "no start sequence"), and a cursor from the
// future delivers the next event instead of waiting for its own number.
func StartSequence(fromSeq, lastSeq uint64) uint64 {
	if fromSeq > lastSeq {
		fromSeq = lastSeq
	}
	if fromSeq == math.MaxUint64 {
		return math.MaxUint64
	}
	return fromSeq + 1
}

// lastSequence is the last sequence of the events stream.
func (b *Bus) lastSequence(ctx context.Context) (uint64, error) {
	rctx, cancel := b.request(ctx)
	defer cancel()
	st, err := b.js.Stream(rctx, StreamEvents)
	if err != nil {
		return 0, fmt.Errorf("bus: stream %s: %w", StreamEvents, err)
	}
	return st.CachedInfo().State.LastSeq, nil
}

// Replay returns the stored events matching filter ("" = every session
// event) whose sequence is greater than fromSeq, oldest first, as of the
// call; it does not wait for new events. With keys, every critic verdict
// is bound to the pin it judges (verdictBinder): the content is the added
// pin's, the verdict adds its own fields only.
func (b *Bus) Replay(ctx context.Context, filter string, fromSeq uint64) ([]*evidencev1.SessionEvent, error) {
	evs, err := b.replay(ctx, filter, fromSeq)
	if err != nil {
		return nil, err
	}
	vb := b.newVerdictBinder(false, false)
	out := evs[:0]
	for _, ev := range evs {
		keep, err := vb.bind(ctx, ev, nil)
		if err != nil {
			return nil, fmt.Errorf("bus: replay: %w", err)
		}
		if keep {
			out = append(out, ev)
		}
	}
	return out, nil
}

// replay is Replay without the binding of verdicts (with keys, a verdict's
// content is not decoded: binding replaces it). A read that meets a
// stream without a leader (a node lost, an election under way) is made again
// from the start for up to Config.RetryFor.
func (b *Bus) replay(ctx context.Context, filter string, fromSeq uint64) ([]*evidencev1.SessionEvent, error) {
	waits := newRetryWaits(b.cfg.RetryFor)
	for {
		evs, err := b.replayOnce(ctx, filter, fromSeq)
		if err == nil || !retryable(err) || !waits.wait(ctx) {
			return evs, err
		}
		b.logger.DebugContext(ctx, "replay retried", "filter", filter, "err", err)
	}
}

func (b *Bus) replayOnce(ctx context.Context, filter string, fromSeq uint64) ([]*evidencev1.SessionEvent, error) {
	filter, err := eventFilter(filter)
	if err != nil {
		return nil, err
	}
	if fromSeq > 0 {
		last, err := b.lastSequence(ctx)
		if err != nil {
			return nil, fmt.Errorf("bus: replay %s: %w", filter, err)
		}
		if fromSeq >= last {
			return nil, nil // nothing after the cursor
		}
	}
	cctx, cancel := b.request(ctx)
	defer cancel()
	cons, err := b.js.CreateConsumer(cctx, StreamEvents, jetstream.ConsumerConfig{
		FilterSubject:     filter,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       fromSeq + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: replay %s: create consumer: %w", filter, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		// Best effort: the inactive threshold removes it anyway.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, StreamEvents, name)
	}()
	pending := cons.CachedInfo().NumPending
	out := make([]*evidencev1.SessionEvent, 0, min(pending, 4096))
	for uint64(len(out)) < pending {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bus: replay %s: %w", filter, err)
		}
		batch, err := cons.Fetch(int(min(pending-uint64(len(out)), 512)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("bus: replay %s: fetch: %w", filter, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			ev, md, err := b.decodeMsg(ctx, msg, readOpts{slim: true})
			if err != nil {
				b.logger.WarnContext(ctx, "replay skips undecodable message", "subject", msg.Subject(), "err", err)
				if md != nil && md.NumPending == 0 {
					pending = uint64(len(out))
				} else {
					pending--
				}
				continue
			}
			out = append(out, ev)
			if md.NumPending == 0 {
				pending = uint64(len(out)) // caught up (messages may have aged out meanwhile)
			}
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("bus: replay %s: fetch: %w", filter, err)
		}
		if n == 0 {
			// Nothing arrived: the rest may have aged out since the snapshot.
			ictx, icancel := b.request(ctx)
			info, err := cons.Info(ictx)
			icancel()
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
				break
			}
			return nil, fmt.Errorf("bus: replay %s: no progress after %d of %d events", filter, len(out), pending)
		}
	}
	return out, nil
}

// Follow delivers the events matching filter ("" = every session event) whose
// sequence is greater than fromSeq (0 = from the start), in stream order,
// then every new one as it arrives, through an ordered ephemeral consumer. A
// fromSeq beyond the stream's last sequence is clamped to it (StartSequence).
// It blocks until ctx is done (and returns nil) or fn returns an error
// (returned wrapped). fn's context carries the publisher's trace context.
func (b *Bus) Follow(ctx context.Context, filter string, fromSeq uint64, fn func(context.Context, *evidencev1.SessionEvent) error, opts ...ReadOption) error {
	var fo readOptions
	for _, o := range opts {
		o(&fo)
	}
	filter, err := eventFilter(filter)
	if err != nil {
		return err
	}
	start := uint64(1)
	if fromSeq > 0 {
		last, err := b.lastSequence(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bus: follow %s: %w", filter, err)
		}
		start = StartSequence(fromSeq, last)
	}
	rctx, cancel := b.request(ctx)
	defer cancel()
	cons, err := b.js.OrderedConsumer(rctx, StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    start,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("bus: follow %s: %w", filter, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("bus: follow %s: %w", filter, err)
	}
	defer it.Stop()
	vb := b.newVerdictBinder(true, fo.factsEncoded)
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bus: follow %s: %w", filter, err)
		}
		ev, md, err := b.decodeMsg(ctx, msg, readOpts{slim: vb != nil, factsEncoded: fo.factsEncoded})
		if err != nil {
			b.logger.WarnContext(ctx, "follow skips undecodable message", "subject", msg.Subject(), "err", err)
			continue
		}
		if keep, err := vb.bind(ctx, ev, msg.Data()); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bus: follow %s: %w", filter, err)
		} else if !keep {
			continue
		}
		if err := b.handle(ctx, msg, md, "follow", func(hctx context.Context) error { return fn(hctx, ev) }); err != nil {
			return fmt.Errorf("bus: follow %s: handler for seq %d: %w", filter, ev.GetSequence(), err)
		}
	}
}

// handle runs fn inside a consumer span whose parent is the publisher's trace context.
func (b *Bus) handle(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, consumer string, fn func(context.Context) error) error {
	hctx, span := b.startConsumer(ExtractTrace(ctx, msg.Headers()), msg.Subject(), consumer, md.Sequence.Stream)
	defer span.End()
	err := fn(hctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// ConsumeDurable runs fn for every event matching filter through the durable
// pull consumer named durable on RCAMESH_EVENTS (created or updated; it
// starts with the oldest stored event and then remembers its position). A
// message is acked when fn returns nil and redelivered after a growing delay
// when fn returns an error, up to Config.MaxDeliver deliveries. Undecodable
// messages are terminated. It blocks until ctx is done and then returns nil.
func (b *Bus) ConsumeDurable(ctx context.Context, durable, filter string, fn func(context.Context, *evidencev1.SessionEvent) error, opts ...ReadOption) error {
	return b.ConsumeDurableBatches(ctx, durable, filter, Batching{}, func(_ context.Context, batch []Delivery) []error {
		return []error{fn(batch[0].Ctx, batch[0].Event)}
	}, opts...)
}

// Batching is how ConsumeDurableBatches gathers events into a batch: up
// to Max events (at least 1, at most MaxBatch), those already delivered to
// this client and those that arrive within Wait of the batch's first.
// The zero value hands over one event at a time.
type Batching struct {
	Max  int
	Wait time.Duration
}

// MaxBatch bounds Batching.Max: the client buffers that many messages.
const MaxBatch = 256

// Delivery is one event of a batch: Ctx carries its consumer span, whose
// parent is the publisher's trace context (work done for the event, such as
// publishing an event in answer, belongs under it).
type Delivery struct {
	Ctx   context.Context
	Event *evidencev1.SessionEvent
}

// ConsumeDurableBatches is ConsumeDurable for a handler of batches: fn gets
// the events of a batch in stream order and returns, in the same order, the
// result of each (a nil or short slice: the events without one succeeded).
// Each message is then acked, redelivered or given up on its own result, as
// ConsumeDurable does; an undecodable one is terminated without reaching fn.
// A batch spares fn the per-event costs it can share (a lock, a lease, one
// wait for the acknowledgements of everything it publishes), and gathering
// for Wait moves that work off the moment each event arrives.
func (b *Bus) ConsumeDurableBatches(ctx context.Context, durable, filter string, batching Batching, fn func(context.Context, []Delivery) []error, opts ...ReadOption) error {
	var ro readOptions
	for _, o := range opts {
		o(&ro)
	}
	if durable == "" {
		return errors.New("bus: durable consumer needs a name")
	}
	batching.Max = min(max(batching.Max, 1), MaxBatch)
	batching.Wait = max(batching.Wait, 0)
	filter, err := eventFilter(filter)
	if err != nil {
		return err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "rcamesh durable consumer of " + filter,
		FilterSubject: filter,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.cfg.AckWait,
		MaxDeliver:    b.cfg.MaxDeliver,
		MaxAckPending: 1024,
		Replicas:      b.cfg.Replicas,
	}
	return b.consumeResilient(ctx, StreamEvents, cfg, max(64, batching.Max), batching, func(ctx context.Context, msgs []received) []error {
		errs := make([]error, len(msgs))
		batch := make([]Delivery, 0, len(msgs))
		at := make([]int, 0, len(msgs)) // batch[k] is msgs[at[k]]
		for i, m := range msgs {
			ev, err := b.open(m.ctx, m.msg.Subject(), m.md.Sequence.Stream, m.msg.Headers(), m.msg.Data(), readOpts{factsEncoded: ro.factsEncoded})
			if err != nil {
				errs[i] = errPoison{err}
				continue
			}
			batch = append(batch, Delivery{Ctx: m.ctx, Event: ev})
			at = append(at, i)
		}
		if len(batch) == 0 {
			return errs
		}
		for k, err := range fn(ctx, batch) {
			if k < len(at) {
				errs[at[k]] = err
			}
		}
		return errs
	})
}

// Enqueue puts payload on the work queue under msgID (EnqueueKeyed with
// msgID as the key). Enqueueing the same msgID again within the duplicate
// window is a no-op.
func (b *Bus) Enqueue(ctx context.Context, msgID string, payload []byte) error {
	return b.EnqueueKeyed(ctx, msgID, msgID, payload)
}

// EnqueueKeyed puts payload on the work queue on WorkSubject(key), with
// msgID as its idempotency key (the same msgID within the duplicate window
// is a no-op). The key names the work item, so WorkPending(key) can tell
// whether the queue still holds it.
func (b *Bus) EnqueueKeyed(ctx context.Context, key, msgID string, payload []byte) (err error) {
	if msgID == "" || key == "" {
		return errors.New("bus: enqueue needs a key and a message id")
	}
	subject := WorkSubject(key)
	if err := checkSubject(subject); err != nil {
		return err
	}
	ctx, span := b.startProducer(ctx, subject, msgID)
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	msg := &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{}}
	InjectTrace(ctx, msg.Header)
	start := time.Now()
	ack, err := b.publishAcked(ctx, msg, msgID)
	metrics.NATSPublishDuration.WithLabelValues(EventKindWork).Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.NATSPublished.WithLabelValues(EventKindWork, "error").Inc()
		return fmt.Errorf("bus: enqueue %s: %w", msgID, err)
	}
	result := "ok"
	if ack.Duplicate {
		result = "duplicate"
	}
	metrics.NATSPublished.WithLabelValues(EventKindWork, result).Inc()
	return nil
}

// WorkPending says whether the work queue still holds an item enqueued under
// key: waiting, or delivered and not yet acknowledged (a work-queue stream
// removes an item only when it is acknowledged or terminated).
func (b *Bus) WorkPending(ctx context.Context, key string) (bool, error) {
	ctx, cancel := b.request(ctx)
	defer cancel()
	st, err := b.js.Stream(ctx, StreamWork)
	if err != nil {
		return false, fmt.Errorf("bus: stream %s: %w", StreamWork, err)
	}
	_, err = st.GetLastMsgForSubject(ctx, WorkSubject(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("bus: work item %s: %w", key, err)
	}
	return true, nil
}

// ConsumeWork runs fn for each work item through the shared durable
// "brain-work": every item goes to one consumer in the cluster, one at a time
// per call. Acked when fn returns nil, redelivered with backoff on error. It
// blocks until ctx is done and then returns nil.
func (b *Bus) ConsumeWork(ctx context.Context, fn func(context.Context, []byte) error) error {
	cfg := jetstream.ConsumerConfig{
		Durable:     ConsumerWork,
		Description: "rcamesh shared work-queue consumer",
		// The plain subject holds items enqueued by older versions.
		FilterSubjects: []string{SubjectWorkAlert, SubjectWorkAlert + ".>"},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        b.cfg.AckWait,
		MaxDeliver:     b.cfg.MaxDeliver,
		MaxAckPending:  256,
		Replicas:       b.cfg.Replicas,
	}
	// One message buffered at a time: an investigation can outlive AckWait of
	// messages waiting in a client buffer.
	return b.consumeResilient(ctx, StreamWork, cfg, 1, Batching{Max: 1}, func(_ context.Context, msgs []received) []error {
		return []error{fn(msgs[0].ctx, msgs[0].msg.Data())}
	})
}

// ErrHeldElsewhere is returned by a work handler that found another consumer
// holding its message (a redelivery of it, after this one stalled past
// AckWait): the message is neither acknowledged nor handed back. An ack would
// settle the other holder's delivery too (acks name the stream sequence), so a
// holder that then died would leave the work with nobody; a nak would have it
// redelivered while the holder still works on it. Left alone, it is settled by
// the holder, or redelivered after AckWait if the holder stops renewing it.
var ErrHeldElsewhere = errors.New("bus: message held by another consumer")

// errPoison marks a message that can never succeed.
type errPoison struct{ err error }

func (e errPoison) Error() string { return e.err.Error() }
func (e errPoison) Unwrap() error { return e.err }

// consumeResilient creates (or updates) the durable consumer cfg on stream
// and consumes it until ctx is done. Whatever interrupts consuming (the
// consumer's leader moved to another node after one died, heartbeats were
// missed while the cluster elected, the consumer was deleted) is logged and
// the consumer is created again after a growing delay; only a connection
// closed for good ends it with an error.
func (b *Bus) consumeResilient(ctx context.Context, stream string, cfg jetstream.ConsumerConfig, buffer int, batching Batching,
	fn func(context.Context, []received) []error) error {
	log := b.logger.With("consumer", cfg.Durable)
	wait := 100 * time.Millisecond
	for {
		rctx, cancel := b.request(ctx)
		cons, err := b.js.CreateOrUpdateConsumer(rctx, stream, cfg)
		cancel()
		if err == nil {
			err = b.consume(ctx, cons, cfg.Durable, buffer, batching, fn)
			if err == nil {
				return nil // ctx is done
			}
			wait = 100 * time.Millisecond // it was consuming: retry soon
		}
		if ctx.Err() != nil {
			return nil
		}
		if b.nc.IsClosed() {
			return fmt.Errorf("bus: consumer %s on %s: %w", cfg.Durable, cfg.FilterSubject, err)
		}
		log.WarnContext(ctx, "consumer interrupted; creating it again", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Second)
	}
}

// received is one message of a batch: its metadata and its context, which
// carries the message's consumer span.
type received struct {
	msg jetstream.Msg
	md  *jetstream.MsgMetadata
	ctx context.Context
}

func (b *Bus) consume(ctx context.Context, cons jetstream.Consumer, name string, buffer int, batching Batching,
	fn func(context.Context, []received) []error) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(buffer))
	if err != nil {
		return fmt.Errorf("bus: consumer %s: %w", name, err)
	}
	log := b.logger.With("consumer", name)
	defer b.release(it, log)
	batch := make([]received, 0, batching.Max)
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bus: consumer %s: %w", name, err)
		}
		batch = batch[:0]
		batch, err = b.gather(ctx, it, log, name, msg, batch, batching)
		if len(batch) > 0 && b.settle(ctx, log, name, batch, fn) {
			return nil
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bus: consumer %s: %w", name, err)
		}
	}
}

// drainWait is how long gather waits for one more message that the
// client may already hold: long enough that the client's own wait cannot
// end first while one is there (a select picks at random among ready
// cases, and a timer of a microsecond is ready at once).
const drainWait = 100 * time.Microsecond

// gather returns the batch that starts with first: the messages this
// client already holds, up to batching.Max; when that is fewer, it sleeps
// until batching.Wait after first came and takes those that arrived
// meanwhile (a sleep, not a wait for each message: waking the consumer as
// each one arrives cost the cores the work the batch is meant to let
// through first). An error is the iterator's (a timeout is not one).
func (b *Bus) gather(ctx context.Context, it jetstream.MessagesContext, log *slog.Logger, name string, first jetstream.Msg, batch []received, batching Batching) ([]received, error) {
	until := time.Now().Add(batching.Wait)
	add := func(msg jetstream.Msg) {
		md, err := msg.Metadata()
		if err != nil {
			log.WarnContext(ctx, "message without metadata terminated", "subject", msg.Subject(), "err", err)
			_ = msg.Term()
			return
		}
		metrics.NATSConsumerPending.WithLabelValues(name).Set(float64(md.NumPending))
		batch = append(batch, received{msg: msg, md: md})
	}
	add(first)
	for slept := batching.Wait <= 0; ; slept = true {
		for len(batch) < batching.Max {
			msg, err := it.Next(jetstream.NextMaxWait(drainWait))
			if errors.Is(err, nats.ErrTimeout) {
				break
			}
			if err != nil {
				return batch, err
			}
			add(msg)
		}
		if slept || len(batch) >= batching.Max {
			return batch, nil
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-ctx.Done():
			t.Stop()
			return batch, nil
		case <-t.C:
		}
	}
}

// settle runs fn over a batch, each message in its consumer span, then
// acks, redelivers or gives up each message on its result. It reports
// whether consuming must stop (ctx is done: the messages not acked are
// handed back at once for another instance).
func (b *Bus) settle(ctx context.Context, log *slog.Logger, name string, batch []received, fn func(context.Context, []received) []error) (done bool) {
	spans := make([]trace.Span, len(batch))
	for i := range batch {
		r := &batch[i]
		r.ctx, spans[i] = b.startConsumer(ExtractTrace(ctx, r.msg.Headers()), r.msg.Subject(), name, r.md.Sequence.Stream)
	}
	var errs []error
	_ = b.withProgress(ctx, batch, func() error {
		errs = fn(ctx, batch)
		return nil
	})
	for i, r := range batch {
		var herr error
		if i < len(errs) {
			herr = errs[i]
		}
		if herr != nil {
			spans[i].RecordError(herr)
			spans[i].SetStatus(codes.Error, herr.Error())
		}
		spans[i].End()
		msg, md := r.msg, r.md
		metrics.NATSConsumed.WithLabelValues(name, consumeResult(ctx, herr, md.NumDelivered, b.cfg.MaxDeliver)).Inc()
		switch {
		case herr == nil:
			if err := msg.Ack(); err != nil {
				log.WarnContext(ctx, "ack failed; the message will be redelivered", "seq", md.Sequence.Stream, "err", err)
			}
		case errors.Is(herr, ErrHeldElsewhere):
			log.DebugContext(ctx, "message left to the consumer that holds it", "subject", msg.Subject(), "seq", md.Sequence.Stream)
		case errors.As(herr, new(errPoison)):
			log.ErrorContext(ctx, "undecodable message terminated", "subject", msg.Subject(), "seq", md.Sequence.Stream, "err", herr)
			_ = msg.TermWithReason("undecodable")
		case ctx.Err() != nil:
			// Shutting down: hand the message back at once for another instance.
			_ = msg.Nak()
			done = true
		case md.NumDelivered >= uint64(b.cfg.MaxDeliver):
			log.ErrorContext(ctx, "handler failed on the last delivery; message given up", "subject", msg.Subject(), "seq", md.Sequence.Stream, "deliveries", md.NumDelivered, "err", herr)
			_ = msg.TermWithReason("max deliveries: " + herr.Error())
		default:
			delay := b.nakDelay(md.NumDelivered)
			log.WarnContext(ctx, "handler failed; message will be redelivered", "subject", msg.Subject(), "seq", md.Sequence.Stream, "deliveries", md.NumDelivered, "retry_in", delay, "err", herr)
			_ = msg.NakWithDelay(delay)
		}
	}
	return done
}

// consumeResult is the result label of one handled message: what consume does with it.
func consumeResult(ctx context.Context, herr error, delivered uint64, maxDeliver int) string {
	switch {
	case herr == nil:
		return "ack"
	case errors.Is(herr, ErrHeldElsewhere):
		return "left"
	case errors.As(herr, new(errPoison)), ctx.Err() == nil && delivered >= uint64(maxDeliver):
		return "term"
	}
	return "nak"
}

// release stops pulling and hands every message already delivered to this
// client back to the server at once (instead of after AckWait), so another
// instance or a restart gets it without delay.
func (b *Bus) release(it jetstream.MessagesContext, log *slog.Logger) {
	it.Drain()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		msg, err := it.Next(jetstream.NextMaxWait(time.Until(deadline)))
		if err != nil {
			break // ErrMsgIteratorClosed once the subscription is drained
		}
		if err := msg.Nak(); err != nil {
			log.Debug("nak on release failed", "subject", msg.Subject(), "err", err)
		}
	}
	it.Stop()
	if err := b.nc.FlushTimeout(5 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		log.Debug("flush on release failed", "err", err)
	}
}

func (b *Bus) nakDelay(delivered uint64) time.Duration {
	d := b.cfg.NakDelay
	for i := uint64(1); i < delivered && d < b.cfg.NakMaxDelay; i++ {
		d *= 2
	}
	return min(d, b.cfg.NakMaxDelay)
}

// withProgress runs fn while telling the server every AckWait/3 that the
// messages of batch are still being worked on. The reminder is a timer
// that sets itself again, not a goroutine per batch (started, scheduled
// and stopped for every pin the critic judges in well under AckWait/3); no
// reminder is sent once fn has returned.
func (b *Bus) withProgress(_ context.Context, batch []received, fn func() error) error {
	every := b.cfg.AckWait / 3
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, r := range batch {
			_ = r.msg.InProgress()
		}
		t.Reset(every)
	})
	mu.Unlock()
	err := fn()
	t.Stop()
	mu.Lock()
	stopped = true // a reminder under way has finished: mu was free
	mu.Unlock()
	return err
}

// KV returns the key-value bucket, creating it on first use (file storage).
func (b *Bus) KV(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	b.kv.mu.Lock()
	defer b.kv.mu.Unlock()
	if kv, ok := b.kv.kvs[bucket]; ok {
		return kv, nil
	}
	ctx, cancel := b.request(ctx)
	defer cancel()
	kv, err := b.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "rcamesh " + bucket,
			Storage:     jetstream.FileStorage,
			History:     1,
			Replicas:    b.cfg.Replicas,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("bus: KV bucket %q: %w", bucket, err)
	}
	b.kv.kvs[bucket] = kv
	return kv, nil
}

// IsConflict reports whether a KV write lost a compare-and-set race: Create
// of a key that exists, or Update at a revision that is no longer the last.
// Replicated (R>1) buckets report the race with other error codes than a
// single server, so callers must not match codes themselves.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// SessionPins is the number of pins added to a session (its pin.added
// events, one per pin: republishing is deduplicated), from the stream's
// per-subject counts.
func (b *Bus) SessionPins(ctx context.Context, session string) (uint64, error) {
	subject := PinSubject(session, evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED)
	if err := checkSubject(subject); err != nil {
		return 0, err
	}
	ctx, cancel := b.request(ctx)
	defer cancel()
	st, err := b.eventsStream(ctx)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("bus: pins of %s: %w", session, err)
	}
	return info.State.Subjects[subject], nil
}
