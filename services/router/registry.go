package router

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Registry is one snapshot of the tool registry, indexed for routing.
// Snapshots are immutable once built; callers must clone a definition before
// changing it.
type Registry struct {
	Tools    []*evidencev1.ToolDefinition
	byIntent map[string]*evidencev1.ToolDefinition
	bySlash  map[string]*evidencev1.ToolDefinition
}

// NewRegistry indexes tool definitions by intent and slash command.
func NewRegistry(tools []*evidencev1.ToolDefinition) *Registry {
	r := &Registry{
		byIntent: make(map[string]*evidencev1.ToolDefinition, len(tools)),
		bySlash:  make(map[string]*evidencev1.ToolDefinition, len(tools)),
	}
	for _, t := range tools {
		if t == nil || t.GetIntent() == "" {
			continue
		}
		r.Tools = append(r.Tools, t)
		r.byIntent[strings.ToLower(t.GetIntent())] = t
		if sc := normalizeSlash(t.GetSlashCommand()); sc != "" {
			r.bySlash[sc] = t
		}
	}
	return r
}

func normalizeSlash(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.TrimPrefix(s, "/")
}

// Tool returns the definition of an intent.
func (r *Registry) Tool(intent string) (*evidencev1.ToolDefinition, bool) {
	t, ok := r.byIntent[strings.ToLower(strings.TrimSpace(intent))]
	return t, ok
}

// Command returns the tool of a slash command ("/logs" or "logs"); the intent
// itself is accepted as a command too ("/fetch_pod_logs").
func (r *Registry) Command(cmd string) (*evidencev1.ToolDefinition, bool) {
	c := normalizeSlash(cmd)
	if t, ok := r.bySlash[c]; ok {
		return t, true
	}
	t, ok := r.byIntent[c]
	return t, ok
}

// Commands lists the slash commands, sorted.
func (r *Registry) Commands() []string {
	out := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		out = append(out, slashOf(t))
	}
	sort.Strings(out)
	return out
}

func slashOf(t *evidencev1.ToolDefinition) string {
	if sc := normalizeSlash(t.GetSlashCommand()); sc != "" {
		return "/" + sc
	}
	return "/" + t.GetIntent()
}

// closeCommands returns the slash commands near an unknown one.
func (r *Registry) closeCommands(cmd string) []string {
	c := normalizeSlash(cmd)
	var names []string
	for _, t := range r.Tools {
		names = append(names, normalizeSlash(slashOf(t)), strings.ToLower(t.GetIntent()))
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range closeMatches(c, names) {
		t, ok := r.Command(m)
		if !ok {
			continue
		}
		s := slashOf(t)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// closeIntents returns the intents near an unknown one.
func (r *Registry) closeIntents(intent string) []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.GetIntent())
	}
	return closeMatches(strings.ToLower(intent), names)
}

// closeMatches returns candidates within a small edit distance of s, or that
// contain it or are contained in it, nearest first.
func closeMatches(s string, candidates []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if seen[lc] || lc == "" || s == "" {
			continue
		}
		seen[lc] = true
		d := levenshtein(s, lc)
		limit := 2
		if len(s) > 8 {
			limit = 3
		}
		switch {
		case d <= limit:
		case len(s) >= 3 && (strings.Contains(lc, s) || strings.Contains(s, lc)):
			d = limit + 1
		case len(s) >= 3 && strings.HasPrefix(lc, s[:3]):
			d = limit + 2
		default:
			continue
		}
		cs = append(cs, cand{c, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.name)
	}
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// paramNames lists a tool's parameter names.
func paramNames(t *evidencev1.ToolDefinition) []string {
	out := make([]string, 0, len(t.GetParamsSchema()))
	for _, p := range t.GetParamsSchema() {
		out = append(out, p.GetName())
	}
	return out
}

func findParam(t *evidencev1.ToolDefinition, name string) *evidencev1.ToolParam {
	for _, p := range t.GetParamsSchema() {
		if strings.EqualFold(p.GetName(), name) {
			return p
		}
	}
	return nil
}

// registryCache caches registries per session with a TTL, serving a stale
// copy for a bounded time when the tools service is unreachable.
type registryCache struct {
	mu       sync.Mutex
	entries  map[string]*cacheEntry
	ttl      time.Duration
	maxStale time.Duration
	max      int
	now      func() time.Time
}

type cacheEntry struct {
	reg     *Registry
	fetched time.Time
}

func newRegistryCache(ttl, maxStale time.Duration, max int) *registryCache {
	return &registryCache{entries: map[string]*cacheEntry{}, ttl: ttl, maxStale: maxStale, max: max, now: time.Now}
}

// registry returns the registry as session sees it.
func (s *Service) registry(ctx context.Context, session string) (*Registry, error) {
	c := s.cache
	now := c.now()
	c.mu.Lock()
	e := c.entries[session]
	c.mu.Unlock()
	if e != nil && now.Sub(e.fetched) < c.ttl {
		return e.reg, nil
	}
	if s.deps.Tools == nil {
		return nil, status.Error(codes.Unavailable, "tool registry unavailable: no tools service client configured")
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolsTimeout)
	defer cancel()
	defs, err := mesh.ToolDefinitions(cctx, s.deps.Tools, session)
	if err != nil {
		if e != nil && c.maxStale > 0 && now.Sub(e.fetched) < c.ttl+c.maxStale {
			s.log.WarnContext(ctx, "tools service unreachable; serving a stale tool registry",
				"session", session, "age", now.Sub(e.fetched).String(), "error", err)
			return e.reg, nil
		}
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Unavailable, "tool registry unavailable: tools service unreachable (ListToolDefinitions: %s)", status.Convert(err).Message())
	}
	reg := NewRegistry(defs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.entries[session] = &cacheEntry{reg: reg, fetched: now}
	return reg, nil
}

// evictLocked drops expired entries, then the oldest until there is room.
func (c *registryCache) evictLocked(now time.Time) {
	for k, e := range c.entries {
		if now.Sub(e.fetched) >= c.ttl+c.maxStale {
			delete(c.entries, k)
		}
	}
	for len(c.entries) >= c.max {
		var oldK string
		var oldT time.Time
		first := true
		for k, e := range c.entries {
			if first || e.fetched.Before(oldT) {
				oldK, oldT, first = k, e.fetched, false
			}
		}
		delete(c.entries, oldK)
	}
}

func unavailableReason(t *evidencev1.ToolDefinition) string {
	if r := t.GetUnavailableReason(); r != "" {
		return r
	}
	if len(t.GetIntegrations()) > 0 {
		return fmt.Sprintf("integration not configured (%s)", strings.Join(t.GetIntegrations(), ", "))
	}
	return "tool is unavailable in this deployment"
}
