// Package delivery is the DeliveryService: it renders an investigation into a
// markdown report, stores it (JetStream KV bucket rcamesh_reports, keyed by
// session), and ships it to Slack (Block Kit) and JSON webhooks with retries.
//
// Guardrails owned here (Config): the confidence gate (below 0.70 a report is
// stored silent, not paged) and de-duplication on the alert fingerprint
// within a window. Both are reported as trips in DeliverReportResponse, which
// the brain copies into the investigation record, and on the report itself
// (silent, deduplicated).
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/paging"
)

// Deps are delivery's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Bus may be nil: reports and fingerprint claims are then kept in memory
	// and the evidence table is built from the record's tool calls.
	Bus *bus.Bus
	// HTTPClient sends to destinations (a client with no redirects when nil).
	HTTPClient *http.Client
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Service implements deliveryv1.DeliveryServiceServer.
type Service struct {
	deliveryv1.UnimplementedDeliveryServiceServer

	cfg    Config
	log    *slog.Logger
	bus    *bus.Bus
	http   *http.Client
	now    func() time.Time
	dests  []destination
	store  *store
	outbox *outbox
}

// New builds the service; the config is validated and the Slack URL file read.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("delivery: %w", err)
	}
	if cfg.SlackWebhookURLFile != "" {
		raw, err := os.ReadFile(cfg.SlackWebhookURLFile)
		if err != nil {
			return nil, fmt.Errorf("delivery: delivery.slack-webhook-url-file: %w", err)
		}
		cfg.SlackWebhookURL = strings.TrimSpace(string(raw))
		if err := checkURL("delivery.slack-webhook-url-file", cfg.SlackWebhookURL); err != nil {
			return nil, fmt.Errorf("delivery: %w", err)
		}
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hc := deps.HTTPClient
	if hc == nil {
		hc = &http.Client{
			// A redirect could forward the body elsewhere; webhooks answer directly.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	s := &Service{cfg: cfg, log: logger.With("service", mesh.Delivery), bus: deps.Bus, http: hc, now: now, store: newStore(deps.Bus), outbox: newOutbox(deps.Bus)}
	if cfg.SlackWebhookURL != "" {
		s.dests = append(s.dests, destination{name: KindSlack, kind: KindSlack, url: cfg.SlackWebhookURL})
	}
	for i, u := range cfg.WebhookURLs {
		name := KindWebhook
		if len(cfg.WebhookURLs) > 1 {
			name = fmt.Sprintf("%s-%d", KindWebhook, i+1)
		}
		s.dests = append(s.dests, destination{name: name, kind: KindWebhook, url: u})
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Destinations lists the configured destination names (never their URLs).
func (s *Service) Destinations() []string {
	out := make([]string, len(s.dests))
	for i, d := range s.dests {
		out[i] = d.name
	}
	return out
}

// Register registers the DeliveryService on gs.
func (s *Service) Register(gs *grpc.Server) { deliveryv1.RegisterDeliveryServiceServer(gs, s) }

// RegisterGateway registers the REST routes (GET /api/v4/session/{id}/report,
// GET /api/v4/reports) on mux, calling the service through conn.
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	if err := deliveryv1.RegisterDeliveryServiceHandler(ctx, mux, conn); err != nil {
		return fmt.Errorf("delivery: register gateway: %w", err)
	}
	return nil
}

// Run resumes the outbox's pending pages (at start, which recovers the
// retries a crash interrupted, then every Config.OutboxInterval) until ctx
// is done; it returns nil then.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.OutboxInterval)
	defer t.Stop()
	for {
		if _, err := s.ResumeOutbox(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "delivery: outbox pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Service) link(session string) string {
	if s.cfg.ReportBaseURL == "" {
		return ""
	}
	return strings.TrimRight(s.cfg.ReportBaseURL, "/") + "/session/" + url.PathEscape(session)
}

// sessionPins reads the latest version of every pin of the session from the
// stream, in arrival order.
func (s *Service) sessionPins(ctx context.Context, session string) []*evidencev1.EvidencePin {
	if s.bus == nil || session == "" {
		return nil
	}
	evs, err := s.bus.Replay(ctx, bus.SessionFilter(session), 0)
	if err != nil {
		s.log.WarnContext(ctx, "delivery: session pins unavailable; evidence table from tool calls", "session", session, "err", err)
		return nil
	}
	var order []string
	latest := map[string]*evidencev1.EvidencePin{}
	for _, ev := range evs {
		pe := ev.GetPin()
		if pe == nil || pe.GetPin().GetId() == "" {
			continue
		}
		if sid := pe.GetSessionId(); sid != "" && sid != session {
			continue
		}
		p := pe.GetPin()
		cur, ok := latest[p.GetId()]
		if !ok {
			order = append(order, p.GetId())
		}
		if !ok || p.GetVersion() >= cur.GetVersion() {
			latest[p.GetId()] = p
		}
	}
	out := make([]*evidencev1.EvidencePin, 0, len(order))
	for _, id := range order {
		out = append(out, latest[id])
	}
	return out
}

// DeliverReport renders, gates, de-duplicates, sends and stores a report.
func (s *Service) DeliverReport(ctx context.Context, req *deliveryv1.DeliverReportRequest) (*deliveryv1.DeliverReportResponse, error) {
	rec := req.GetRecord()
	if rec == nil {
		return nil, status.Error(codes.InvalidArgument, "record is required")
	}
	session := req.GetSessionId()
	if session == "" {
		session = rec.GetSessionId()
	}
	if session == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required (in the request or the record)")
	}
	if rec.GetSessionId() != "" && rec.GetSessionId() != session {
		return nil, status.Errorf(codes.InvalidArgument, "session_id %q does not match record.session_id %q", session, rec.GetSessionId())
	}
	rec = redactMessage(rec)
	rec.SessionId = session
	pins := s.sessionPins(ctx, session)
	for i, p := range pins {
		pins[i] = redactMessage(p)
	}
	link := s.link(session)
	md := redact(renderMarkdown(rec, pins, link))
	if len(md) > s.cfg.MaxMarkdownBytes {
		cut := s.cfg.MaxMarkdownBytes - 64
		for cut > 0 && !utf8Start(md[cut]) {
			cut--
		}
		md = md[:cut] + "\n\n_… report truncated._\n"
	}
	d := rec.GetDiagnosis()
	rep := &investigationv1.Report{
		SessionId:       session,
		InvestigationId: rec.GetInvestigationId(),
		Markdown:        md,
		Fingerprint:     fingerprintOf(rec.GetAlert()),
		Confidence:      normConfidence(d.GetConfidence()),
		CreatedAt:       timestamppb.New(s.now()),
		Diagnosis:       d,
	}
	log := s.log.With("session", session, "investigation", rec.GetInvestigationId())
	failed := rec.GetState() == stateFailed
	var trips []*investigationv1.GuardrailTrip

	switch {
	case req.GetDryRun():
		log.InfoContext(ctx, "delivery: dry run; report stored, not sent")
	case d.GetStatus() == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE:
		rep.Silent = true
		log.InfoContext(ctx, "delivery: noise; report stored silent")
	case failed && !s.cfg.PageFailures:
		rep.Silent = true
		log.InfoContext(ctx, "delivery: failed investigation; report stored, not paged (delivery.page-failures=false)")
	case !failed && rep.GetConfidence() < s.cfg.ConfidenceGate:
		rep.Silent = true
		log.InfoContext(ctx, "delivery: below the confidence gate; report stored silent", "confidence", rep.GetConfidence(), "gate", s.cfg.ConfidenceGate)
		trips = append(trips, guardrail.Trip(GuardrailConfidenceGate,
			fmt.Sprintf("confidence %.2f below the gate %.2f: stored silent, not paged", rep.GetConfidence(), s.cfg.ConfidenceGate),
			s.cfg.ConfidenceGate, rep.GetConfidence(), s.now()))
	default:
		claimed := false
		if !failed {
			// A failure page neither claims nor is held by the fingerprint: the
			// fresh investigation of a re-sent alert pages its own result.
			ok, prev, err := s.store.claim(ctx, rep.GetFingerprint(), session, s.now(), s.cfg.DedupWindow)
			if err != nil {
				return nil, status.Error(codes.Unavailable, err.Error())
			}
			if !ok {
				rep.Deduplicated = true
				log.InfoContext(ctx, "delivery: alert fingerprint already paged within the window; not re-posted", "previous_session", prev, "window", s.cfg.DedupWindow)
				trips = append(trips, guardrail.Trip(GuardrailDedup,
					fmt.Sprintf("alert fingerprint already paged within %s (session %s): not re-posted", s.cfg.DedupWindow, prev),
					s.cfg.DedupWindow.Seconds(), 1, s.now()))
				break
			}
			claimed = rep.GetFingerprint() != "" && s.cfg.DedupWindow > 0
		}
		if err := s.page(ctx, rep, rec, claimed); err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
	}
	if err := s.store.putReport(context.WithoutCancel(ctx), rep); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &deliveryv1.DeliverReportResponse{Report: rep, Trips: trips, Limits: s.cfg.Limits()}, nil
}

// stateFailed is the record state of a failed investigation.
const stateFailed = "failed"

// page sends rep through the outbox: the entry is stored before the first
// try and removed only once every destination accepted the page (or the
// outbox gave up), so a crash during retries resumes them after a restart.
func (s *Service) page(ctx context.Context, rep *investigationv1.Report, rec *investigationv1.InvestigationRecord, claimed bool) error {
	if len(s.dests) == 0 {
		return nil
	}
	now := s.now()
	e := &outboxEntry{Session: rep.GetSessionId(), Investigation: rep.GetInvestigationId(), Fingerprint: rep.GetFingerprint(),
		Claimed: claimed, Created: now, NextAt: now, LeaseUntil: now.Add(s.leaseFor())}
	link := s.link(rep.GetSessionId())
	idem := rep.GetSessionId() + ":" + rep.GetFingerprint()
	if rec.GetState() == stateFailed {
		idem += ":failed"
	}
	for _, dest := range s.dests {
		body, err := s.payload(dest, rep, rec, link)
		if err != nil {
			rep.Attempts = append(rep.Attempts, &investigationv1.DeliveryAttempt{Destination: dest.name, Error: err.Error()})
			metrics.DeliveryAttempts.WithLabelValues(dest.kind, "failed").Inc()
			continue
		}
		e.Pending = append(e.Pending, outboxDest{Name: dest.name, Body: body, Idem: idem})
	}
	var err error
	if e.Report, err = proto.Marshal(rep); err != nil {
		return fmt.Errorf("delivery: encode report: %w", err)
	}
	rev, err := s.outbox.put(ctx, e, 0)
	if err != nil {
		if claimed {
			_ = s.store.release(context.WithoutCancel(ctx), rep.GetFingerprint(), rep.GetSessionId())
		}
		return err
	}
	done := s.sendRound(ctx, e, rep)
	s.settle(ctx, e, rev, rep, done)
	return nil
}

// GetReport returns a session's latest report.
func (s *Service) GetReport(ctx context.Context, req *deliveryv1.GetReportRequest) (*deliveryv1.GetReportResponse, error) {
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	r, err := s.store.getReport(ctx, req.GetSessionId())
	switch {
	case errors.Is(err, errNoReport):
		return nil, status.Errorf(codes.NotFound, "no report for session %q", req.GetSessionId())
	case err != nil:
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &deliveryv1.GetReportResponse{Report: r}, nil
}

// Report list limits.
const (
	DefaultListLimit = 20
	MaxListLimit     = 500
)

// ListReports lists a page of the stored reports, newest first.
func (s *Service) ListReports(ctx context.Context, req *deliveryv1.ListReportsRequest) (*deliveryv1.ListReportsResponse, error) {
	size, err := paging.Size(req.GetPageSize(), req.GetLimit(), DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	offset, err := paging.Offset("reports", req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	reps, err := s.store.listReports(ctx, 0)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	from, to, next := paging.Page("reports", len(reps), offset, size)
	return &deliveryv1.ListReportsResponse{Reports: reps[from:to], NextPageToken: next}, nil
}
