package tools

import (
	"container/list"
	"sync"
	"time"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"google.golang.org/protobuf/proto"
)

// callCache remembers successful calls per investigation for duplicate
// replay. Identical concurrent calls wait for the first one (single flight).
// It is bounded in entries and in bytes (the encoded size of the cached
// responses): the oldest entries are evicted first, and a response larger
// than the whole byte bound is not cached.
type callCache struct {
	mu       sync.Mutex
	ttl      time.Duration
	max      int
	maxBytes int64
	bytes    int64
	entries  map[string]*list.Element
	order    *list.List // front = newest
	inflight map[string]chan struct{}
}

type cacheEntry struct {
	key  string
	resp *toolsv1.ExecuteToolResponse
	at   time.Time
	size int64
}

func newCallCache(ttl time.Duration, max int, maxBytes int64) *callCache {
	return &callCache{ttl: ttl, max: max, maxBytes: maxBytes, entries: map[string]*list.Element{}, order: list.New(), inflight: map[string]chan struct{}{}}
}

// remove drops one element (caller holds mu).
func (c *callCache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// get returns a copy of a live cached response.
func (c *callCache) get(key string, now time.Time) *toolsv1.ExecuteToolResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if now.Sub(e.at) > c.ttl {
		c.remove(el)
		return nil
	}
	return proto.Clone(e.resp).(*toolsv1.ExecuteToolResponse)
}

// begin claims key for a call. When another identical call is in flight it
// returns that call's done channel to wait on, and claimed=false.
func (c *callCache) begin(key string) (wait <-chan struct{}, claimed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.inflight[key]; ok {
		return ch, false
	}
	c.inflight[key] = make(chan struct{})
	return nil, true
}

// end releases key, storing resp when non-nil.
func (c *callCache) end(key string, resp *toolsv1.ExecuteToolResponse, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok && resp != nil {
		c.remove(el)
	}
	if size := int64(proto.Size(resp)); resp != nil && size <= c.maxBytes {
		c.entries[key] = c.order.PushFront(&cacheEntry{key: key, resp: proto.Clone(resp).(*toolsv1.ExecuteToolResponse), at: now, size: size})
		c.bytes += size
		for c.order.Len() > c.max || c.bytes > c.maxBytes {
			c.remove(c.order.Back())
		}
	}
	if ch, ok := c.inflight[key]; ok {
		close(ch)
		delete(c.inflight, key)
	}
}

// sweep drops expired entries.
func (c *callCache) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*cacheEntry)
		if now.Sub(e.at) > c.ttl {
			c.remove(el)
		}
		el = prev
	}
}

// size is the encoded size of the cached responses.
func (c *callCache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *callCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
