package delivery

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

func outboxLen(t *testing.T, s *Service) int {
	t.Helper()
	es, err := s.outbox.list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestOutboxResumesAfterRestart: a page whose destination keeps failing
// stays in the outbox (the fingerprint held, not marked sent); a new
// delivery process on the same store sends it once the destination accepts,
// and only then is it gone from the outbox.
func TestOutboxResumesAfterRestart(t *testing.T) {
	for _, withBus := range []bool{false, true} {
		t.Run(fmt.Sprintf("bus=%t", withBus), func(t *testing.T) {
			if withBus && testing.Short() {
				t.Skip("embedded NATS")
			}
			var b *bus.Bus
			if withBus {
				b = bustest.New(t)
			}
			h := newHook(t, 503, 503, 503, 503, 200)
			e := newEnv(t, b, func(c *Config) { c.WebhookURLs = []string{h.url("/page")} })
			r := deliver(t, e, record("o-1", "fp-o", "A bad release of api", 0.95))
			if len(r.GetAttempts()) != 1 || r.GetAttempts()[0].GetOk() || r.GetAttempts()[0].GetTries() != 4 {
				t.Fatalf("first round: %+v", r.GetAttempts())
			}
			if n := outboxLen(t, e.svc); n != 1 {
				t.Fatalf("outbox holds %d entries, want 1", n)
			}
			// While the page is pending another session of the fingerprint is not paged twice.
			if r2 := deliver(t, e, record("o-2", "fp-o", "same", 0.95)); !r2.GetDeduplicated() {
				t.Fatalf("second session during the retries: %+v", r2)
			}
			// "Restart": a new service on the same store (the bus), or the same
			// outbox without a bus; nothing is due before the backoff.
			s2 := e.svc
			if withBus {
				var err error
				if s2, err = New(e.svc.cfg, Deps{Bus: b, Now: e.clock.now}); err != nil {
					t.Fatal(err)
				}
			}
			if sent, err := s2.ResumeOutbox(context.Background()); err != nil || sent != 0 {
				t.Fatalf("resume before the backoff: sent %d err %v", sent, err)
			}
			e.clock.add(time.Minute)
			sent, err := s2.ResumeOutbox(context.Background())
			if err != nil || sent != 1 {
				t.Fatalf("resume: sent %d err %v (hits %d)", sent, err, h.hits.Load())
			}
			if h.hits.Load() != 5 {
				t.Errorf("destination hit %d times, want 5", h.hits.Load())
			}
			if n := outboxLen(t, s2); n != 0 {
				t.Errorf("outbox holds %d entries after the page was accepted", n)
			}
			rep, err := s2.store.getReport(context.Background(), "o-1")
			if err != nil {
				t.Fatal(err)
			}
			last := rep.GetAttempts()[len(rep.GetAttempts())-1]
			if !last.GetOk() || last.GetStatusCode() != http.StatusOK {
				t.Errorf("stored report's last attempt %+v", last)
			}
			if sent, _ := s2.ResumeOutbox(context.Background()); sent != 0 || h.hits.Load() != 5 {
				t.Errorf("a sent page was sent again")
			}
		})
	}
}

// TestOutboxGivesUp: a page no destination accepts within the rounds is
// given up and its fingerprint released; a 4xx other than 429 is final at once.
func TestOutboxGivesUp(t *testing.T) {
	h := newHook(t, 503)
	e := newEnv(t, nil, func(c *Config) {
		c.WebhookURLs = []string{h.url("/page")}
		c.MaxTries, c.OutboxMaxRounds = 1, 2
	})
	deliver(t, e, record("g-1", "fp-g", "x", 0.95))
	e.clock.add(time.Minute)
	if _, err := e.svc.ResumeOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := outboxLen(t, e.svc); n != 0 {
		t.Fatalf("outbox holds %d entries after the last round", n)
	}
	if r := deliver(t, e, record("g-2", "fp-g", "x", 0.95)); r.GetDeduplicated() {
		t.Errorf("the fingerprint of a page given up is still held")
	}
	final := newHook(t, 400)
	e2 := newEnv(t, nil, func(c *Config) { c.WebhookURLs = []string{final.url("/x")} })
	deliver(t, e2, record("g-3", "fp-h", "x", 0.95))
	if n := outboxLen(t, e2.svc); n != 0 || final.hits.Load() != 1 {
		t.Errorf("a 400 was kept for retries (outbox %d, hits %d)", n, final.hits.Load())
	}
}

// TestFailurePaged: a failed investigation is paged past the confidence gate
// (its reason in the report) unless page-failures is off, and its page does
// not hold the fingerprint against the fresh investigation's.
func TestFailurePaged(t *testing.T) {
	failedRec := func(session string) *investigationv1.InvestigationRecord {
		r := record(session, "fp-f2", "Investigation failed: gather_evidence: tools unavailable", 0)
		r.State, r.FailureReason = stateFailed, "gather_evidence: tools unavailable (after 6 attempts)"
		r.Diagnosis.Status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW
		return r
	}
	h := newHook(t, 200)
	e := newEnv(t, nil, func(c *Config) { c.WebhookURLs = []string{h.url("/x")} })
	r := deliver(t, e, failedRec("ff-1"))
	if r.GetSilent() || len(r.GetAttempts()) != 1 || !r.GetAttempts()[0].GetOk() {
		t.Fatalf("failure not paged: %+v", r)
	}
	if md := r.GetMarkdown(); !strings.Contains(md, "Investigation FAILED") || !strings.Contains(md, "tools unavailable (after 6 attempts)") {
		t.Errorf("report does not say it failed and why:\n%s", r.GetMarkdown())
	}
	if ok := deliver(t, e, record("ff-1", "fp-f2", "A bad release of api", 0.95)); ok.GetDeduplicated() || !ok.GetAttempts()[0].GetOk() {
		t.Errorf("the fresh investigation's page was held by the failure page: %+v", ok)
	}
	off := newEnv(t, nil, func(c *Config) { c.WebhookURLs = []string{h.url("/x")}; c.PageFailures = false })
	if r := deliver(t, off, failedRec("ff-2")); !r.GetSilent() || len(r.GetAttempts()) != 0 {
		t.Errorf("page-failures=false still paged: %+v", r)
	}
}
