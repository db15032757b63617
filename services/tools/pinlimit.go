package tools

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

// pinCountTTL is how long a session's pin count read from the stream is
// trusted (plus the pins this process published since) while the session
// is far from the limit.
const pinCountTTL = 2 * time.Second

// pinCounts remembers, per session, the pin count last read from the stream
// and the pins this process has published since. Counting on the stream
// takes JetStream requests on every tool call's path; a session far below
// Config.MaxPinsPerSession does not need an exact count.
type pinCounts struct {
	mu sync.Mutex
	m  map[string]pinCount
}

type pinCount struct {
	n  uint64
	at time.Time
}

// estimate is the session's count if it was read within pinCountTTL.
func (c *pinCounts) estimate(session string, now time.Time) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[session]
	if !ok || now.Sub(e.at) >= pinCountTTL || now.Before(e.at) {
		return 0, false
	}
	return e.n, true
}

func (c *pinCounts) set(session string, n uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]pinCount{}
	}
	if len(c.m) >= 4096 { // forget the stale ones
		for k, e := range c.m {
			if now.Sub(e.at) >= pinCountTTL {
				delete(c.m, k)
			}
		}
	}
	c.m[session] = pinCount{n: n, at: now}
}

// added counts a pin this process published to session.
func (c *pinCounts) added(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[session]; ok {
		e.n++
		c.m[session] = e
	}
}

// checkPinLimit refuses a call that would add a pin to a session already
// holding Config.MaxPinsPerSession (FailedPrecondition: permanent for the
// session, never retried as an outage). The count is read from the stream
// (every replica's pins), and reused for pinCountTTL while it is below the
// last tenth of the limit: pins other replicas add meanwhile can overshoot
// the limit by at most what they publish in that time near the limit's
// last tenth, where every call counts afresh.
func (s *Service) checkPinLimit(ctx context.Context, req *toolsv1.ExecuteToolRequest) error {
	pc, ok := s.bus.(PinCounter)
	if !ok || s.bus == nil || req.GetSkipPublish() || req.GetSessionId() == "" {
		return nil
	}
	limit := uint64(s.cfg.MaxPinsPerSession)
	exactFrom := limit - max(limit/10, 1)
	now := s.now()
	if n, ok := s.pinCounts.estimate(req.GetSessionId(), now); ok && n < exactFrom {
		return nil
	}
	n, err := pc.SessionPins(ctx, req.GetSessionId())
	if err != nil {
		return status.Errorf(codes.Unavailable, "counting the pins of session %q: %v", req.GetSessionId(), err)
	}
	s.pinCounts.set(req.GetSessionId(), n, now)
	if n >= limit {
		return status.Errorf(codes.FailedPrecondition, "session %q holds %d pins, the limit per session (-tools.max-pins-per-session %d): start a new session or raise the limit",
			req.GetSessionId(), n, s.cfg.MaxPinsPerSession)
	}
	return nil
}
