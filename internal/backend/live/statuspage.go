package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/statuspage"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Status-page reading limits: a page's answer larger than maxStatusBody is
// refused (the public API's answers are a few hundred kilobytes at most);
// a failed GET is made statusAttempts times in all.
const (
	maxStatusBody  = 4 << 20
	statusAttempts = 3
)

// statusEndpoints are the Atlassian Statuspage public API answers read per
// page: the incidents (open and the last 50 resolved), the current
// component states, the scheduled maintenances.
var statusEndpoints = []string{"/api/v2/incidents.json", "/api/v2/summary.json", "/api/v2/scheduled-maintenances.json"}

// StatusPages reads outside providers' public status pages over HTTP: GET
// only, no credentials, bounded answers, retried on transport errors and
// 5xx/429 answers.
type StatusPages struct {
	URLs   []string
	Client *http.Client
	// RetryWait is the pause before the first retry (doubled each time).
	RetryWait time.Duration
}

// NewStatusPages builds the reader of the configured pages.
func NewStatusPages(c *integrations.StatusPage) *StatusPages {
	urls := make([]string, 0, len(c.URLs))
	for _, u := range c.URLs {
		urls = append(urls, strings.TrimRight(u, "/"))
	}
	// GET only, whatever a caller of the client tries (the transport
	// refuses writes).
	hc := &http.Client{Timeout: c.Timeout, Transport: backend.ReadOnlyTransport(http.DefaultTransport)}
	return &StatusPages{URLs: urls, Client: hc, RetryWait: 200 * time.Millisecond}
}

// StatusIncidents implements backend.StatusPages: the pages whose base URL
// contains provider are read (every page when none does, or provider is
// ""), and filtered by their own name and address. A page that cannot be
// read fails the call only when no page could be read.
func (s *StatusPages) StatusIncidents(ctx context.Context, provider string) ([]facts.StatusIncident, error) {
	bases := s.URLs
	if p := strings.ToLower(provider); p != "" {
		var named []string
		for _, u := range s.URLs {
			if strings.Contains(strings.ToLower(u), p) {
				named = append(named, u)
			}
		}
		if len(named) > 0 {
			bases = named
		}
	}
	pages := make([]statuspage.Page, len(bases))
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Go(func() { pages[i], errs[i] = s.page(ctx, base) })
	}
	wg.Wait()
	var read []statuspage.Page
	var failed []error
	for i := range bases {
		if errs[i] != nil {
			failed = append(failed, errs[i])
			continue
		}
		read = append(read, pages[i])
	}
	if len(read) == 0 && len(failed) > 0 {
		return nil, errors.Join(failed...)
	}
	return statuspage.Incidents(read, provider), nil
}

// page reads one page's endpoints; summary.json and the maintenances are
// optional (a page may not serve them), incidents.json is not.
func (s *StatusPages) page(ctx context.Context, base string) (statuspage.Page, error) {
	var answers [][]byte
	for i, ep := range statusEndpoints {
		b, code, err := s.get(ctx, base+ep)
		if err != nil {
			if i == 0 || code == 0 {
				return statuspage.Page{}, err
			}
			continue // an optional endpoint the page does not serve
		}
		answers = append(answers, b)
	}
	host := base
	if u, err := url.Parse(base); err == nil {
		host = u.Host
	}
	p, err := statuspage.Merge(host, base, answers...)
	if err != nil {
		return statuspage.Page{}, fmt.Errorf("statuspage %s: %w", base, err)
	}
	return p, nil
}

// get fetches one answer; code is the last HTTP status (0 when none came).
func (s *StatusPages) get(ctx context.Context, u string) (body []byte, code int, err error) {
	wait := s.RetryWait
	for attempt := 1; ; attempt++ {
		body, code, err = s.getOnce(ctx, u)
		retry := err != nil && (code == 0 || code == http.StatusTooManyRequests || code >= 500)
		if !retry || attempt >= statusAttempts || ctx.Err() != nil {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("%w (%d attempts)", err, attempt)
			}
			return body, code, err
		}
		select {
		case <-ctx.Done():
			return nil, code, fmt.Errorf("statuspage %s: %w", u, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (s *StatusPages) getOnce(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("statuspage: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("statuspage: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody+1))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("statuspage: read %s: %w", u, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, resp.StatusCode, statusError("statuspage: GET "+u, resp.StatusCode, b)
	}
	if len(b) > maxStatusBody {
		return nil, resp.StatusCode, fmt.Errorf("statuspage: GET %s: answer larger than %d bytes", u, maxStatusBody)
	}
	return b, resp.StatusCode, nil
}

// CheckStatusPages reads every page's incidents.json once.
func CheckStatusPages(ctx context.Context, s *StatusPages) error {
	var errs []error
	for _, base := range s.URLs {
		if _, _, err := s.getOnce(ctx, base+statusEndpoints[0]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
