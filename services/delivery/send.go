package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// Destination kinds.
const (
	KindSlack   = "slack"
	KindWebhook = "webhook"
)

// destination is one configured target. Its URL is a secret: only name is
// ever logged or recorded.
type destination struct {
	name string
	kind string
	url  string
}

// payload renders the body for a destination.
func (s *Service) payload(dest destination, rep *investigationv1.Report, rec *investigationv1.InvestigationRecord, link string) ([]byte, error) {
	if dest.kind == KindSlack {
		return json.Marshal(slackPayload(rep, rec, link))
	}
	return webhookPayload(rep, rec, link)
}

func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func capRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// slackPayload is a Block Kit message: header, root cause, fields, chain and
// remediation, context.
func slackPayload(rep *investigationv1.Report, rec *investigationv1.InvestigationRecord, link string) slackMessage {
	d := rep.GetDiagnosis()
	title := oneLine(reportTitle(rec))
	rc := strings.TrimSpace(d.GetRootCause())
	if rc == "" {
		rc = "No root cause was determined."
	}
	if rec.GetState() == stateFailed {
		rc = "Investigation FAILED: " + rec.GetFailureReason()
	}
	// Quotations from the inspected systems leave the conclusion for a
	// quoted-evidence block, as code (no mention or link inside is live).
	qb := &quoteBook{d: d}
	rc = qb.refs(rc)
	mk := func(label, v string) slackText {
		if v == "" {
			v = "-"
		}
		return slackText{Type: "mrkdwn", Text: "*" + label + "*\n" + capRunes(slackEscape(v), 1900)}
	}
	msg := slackMessage{Text: capRunes("RCA: "+title+" — "+oneLine(rc), 300)}
	msg.Blocks = append(msg.Blocks,
		slackBlock{Type: "header", Text: &slackText{Type: "plain_text", Text: capRunes("RCA: "+title, 150), Emoji: true}},
		slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "*Root cause*\n" + capRunes(slackEscape(rc), 2900)}},
		slackBlock{Type: "section", Fields: []slackText{
			mk("Status", statusText(d.GetStatus())),
			mk("Confidence", fmt.Sprintf("%.0f%%", rep.GetConfidence()*100)),
			mk("Category", categoryText(d.GetCategory())),
			mk("Culprit", d.GetRootCauseEntity()),
		}},
	)
	var more []string
	if chain := d.GetCausalChain(); len(chain) > 0 {
		more = append(more, "*Causal chain*\n"+slackEscape(qb.refs(strings.Join(chain, " → "))))
	}
	if len(qb.items) > 0 {
		var lines []string
		for _, it := range qb.items {
			lines = append(lines, fmt.Sprintf("[%s] %s%s", it.ref, slackEscape(codeSpan(capRunes(it.text, 300))), slackEscape(attribution(it.pins))))
		}
		more = append(more, "*Quoted evidence* (verbatim from the inspected systems: data, not a conclusion)\n"+strings.Join(lines, "\n"))
	}
	if steps := d.GetRemediationSteps(); len(steps) > 0 {
		var lines []string
		for i, st := range steps {
			if i == 5 {
				break
			}
			lines = append(lines, fmt.Sprintf("%d. %s", i+1, slackEscape(oneLine(st))))
		}
		more = append(more, "*Remediation*\n"+strings.Join(lines, "\n"))
	}
	if len(more) > 0 {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: capRunes(strings.Join(more, "\n\n"), 2900)}})
	}
	ctxText := fmt.Sprintf("session `%s` · %d tool calls · %d model calls", slackEscape(rep.GetSessionId()), len(rec.GetToolCalls()), len(rec.GetModelCalls()))
	if rec.GetWallMs() > 0 {
		ctxText += " · " + fmtDur(rec.GetWallMs())
	}
	if link != "" {
		ctxText += " · <" + link + "|open report>"
	}
	msg.Blocks = append(msg.Blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: capRunes(ctxText, 1900)}}})
	return msg
}

// webhookReport is the generic JSON webhook body (schema "rcamesh.delivery.v1.report").
type webhookReport struct {
	Schema          string          `json:"schema"`
	SessionID       string          `json:"session_id"`
	InvestigationID string          `json:"investigation_id,omitempty"`
	Fingerprint     string          `json:"fingerprint,omitempty"`
	Title           string          `json:"title"`
	Status          string          `json:"status"`
	State           string          `json:"state,omitempty"`
	FailureReason   string          `json:"failure_reason,omitempty"`
	Category        string          `json:"category"`
	RootCause       string          `json:"root_cause"`
	Entity          string          `json:"root_cause_entity,omitempty"`
	Confidence      float64         `json:"confidence"`
	CreatedAt       string          `json:"created_at"`
	Link            string          `json:"link,omitempty"`
	Markdown        string          `json:"markdown"`
	Diagnosis       json.RawMessage `json:"diagnosis,omitempty"`
}

func webhookPayload(rep *investigationv1.Report, rec *investigationv1.InvestigationRecord, link string) ([]byte, error) {
	d := rep.GetDiagnosis()
	body := webhookReport{
		Schema: "rcamesh.delivery.v1.report", SessionID: rep.GetSessionId(), InvestigationID: rep.GetInvestigationId(),
		Fingerprint: rep.GetFingerprint(), Title: oneLine(reportTitle(rec)), Status: d.GetStatus().String(),
		Category: d.GetCategory().String(), RootCause: d.GetRootCause(), Entity: d.GetRootCauseEntity(),
		Confidence: rep.GetConfidence(), CreatedAt: rep.GetCreatedAt().AsTime().UTC().Format(time.RFC3339Nano),
		Link: link, Markdown: rep.GetMarkdown(), State: rec.GetState(), FailureReason: rec.GetFailureReason(),
	}
	if d != nil {
		raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("delivery: encode diagnosis: %w", err)
		}
		body.Diagnosis = raw
	}
	return json.Marshal(body)
}

// deliver posts body to dest with retries: exponential backoff with jitter on
// network errors, 5xx and 429 (honouring Retry-After up to BackoffMax); other
// 4xx are final.
func (s *Service) deliver(ctx context.Context, dest destination, body []byte, idemKey string) *investigationv1.DeliveryAttempt {
	at := &investigationv1.DeliveryAttempt{Destination: dest.name}
	for try := 1; try <= s.cfg.MaxTries; try++ {
		at.Tries = int32(try)
		code, retryAfter, err := s.post(ctx, dest, body, idemKey)
		at.StatusCode = int32(code)
		if err == nil {
			at.Ok, at.Error = true, ""
			return at
		}
		at.Error = s.scrub(dest, err.Error())
		retryable := code == 0 || code == http.StatusTooManyRequests || code >= 500
		if !retryable || try == s.cfg.MaxTries || ctx.Err() != nil {
			break
		}
		delay := s.backoff(try)
		if retryAfter > delay {
			delay = min(retryAfter, s.cfg.BackoffMax)
		}
		s.log.WarnContext(ctx, "delivery: try failed; retrying", "destination", dest.name, "try", try, "status", code, "retry_in", delay, "err", at.Error)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			at.Error = s.scrub(dest, at.Error+"; gave up: "+ctx.Err().Error())
			return at
		case <-t.C:
		}
	}
	s.log.WarnContext(ctx, "delivery: destination failed", "destination", dest.name, "tries", at.Tries, "status", at.StatusCode, "err", at.Error)
	return at
}

// backoff is base*2^(try-1) capped at BackoffMax, with jitter in [d/2, d].
func (s *Service) backoff(try int) time.Duration {
	d := s.cfg.BackoffBase
	for i := 1; i < try && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.BackoffMax)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// scrub keeps destination URLs out of error text.
func (s *Service) scrub(dest destination, msg string) string {
	if dest.url != "" {
		msg = strings.ReplaceAll(msg, dest.url, "<"+dest.name+">")
	}
	return redact(msg)
}

// post sends one request; an error carries the HTTP status (0 for network errors).
func (s *Service) post(ctx context.Context, dest destination, body []byte, idemKey string) (int, time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, dest.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, errors.New("bad destination URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rcamesh-delivery/1")
	if dest.kind == KindWebhook {
		req.Header.Set("Idempotency-Key", idemKey)
		if s.cfg.WebhookSecret != "" {
			mac := hmac.New(sha256.New, []byte(s.cfg.WebhookSecret))
			mac.Write(body)
			req.Header.Set("X-Rcamesh-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error embeds the URL, which holds the secret.
			return 0, 0, fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
		}
		return 0, 0, err
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var retryAfter time.Duration
	if v := resp.Header.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs > 0 {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	return resp.StatusCode, retryAfter, fmt.Errorf("http %d: %s", resp.StatusCode, oneLine(string(snippet)))
}
