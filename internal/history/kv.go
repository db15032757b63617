package history

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// KV is the default store: one JetStream KV entry per investigation (the
// protobuf of GetInvestigationResponse). Listing reads every entry, so it
// suits the history of one team; PostgreSQL indexes and searches at scale.
type KV struct {
	kv jetstream.KeyValue
}

// NewKV stores history in kv (bus.BucketHistory).
func NewKV(kv jetstream.KeyValue) *KV { return &KV{kv: kv} }

// Name implements Store.
func (k *KV) Name() string { return "kv" }

// Close implements Store (the bucket belongs to the bus).
func (k *KV) Close() {}

// key maps an id onto the KV key alphabet, injectively.
func key(id string) string { return "i" + hex.EncodeToString([]byte(id)) }

// Save implements Store.
func (k *KV) Save(ctx context.Context, inv *Investigation) error {
	id := inv.GetRecord().GetInvestigationId()
	if id == "" {
		return errors.New("history: investigation without an id")
	}
	c := proto.CloneOf(inv)
	c.Summary = Summarize(inv)
	b, err := proto.Marshal(c)
	if err != nil {
		return fmt.Errorf("history: encode %s: %w", id, err)
	}
	if _, err := k.kv.Put(ctx, key(id), b); err != nil {
		return fmt.Errorf("history: kv put %s: %w", id, err)
	}
	return nil
}

// Get implements Store.
func (k *KV) Get(ctx context.Context, id string) (*Investigation, error) {
	e, err := k.kv.Get(ctx, key(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("history: kv get %s: %w", id, err)
	}
	inv := &Investigation{}
	if err := proto.Unmarshal(e.Value(), inv); err != nil {
		return nil, fmt.Errorf("history: decode %s: %w", id, err)
	}
	return inv, nil
}

// all decodes every stored investigation.
func (k *KV) all(ctx context.Context) ([]*Investigation, error) {
	lister, err := k.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: kv keys: %w", err)
	}
	var keys []string
	for key := range lister.Keys() {
		keys = append(keys, key)
	}
	_ = lister.Stop()
	out := make([]*Investigation, 0, len(keys))
	for _, key := range keys {
		e, err := k.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("history: kv get: %w", err)
		}
		inv := &Investigation{}
		if err := proto.Unmarshal(e.Value(), inv); err != nil {
			return nil, fmt.Errorf("history: decode %s: %w", key, err)
		}
		out = append(out, inv)
	}
	return out, nil
}

// matches applies q's filters (not the cursor).
func matches(inv *Investigation, q Query) bool {
	s := inv.GetSummary()
	if q.Service != "" && s.GetService() != q.Service || q.Namespace != "" && s.GetNamespace() != q.Namespace {
		return false
	}
	if q.Category != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED && s.GetCategory() != q.Category {
		return false
	}
	t := startedAt(inv)
	if !q.Since.IsZero() && t.Before(q.Since) || !q.Until.IsZero() && !t.Before(q.Until) {
		return false
	}
	if q.Text != "" {
		text := strings.ToLower(searchText(inv))
		for _, w := range strings.Fields(strings.ToLower(q.Text)) {
			if !strings.Contains(text, strings.Trim(w, `"`)) {
				return false
			}
		}
	}
	return true
}

// before reports whether (t, id) comes after c in newest-first order.
func before(t time.Time, id string, c *Cursor) bool {
	return t.Before(c.StartedAt) || t.Equal(c.StartedAt) && id < c.ID
}

// List implements Store.
func (k *KV) List(ctx context.Context, q Query) (Page, error) {
	q, err := q.Normalize()
	if err != nil {
		return Page{}, err
	}
	all, err := k.all(ctx)
	if err != nil {
		return Page{}, err
	}
	var hits []*Investigation
	for _, inv := range all {
		if !matches(inv, q) {
			continue
		}
		if q.After != nil && !before(startedAt(inv), inv.GetRecord().GetInvestigationId(), q.After) {
			continue
		}
		hits = append(hits, inv)
	}
	slices.SortFunc(hits, func(a, b *Investigation) int {
		if c := startedAt(b).Compare(startedAt(a)); c != 0 {
			return c
		}
		return strings.Compare(b.GetRecord().GetInvestigationId(), a.GetRecord().GetInvestigationId())
	})
	var page Page
	for i, inv := range hits {
		if i == q.PageSize {
			last := page.Items[len(page.Items)-1]
			page.Next = &Cursor{StartedAt: last.GetStartedAt().AsTime(), ID: last.GetInvestigationId()}
			break
		}
		s := proto.CloneOf(inv.GetSummary())
		if s.GetStartedAt() == nil {
			s.StartedAt = inv.GetRecord().GetFinishedAt()
		}
		page.Items = append(page.Items, s)
	}
	return page, nil
}

// DeleteFinishedBefore implements Store.
func (k *KV) DeleteFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	all, err := k.all(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, inv := range all {
		f := inv.GetRecord().GetFinishedAt()
		if f == nil || !f.AsTime().Before(t) {
			continue
		}
		if err := k.kv.Purge(ctx, key(inv.GetRecord().GetInvestigationId())); err != nil {
			return n, fmt.Errorf("history: kv purge: %w", err)
		}
		n++
	}
	return n, nil
}
