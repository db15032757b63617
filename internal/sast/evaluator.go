package sast

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
)

// Citation is a piece of raw code evidence.
type Citation struct {
	ID        string `json:"id"`
	File      string `json:"file"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Snippet   string `json:"snippet"`
	Note      string `json:"note,omitempty"`
}

// Claim is an atomic assertion with the citations that show it.
type Claim struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Status   string   `json:"status"` // supported | tentative | rejected | conflicting
	Evidence []string `json:"evidence"`
}

// Package is the evidence package the agent submits to the evaluator.
type Package struct {
	Category string     `json:"category"`
	Verdict  string     `json:"verdict"`
	Analysis string     `json:"analysis"`
	Claims   []Claim    `json:"claims"`
	Evidence []Citation `json:"evidence"`
	Unknowns []string   `json:"unknowns,omitempty"`
}

// Rejection is one refusal of the evaluator.
type Rejection struct {
	BlockingGaps  []string `json:"blockingGaps"`
	RequiredFetch []string `json:"requiredNextFetches,omitempty"`
	// EvidenceCount is the citations of the refused package (the evaluator
	// reads progress between rejections from it).
	EvidenceCount int `json:"evidenceCount"`
}

// Verification is the evaluator's answer.
type Verification struct {
	Passed bool      `json:"verificationPassed"`
	Reject Rejection `json:"rejection,omitempty"`
	// LimitReached: the evaluator's rejection limit ends the investigation
	// as NEEDS_REVIEW.
	LimitReached bool   `json:"limitReached,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Evaluator judges an evidence package: the critic's EvaluateFinding.
type Evaluator interface {
	// Evaluate judges pkg, whose citations are relative to the checkout
	// root, given the earlier rejections of the same finding.
	Evaluate(ctx context.Context, root string, pkg Package, history []Rejection) (Verification, error)
}

// CriticEvaluator is the evaluator of the critic service, called over
// gRPC like every call of the mesh.
type CriticEvaluator struct {
	Client criticv1.CriticServiceClient
	// Session is the session the evaluations belong to.
	Session string
	// Attempts on an unavailable critic (default 3), with a doubling pause
	// from Backoff (default 100ms).
	Attempts int
	Backoff  time.Duration
}

var verdictProto = map[string]triagev1.Verdict{
	javaflow.TruePositive:  triagev1.Verdict_VERDICT_TRUE_POSITIVE,
	javaflow.FalsePositive: triagev1.Verdict_VERDICT_FALSE_POSITIVE,
	javaflow.NeedsReview:   triagev1.Verdict_VERDICT_NEEDS_REVIEW,
}

// Request is pkg as the critic's request.
func (p Package) Request(session, root string, history []Rejection) *criticv1.EvaluateFindingRequest {
	req := &criticv1.EvaluateFindingRequest{SessionId: session, Repo: root, Category: p.Category, Verdict: verdictProto[p.Verdict],
		Analysis: p.Analysis, Unknowns: p.Unknowns}
	for _, c := range p.Claims {
		req.Claims = append(req.Claims, &triagev1.Claim{Id: c.ID, Text: c.Text, Status: c.Status, Evidence: c.Evidence})
	}
	for _, c := range p.Evidence {
		req.Evidence = append(req.Evidence, &triagev1.Citation{Id: c.ID, File: c.File, StartLine: int32(c.StartLine), EndLine: int32(c.EndLine), Snippet: c.Snippet, Note: c.Note})
	}
	for _, h := range history {
		req.History = append(req.History, &criticv1.FindingRejection{BlockingGaps: h.BlockingGaps, RequiredNextFetches: h.RequiredFetch, EvidenceCount: int32(h.EvidenceCount)})
	}
	return req
}

// Evaluate implements Evaluator: it retries an unavailable critic, then
// fails visibly.
func (e *CriticEvaluator) Evaluate(ctx context.Context, root string, pkg Package, history []Rejection) (Verification, error) {
	if e.Client == nil {
		return Verification{}, errors.New("evaluator: no critic client")
	}
	attempts, pause := e.Attempts, e.Backoff
	if attempts < 1 {
		attempts = 3
	}
	if pause <= 0 {
		pause = 100 * time.Millisecond
	}
	session := e.Session
	if session == "" {
		session = "sast-triage" // the mesh refuses an RPC without a session
	}
	req := pkg.Request(session, root, history)
	var err error
	for i := 0; i < attempts; i++ {
		var resp *criticv1.EvaluateFindingResponse
		resp, err = e.Client.EvaluateFinding(ctx, req)
		if err == nil {
			v := Verification{Passed: resp.GetPassed(), LimitReached: resp.GetLimitReached(), Reason: resp.GetReason()}
			if rj := resp.GetRejection(); rj != nil {
				v.Reject = Rejection{BlockingGaps: rj.GetBlockingGaps(), RequiredFetch: rj.GetRequiredNextFetches(), EvidenceCount: int(rj.GetEvidenceCount())}
			}
			return v, nil
		}
		if status.Code(err) != codes.Unavailable || i == attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return Verification{}, fmt.Errorf("evaluator (critic): %w", ctx.Err())
		case <-time.After(pause):
		}
		pause *= 2
	}
	return Verification{}, fmt.Errorf("evaluator (critic): %w", err)
}
