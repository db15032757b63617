package critic

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRevalidate measures one delta revalidation against a 200-pin pool.
func BenchmarkRevalidate(b *testing.B) {
	s := newTestService(b, nil)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		p := newPin(fmt.Sprintf("pool-%d", i), "check_pod_status", crashPod(b, fmt.Sprintf("api-7d9f8b6c5-%05d", i)))
		if _, _, err := s.revalidate(ctx, "s1", p.GetId(), p, true); err != nil {
			b.Fatal(err)
		}
	}
	p := newPin("new", "check_pod_status", oomPod(b, "api-7d9f8b6c5-00001"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.revalidate(ctx, "s1", "new", p, false); err != nil {
			b.Fatal(err)
		}
	}
}
