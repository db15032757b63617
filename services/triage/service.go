// Package triage is the SAST triage service: POST
// /api/v4/findings takes a SARIF 2.1.0 document and a checkout under the
// code root, triages every finding (internal/sast: the offline analyser or
// the model agent, the skeptical evaluator, the bounded loop) and publishes
// one pin per finding and the run's lifecycle events on the session stream,
// like any investigation.
package triage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/redact"
	"github.com/rcamesh/rcamesh/internal/sast"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
	"github.com/rcamesh/rcamesh/internal/sessionid"
)

// Config is the service's flags ("-triage.<name>").
type Config struct {
	// CodeRoot holds the checkouts requests may name; empty: the service refuses.
	CodeRoot string
	// Parallel bounds the findings investigated at once.
	Parallel int
	// MaxFindings bounds one request.
	MaxFindings int
	// MaxToolCalls is the per-finding tool-call breaker.
	MaxToolCalls int
	// AllowClone lets repo be a git URL, cloned shallow with go-git into a
	// temporary folder under the code root for the request.
	AllowClone bool
}

// DefaultConfig is the documented defaults.
func DefaultConfig() Config {
	return Config{Parallel: 2, MaxFindings: 5000, MaxToolCalls: sast.DefaultLimits().MaxToolCalls}
}

// RegisterFlags binds the fields to flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CodeRoot, "triage.code-root", c.CodeRoot, "folder of the checkouts POST /api/v4/findings may read (empty: refuse)")
	fs.IntVar(&c.Parallel, "triage.parallel", c.Parallel, "findings investigated at once")
	fs.IntVar(&c.MaxFindings, "triage.max-findings", c.MaxFindings, "findings per request at most")
	fs.IntVar(&c.MaxToolCalls, "triage.max-tool-calls", c.MaxToolCalls, "per-finding tool-call circuit breaker")
	fs.BoolVar(&c.AllowClone, "triage.allow-clone", c.AllowClone, "accept a git URL as repo (shallow go-git clone under the code root, removed after the request)")
}

// Validate reports invalid fields.
func (c *Config) Validate() error {
	if c.Parallel < 1 || c.MaxFindings < 1 || c.MaxToolCalls < 1 {
		return fmt.Errorf("triage: parallel, max-findings and max-tool-calls must be >= 1 (got %d, %d, %d)", c.Parallel, c.MaxFindings, c.MaxToolCalls)
	}
	return nil
}

// Deps are the service's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Bus may be nil (tests without a stream): nothing is published.
	Bus *bus.Bus
	// LLM, when set, drives the model agent; nil: the offline analyser.
	LLM llm.Provider
	// Critic judges every evidence package (EvaluateFinding), over gRPC.
	Critic criticv1.CriticServiceClient
}

// Service implements triagev1.TriageServiceServer.
type Service struct {
	triagev1.UnimplementedTriageServiceServer
	cfg    Config
	log    *slog.Logger
	bus    *bus.Bus
	llm    llm.Provider
	critic criticv1.CriticServiceClient
}

// New builds the service.
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if d.Critic == nil {
		return nil, errors.New("triage: the critic client is required (the evaluator)")
	}
	return &Service{cfg: cfg, log: log, bus: d.Bus, llm: d.LLM, critic: d.Critic}, nil
}

// Register implements app.Module.
func (s *Service) Register(gs *grpc.Server) { triagev1.RegisterTriageServiceServer(gs, s) }

// RegisterGateway implements app.Module.
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	return triagev1.RegisterTriageServiceHandler(ctx, mux, conn)
}

// Run implements app.Module: the service has no background loop.
func (s *Service) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// TriageFindings implements triagev1.TriageServiceServer.
func (s *Service) TriageFindings(ctx context.Context, req *triagev1.TriageFindingsRequest) (*triagev1.TriageFindingsResponse, error) {
	if s.cfg.CodeRoot == "" {
		return nil, status.Error(codes.FailedPrecondition, "triage: no code root configured (-triage.code-root)")
	}
	if req.GetSarif() == nil {
		return nil, status.Error(codes.InvalidArgument, "triage: sarif is required")
	}
	if strings.TrimSpace(req.GetRepo()) == "" {
		return nil, status.Error(codes.InvalidArgument, "triage: repo is required")
	}
	doc, err := req.GetSarif().MarshalJSON()
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "triage: sarif: "+err.Error())
	}
	findings, err := sast.ParseSARIF(doc)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(findings) > s.cfg.MaxFindings {
		return nil, status.Errorf(codes.InvalidArgument, "triage: %d findings > %d (-triage.max-findings)", len(findings), s.cfg.MaxFindings)
	}
	dir := req.GetRepo()
	if repo.IsURL(dir) {
		if !s.cfg.AllowClone {
			return nil, status.Error(codes.PermissionDenied, "triage: repo is a URL and cloning is off (-triage.allow-clone)")
		}
		if strings.HasPrefix(dir, "file://") {
			return nil, status.Error(codes.PermissionDenied, "triage: file:// URLs would read outside the code root")
		}
		tmp, err := os.MkdirTemp(s.cfg.CodeRoot, ".clone-")
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		defer os.RemoveAll(tmp)
		if err := repo.Clone(ctx, dir, tmp); err != nil {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		dir = tmp
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cfg.CodeRoot, dir)
	}
	r, err := repo.Open(dir, s.cfg.CodeRoot)
	if err != nil {
		if errors.Is(err, repo.ErrOutside) {
			return nil, status.Error(codes.PermissionDenied, err.Error())
		}
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	session := req.GetSessionId()
	if session == "" {
		h := sha256.Sum256(append([]byte(req.GetRepo()+"\x00"), doc...))
		session = "triage-" + hex.EncodeToString(h[:6])
	}
	if err := sessionid.Check("session_id", session); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.lifecycle(ctx, session, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STARTED, "triage",
		fmt.Sprintf("SAST triage of %d findings in %s", len(findings), req.GetRepo()), nil)
	t := sast.NewTriager(r, &sast.CriticEvaluator{Client: s.critic, Session: session}, s.log)
	t.Parallel = s.cfg.Parallel
	t.Limits.MaxToolCalls = s.cfg.MaxToolCalls
	if s.llm != nil {
		t.Analyst = &sast.ModelAnalyst{Model: s.llm}
	}
	results := t.Run(ctx, findings)
	resp := &triagev1.TriageFindingsResponse{SessionId: session}
	for _, res := range results {
		fv := toProto(res)
		resp.Results = append(resp.Results, fv)
		switch fv.GetVerdict() {
		case triagev1.Verdict_VERDICT_TRUE_POSITIVE:
			resp.TruePositives++
		case triagev1.Verdict_VERDICT_FALSE_POSITIVE:
			resp.FalsePositives++
		default:
			resp.NeedsReview++
		}
		s.pin(ctx, session, res)
	}
	if out, err := sast.AnnotateSARIF(doc, results); err == nil {
		st := &structpb.Struct{}
		if err := st.UnmarshalJSON(out); err == nil {
			resp.Sarif = st
		}
	}
	s.lifecycle(ctx, session, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_COMPLETED, "triage",
		fmt.Sprintf("%d TRUE_POSITIVE, %d FALSE_POSITIVE, %d NEEDS_REVIEW", resp.TruePositives, resp.FalsePositives, resp.NeedsReview),
		map[string]any{"true_positives": resp.TruePositives, "false_positives": resp.FalsePositives, "needs_review": resp.NeedsReview})
	return resp, nil
}

var verdicts = map[string]triagev1.Verdict{
	javaflow.TruePositive:  triagev1.Verdict_VERDICT_TRUE_POSITIVE,
	javaflow.FalsePositive: triagev1.Verdict_VERDICT_FALSE_POSITIVE,
	javaflow.NeedsReview:   triagev1.Verdict_VERDICT_NEEDS_REVIEW,
}

func toProto(r sast.Result) *triagev1.FindingVerdict {
	fv := &triagev1.FindingVerdict{
		Index: int32(r.Finding.Index), RuleId: r.Finding.RuleID, File: r.Finding.File, StartLine: int32(r.Finding.StartLine),
		Category: r.Finding.Category, Verdict: verdicts[r.Verdict], Reason: redact.Text(r.Reason), Unknowns: r.Unknowns,
		NextFetches: r.NextFetches, StopReason: r.StopReason, Error: r.Error, Rejections: int32(len(r.Rejections)),
		Cost: &triagev1.Cost{ToolCalls: int32(r.Cost.ToolCalls), Iterations: int32(r.Cost.Iterations), WallMs: r.Cost.WallMS},
	}
	for _, c := range r.Claims {
		fv.Claims = append(fv.Claims, &triagev1.Claim{Id: c.ID, Text: c.Text, Status: c.Status, Evidence: c.Evidence})
	}
	for _, c := range r.Evidence {
		fv.Evidence = append(fv.Evidence, &triagev1.Citation{Id: c.ID, File: c.File, StartLine: int32(c.StartLine), EndLine: int32(c.EndLine),
			Snippet: redact.Text(c.Snippet), Note: redact.Text(c.Note)})
	}
	return fv
}

// pin publishes the finding's verdict as an evidence pin of the session.
func (s *Service) pin(ctx context.Context, session string, r sast.Result) {
	if s.bus == nil {
		return
	}
	conf := 90.0
	if r.Verdict == javaflow.NeedsReview {
		conf = 40
	}
	var snippets []string
	for _, c := range r.Evidence {
		snippets = append(snippets, redact.Text(fmt.Sprintf("%s:%d %s", c.File, c.StartLine, strings.TrimSpace(c.Snippet))))
	}
	// the finding's verdict, claims, cited code and unknowns, in the
	// API's JSON (proto names, enum names) for the war room
	md := map[string]any{}
	if b, err := (protojson.MarshalOptions{UseProtoNames: true}).Marshal(toProto(r)); err == nil {
		_ = json.Unmarshal(b, &md)
	}
	meta, err := structpb.NewStruct(md)
	if err != nil {
		meta = nil
	}
	p := &evidencev1.EvidencePin{
		Id:                 fmt.Sprintf("finding-%d", r.Finding.Index),
		Claim:              redact.Text(fmt.Sprintf("%s: %s at %s:%d: %s", r.Verdict, r.Finding.RuleID, r.Finding.File, r.Finding.StartLine, r.Reason)),
		SourceAgent:        "triage",
		SourceTool:         "sast_triage",
		EvidenceType:       evidencev1.EvidenceType_EVIDENCE_TYPE_CODE,
		Domain:             evidencev1.Domain_DOMAIN_SECURITY,
		SupportingEvidence: snippets,
		Confidence:         conf,
		SessionId:          session,
		ResourceName:       r.Finding.File,
		Timestamp:          timestamppb.Now(),
		Metadata:           meta,
		Success:            r.Error == "",
		Error:              redact.Text(r.Error),
	}
	if _, err := s.bus.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: session, Pin: p}); err != nil {
		s.log.Warn("triage: publish pin", "session", session, "finding", r.Finding.Index, "err", err)
	}
}

func (s *Service) lifecycle(ctx context.Context, session string, kind evidencev1.LifecycleEventKind, stage, msg string, details map[string]any) {
	if s.bus == nil {
		return
	}
	ev := &evidencev1.LifecycleEvent{Kind: kind, SessionId: session, Stage: stage, Message: msg, Time: timestamppb.New(time.Now())}
	if details != nil {
		if st, err := structpb.NewStruct(details); err == nil {
			ev.Details = st
		}
	}
	if _, err := s.bus.PublishLifecycle(ctx, ev); err != nil {
		s.log.Warn("triage: publish lifecycle", "session", session, "err", err)
	}
}
