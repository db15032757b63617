package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// APIError is a classified provider failure. Its message is redacted (the API
// key never appears) and it unwraps to one of the Err* sentinels.
type APIError struct {
	Provider   string
	StatusCode int           // 0 when no HTTP response was received
	RetryAfter time.Duration // server-requested wait, when given
	Attempts   int
	Message    string

	kind          error
	cause         error
	hasRetryAfter bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.kind.Error())
	b.WriteString(" (provider ")
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", HTTP %d", e.StatusCode)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ", %d attempts", e.Attempts)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	b.WriteString(")")
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel (ErrRateLimited, ErrServer, ...) and, for
// timeouts, the context error.
func (e *APIError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

// httpInfo is filled by captureTransport with the last HTTP status and headers
// of an attempt, independently of how each SDK reports errors.
type httpInfo struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func (h *httpInfo) get() (int, http.Header) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status, h.header
}

type httpInfoKey struct{}

// captureTransport records the response status and headers into the attempt's
// httpInfo (found in the request context).
type captureTransport struct{ base http.RoundTripper }

func (t captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if info, ok := r.Context().Value(httpInfoKey{}).(*httpInfo); ok && resp != nil {
		info.mu.Lock()
		info.status = resp.StatusCode
		info.header = resp.Header.Clone()
		info.mu.Unlock()
	}
	return resp, err
}

func newHTTPClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: captureTransport{base: base}}
}

// retryPolicy decides waits between attempts.
type retryPolicy struct {
	maxRetries    int
	baseBackoff   time.Duration
	maxBackoff    time.Duration
	maxRetryAfter time.Duration
}

func defaultPolicy(maxRetries int) retryPolicy {
	return retryPolicy{maxRetries: maxRetries, baseBackoff: 500 * time.Millisecond, maxBackoff: 8 * time.Second, maxRetryAfter: MaxRetryAfter}
}

// backoff returns the jittered exponential wait before retry n (1-based).
func (p retryPolicy) backoff(n int) time.Duration {
	if p.baseBackoff <= 0 {
		return 0
	}
	d := p.baseBackoff << min(n-1, 16)
	if d > p.maxBackoff || d <= 0 {
		d = p.maxBackoff
	}
	// full jitter in [d/2, d]
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or
// HTTP date). ok is false when neither is present or parsable.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// classify maps an SDK error plus the captured HTTP info to an *APIError.
// sdkMsg extracts the server's error message from an SDK error type.
func classify(provider string, err error, info *httpInfo, attemptCtx, parent context.Context, sdkMsg func(error) (int, string), redact func(string) string) *APIError {
	status, header := info.get()
	code, msg := sdkMsg(err)
	if code != 0 {
		status = code
	}
	e := &APIError{Provider: provider, StatusCode: status}
	switch {
	case parent.Err() != nil:
		e.kind = ErrTimeout
		e.StatusCode = 0
		e.cause = parent.Err()
		e.Message = "context done: " + parent.Err().Error()
		return e
	case attemptCtx.Err() != nil || isNetTimeout(err):
		e.kind = ErrTimeout
		e.StatusCode = 0
		e.cause = context.DeadlineExceeded
		e.Message = "request attempt exceeded the configured timeout"
		return e
	}
	if msg == "" {
		msg = err.Error()
	}
	e.Message = truncate(redact(oneLine(msg)), 300)
	switch {
	case status == http.StatusTooManyRequests:
		e.kind = ErrRateLimited
		e.RetryAfter, e.hasRetryAfter = parseRetryAfter(header, time.Now())
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.kind = ErrAuth
	case status == http.StatusRequestTimeout:
		e.kind = ErrTimeout
	case status >= 500:
		e.kind = ErrServer
		e.RetryAfter, e.hasRetryAfter = parseRetryAfter(header, time.Now())
	case status >= 400:
		e.kind = ErrBadRequest
	case status >= 200 && status < 300:
		// The server answered but the SDK could not decode the body.
		e.kind = ErrBadResponse
	default:
		// No HTTP response: connection refused/reset. Transient; retried like 5xx.
		e.kind = ErrServer
		e.Message = "connection failed: " + e.Message
	}
	return e
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func retryable(e *APIError) bool {
	return errors.Is(e.kind, ErrRateLimited) || errors.Is(e.kind, ErrServer)
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attemptFunc performs one HTTP request. It returns the raw SDK error untouched.
type attemptFunc func(ctx context.Context) (Response, error)

// runWithRetry performs attempts with per-attempt timeout, classifying errors
// and retrying 429/5xx up to policy.maxRetries times.
func (c *core) runWithRetry(ctx context.Context, purpose string, do attemptFunc, sdkMsg func(error) (int, string)) (Response, int, error) {
	var last *APIError
	for attempt := 1; ; attempt++ {
		info := &httpInfo{}
		actx := context.WithValue(ctx, httpInfoKey{}, info)
		var cancel context.CancelFunc
		if c.timeout > 0 {
			actx, cancel = context.WithTimeout(actx, c.timeout)
		} else {
			actx, cancel = context.WithCancel(actx)
		}
		resp, err := do(actx)
		if err == nil {
			cancel()
			return resp, attempt, nil
		}
		last = classify(c.name, err, info, actx, ctx, sdkMsg, c.redact)
		cancel()
		last.Attempts = attempt
		if !retryable(last) || attempt > c.policy.maxRetries {
			return Response{}, attempt, last
		}
		wait := c.policy.backoff(attempt)
		if last.hasRetryAfter {
			if last.RetryAfter > c.policy.maxRetryAfter {
				// The server asks for longer than we are willing to wait.
				return Response{}, attempt, last
			}
			wait = last.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return Response{}, attempt, last
		}
		c.logger.LogAttrs(ctx, slog.LevelWarn, "llm request failed, retrying",
			slog.String("purpose", purpose), slog.Int("attempt", attempt),
			slog.Int("status", last.StatusCode), slog.Duration("wait", wait),
			slog.String("error", last.Error()))
		if err := sleepCtx(ctx, wait); err != nil {
			return Response{}, attempt, &APIError{Provider: c.name, Attempts: attempt, kind: ErrTimeout, cause: err, Message: "context done while waiting to retry: " + err.Error()}
		}
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncate cuts s to at most n bytes plus "…", never inside a character.
func truncate(s string, n int) string { return textutil.TruncateEllipsis(s, n) }
