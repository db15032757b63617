package critic

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/sast/checklist"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// The SAST evaluator: skeptical, it assumes the agent missed
// something. It re-reads every cited line from the checkout itself and
// refuses a verdict unless the raw code shows every claim and every item of
// the finding category's false-positive checklist is answered by a claim
// whose code shows it.

// lineReader reads a file of the checkout as lines.
type lineReader func(path string) ([]string, error)

// evaluateFinding is the evaluator's judgement of one package: nil gaps
// means the verdict is accepted.
func evaluateFinding(req *criticv1.EvaluateFindingRequest, read lineReader) (gaps, fetch []string) {
	v := ""
	switch req.GetVerdict() {
	case triagev1.Verdict_VERDICT_TRUE_POSITIVE:
		v = "TP"
	case triagev1.Verdict_VERDICT_FALSE_POSITIVE:
		v = "FP"
	default:
		return []string{"verdict " + req.GetVerdict().String() + " is not a final verdict"}, nil
	}
	for _, u := range req.GetUnknowns() {
		gaps = append(gaps, "open unknown: "+u)
	}
	cites := map[string]*triagev1.Citation{}
	for _, c := range req.GetEvidence() {
		cites[c.GetId()] = c
		lines, err := read(c.GetFile())
		if err != nil {
			gaps = append(gaps, fmt.Sprintf("evidence %s: %s cannot be read: %v", c.GetId(), c.GetFile(), err))
			fetch = append(fetch, "fetch_code "+c.GetFile())
			continue
		}
		a, b := int(c.GetStartLine()), int(c.GetEndLine())
		if a < 1 || b < a || b > len(lines) {
			gaps = append(gaps, fmt.Sprintf("evidence %s: lines %d-%d are not in %s", c.GetId(), a, b, c.GetFile()))
			continue
		}
		if strings.Join(lines[a-1:b], "\n") != c.GetSnippet() {
			gaps = append(gaps, fmt.Sprintf("evidence %s: the snippet is not the raw code of %s:%d-%d", c.GetId(), c.GetFile(), a, b))
			fetch = append(fetch, fmt.Sprintf("fetch_code %s:%d-%d", c.GetFile(), a, b))
		}
	}
	byID := map[string]*triagev1.Claim{}
	for _, cl := range req.GetClaims() {
		byID[cl.GetId()] = cl
		if cl.GetStatus() != "supported" {
			gaps = append(gaps, "claim "+cl.GetId()+" is "+cl.GetStatus()+", not supported")
		}
		if len(cl.GetEvidence()) == 0 {
			gaps = append(gaps, "claim "+cl.GetId()+" cites no code")
		}
		for _, id := range cl.GetEvidence() {
			if _, ok := cites[id]; !ok {
				gaps = append(gaps, "claim "+cl.GetId()+" cites missing evidence "+id)
			}
		}
	}
	items := checklist.For(req.GetCategory())
	if items == nil {
		gaps = append(gaps, "no checklist for category "+req.GetCategory())
	}
	for _, it := range items {
		if !strings.Contains(it.Verdicts, v) {
			continue
		}
		cl, ok := byID[it.Claim]
		if !ok {
			if v == "FP" && it.Claim == "source" {
				if _, ok := byID["sanitiser"]; ok { // a sanitised flow answers it
					continue
				}
			}
			gaps = append(gaps, "checklist: "+it.Question+" (no "+it.Claim+" claim)")
			continue
		}
		// a false positive's source claim says the value is NOT the
		// attacker's: its code need not show a request getter
		if it.Shows != nil && (it.Claim != "source" || v == "TP") {
			shown := false
			for _, id := range cl.GetEvidence() {
				if c, ok := cites[id]; ok && it.Shows.MatchString(c.GetSnippet()) {
					shown = true
				}
			}
			if !shown {
				gaps = append(gaps, "checklist: "+it.Question+" (the "+it.Claim+" claim's evidence does not show it)")
			}
		}
	}
	return gaps, fetch
}

// countedRejections counts the rejections toward the limit, this one
// included: the first, then every one that repeats its predecessor's gaps
// or comes after no progress (no new citation). A rejection after progress
// on other gaps does not count (the loop's own breakers bound it).
func countedRejections(history []*criticv1.FindingRejection, cur *criticv1.FindingRejection) int {
	all := append(slices.Clone(history), cur)
	n := 0
	for i, r := range all {
		if i == 0 {
			n++
			continue
		}
		prev := all[i-1]
		if slices.Equal(prev.GetBlockingGaps(), r.GetBlockingGaps()) || r.GetEvidenceCount() <= prev.GetEvidenceCount() {
			n++
		}
	}
	return n
}

// EvaluateFinding implements criticv1.CriticServiceServer.
func (s *Service) EvaluateFinding(ctx context.Context, req *criticv1.EvaluateFindingRequest) (*criticv1.EvaluateFindingResponse, error) {
	if s.cfg.CodeRoot == "" {
		return nil, status.Error(codes.FailedPrecondition, "critic: no code root configured (-critic.code-root): the evaluator cannot re-read cited code")
	}
	if strings.TrimSpace(req.GetRepo()) == "" {
		return nil, status.Error(codes.InvalidArgument, "critic: repo is required")
	}
	dir := req.GetRepo()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cfg.CodeRoot, dir)
	}
	r, err := repo.Open(dir, s.cfg.CodeRoot)
	if err != nil {
		if errors.Is(err, repo.ErrOutside) {
			return nil, status.Error(codes.PermissionDenied, err.Error())
		}
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	gaps, fetch := evaluateFinding(req, func(p string) ([]string, error) {
		b, err := r.Read(p)
		if err != nil {
			return nil, err
		}
		return strings.Split(string(b), "\n"), nil
	})
	if len(gaps) == 0 {
		return &criticv1.EvaluateFindingResponse{Passed: true, Reason: "every claim is shown by raw code and the checklist of " + req.GetCategory() + " is answered"}, nil
	}
	rej := &criticv1.FindingRejection{BlockingGaps: gaps, RequiredNextFetches: fetch, EvidenceCount: int32(len(req.GetEvidence()))}
	resp := &criticv1.EvaluateFindingResponse{Rejection: rej}
	count := countedRejections(req.GetHistory(), rej)
	limit := s.cfg.EvaluatorRejectionLimit
	if count >= limit {
		resp.LimitReached = true
		resp.Reason = fmt.Sprintf("evaluator rejection limit reached (%d of %d, same gaps or no progress): stop as NEEDS_REVIEW; %s", count, limit, strings.Join(gaps, "; "))
		resp.Trips = append(resp.Trips, guardrail.Trip(GuardrailRejectionLimit,
			"verdict refused; remaining: "+strings.Join(gaps, "; "), float64(limit), float64(count), s.now()))
		return resp, nil
	}
	resp.Reason = fmt.Sprintf("refused (%d of %d): %s", count, limit, strings.Join(gaps, "; "))
	return resp, nil
}
