package history

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkStores measures saving one investigation (record, report, two
// pins, two critic verdicts) and one filtered full-text search page over
// 2,000 stored investigations (searched before the saves add more), for
// each store.
func BenchmarkStores(b *testing.B) {
	for _, sc := range []struct {
		name string
		open func(t testing.TB) Store
	}{
		{"kv", kvStore},
		{"postgres", func(t testing.TB) Store { return openPG(t, pgCluster(t), 10*time.Second) }},
	} {
		b.Run(sc.name, func(b *testing.B) {
			if testing.Short() {
				b.Skip("starts NATS or PostgreSQL")
			}
			s := sc.open(b)
			ctx := context.Background()
			for i := range 2000 {
				f := fixtures[i%len(fixtures)]
				f.id = fmt.Sprintf("inv-seed-%05d", i)
				f.start = time.Duration(i) * time.Minute
				if err := s.Save(ctx, f.investigation()); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("search", func(b *testing.B) {
				for b.Loop() {
					p, err := s.List(ctx, Query{Text: "connection pool", Namespace: "retail", PageSize: 20})
					if err != nil || len(p.Items) == 0 {
						b.Fatal(err, len(p.Items))
					}
				}
			})
			b.Run("save", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					f := fixtures[i%len(fixtures)]
					f.id = fmt.Sprintf("inv-bench-%07d", i)
					if err := s.Save(ctx, f.investigation()); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
