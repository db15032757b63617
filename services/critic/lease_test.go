package critic

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestTwoReplicasJudgeOneSessionConsistently: two critic replicas on one
// stream judge the pins of one session in turn; each sees the verdicts the
// other published (a fresher healthy observation judged on replica b
// contradicts the crash replica a validated, though b had loaded the session
// before that verdict existed), and concurrent judgements of one session
// never interleave.
func TestTwoReplicasJudgeOneSessionConsistently(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded NATS server")
	}
	b := bustest.New(t)
	ra, rb := newTestService(t, b), newTestService(t, b)
	ctx := t.Context()
	if _, err := rb.sessionPins(ctx, "r1"); err != nil { // b loads the (empty) session first
		t.Fatal(err)
	}
	crash := newPin("crash", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"), session("r1"), at(t0))
	addPin(t, b, crash)
	if out, _, err := ra.revalidate(ctx, "r1", "crash", crash, true); err != nil || out.GetCausalRole() != roleRoot {
		t.Fatalf("replica a: %v %v", out.GetCausalRole(), err)
	}
	ok := newPin("ok", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-x2x1z"), session("r1"), at(t0.Add(5*time.Minute)))
	addPin(t, b, ok)
	_, contradicted, err := rb.revalidate(ctx, "r1", "ok", ok, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(contradicted) != 1 || contradicted[0].GetId() != "crash" || contradicted[0].GetVersion() != 3 {
		t.Fatalf("replica b did not see replica a's verdict: contradicted %v", contradicted)
	}
	pins, _ := latest(t, b, "r1")
	if pins["crash"].GetCausalRole() != roleCorrelated {
		t.Errorf("crash pin after b's verdict: %s", pins["crash"].GetCausalRole())
	}
	// a, which judged before, catches up with b's verdicts when asked.
	got, err := ra.sessionPins(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if p.GetVersion() != pins[p.GetId()].GetVersion() {
			t.Errorf("replica a sees pin %s v%d, the stream has v%d", p.GetId(), p.GetVersion(), pins[p.GetId()].GetVersion())
		}
	}

	// Many pins of one session judged on both replicas at once: every pin
	// gets exactly one verdict, and the lease serializes the judgements.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		p := newPin("p"+string(rune('A'+i%26))+string(rune('a'+i/26)), "check_pod_status", crashPod(t, "web-5c6d7f8b9-q"+string(rune('a'+i%26))), session("r2"), at(t0))
		addPin(t, b, p)
		r := ra
		if i%2 == 1 {
			r = rb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, _, err := r.revalidate(cctx, "r2", p.GetId(), p, true); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	pins, counts := latest(t, b, "r2")
	if len(pins) != 40 {
		t.Fatalf("%d pins, want 40", len(pins))
	}
	for id, p := range pins {
		if !judged(p) {
			t.Errorf("pin %s not judged", id)
		}
		if n := counts[id+"/updated"] + counts[id+"/rejected"]; n < 1 {
			t.Errorf("pin %s: %d verdicts", id, n)
		}
	}
	// The lease is given back leaseLinger after the last judgement, with
	// the last verdict's sequence.
	kv, err := ra.stampKV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var st stamp
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, _, err = readStamp(ctx, kv, "r2"); err != nil || st.Holder == "" {
			break
		}
	}
	if err != nil || st.Holder != "" || st.Seq == 0 {
		t.Errorf("lease after the judgements: %+v %v (want free, with the last verdict's sequence)", st, err)
	}
}

// TestLeaseKeptWhilePinsCome: a replica judging a burst of one session's
// pins takes the session's lease once, keeps it between judgements (its
// revision does not change), gives it back once the burst is over, and a
// replica that reads the session while the other holds the lease sees every
// verdict published under it.
func TestLeaseKeptWhilePinsCome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded NATS server")
	}
	b := bustest.New(t)
	ra, rb := newTestService(t, b), newTestService(t, b)
	ctx := t.Context()
	if _, err := rb.sessionPins(ctx, "k1"); err != nil { // b loads the (empty) session first
		t.Fatal(err)
	}
	kv, err := ra.stampKV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var revs []uint64
	for i := range 5 {
		suffix := string(rune('a' + i))
		p := newPin("k"+suffix, "check_pod_status", crashPod(t, "api-7d9f8b6c5-k"+suffix), session("k1"), at(t0))
		addPin(t, b, p)
		if _, _, err := ra.revalidate(ctx, "k1", p.GetId(), p, true); err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, e.Revision())
		var st stamp
		if err := json.Unmarshal(e.Value(), &st); err != nil || st.Holder != ra.id {
			t.Fatalf("after judgement %d the lease is %+v (%v), want held by a", i, st, err)
		}
	}
	for i, r := range revs[1:] {
		if r != revs[0] {
			t.Errorf("judgement %d wrote the lease again (revision %d, first %d)", i+1, r, revs[0])
		}
	}
	// b, reading the session while a holds the lease, sees a's five verdicts.
	got, err := rb.sessionPins(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	judgedPins := 0
	for _, p := range got {
		if judged(p) {
			judgedPins++
		}
	}
	if judgedPins != 5 {
		t.Errorf("replica b sees %d judged pins of 5 while a holds the lease", judgedPins)
	}
	// Given back once the burst is over.
	var st stamp
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, _, err = readStamp(ctx, kv, "k1"); err != nil || st.Holder == "" {
			break
		}
	}
	if err != nil || st.Holder != "" || st.Seq == 0 {
		t.Errorf("lease after the burst: %+v %v (want given back with the last verdict's sequence)", st, err)
	}
	// b judges next: it takes the free lease, and sees a's verdicts.
	p := newPin("kz", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-ka"), session("k1"), at(t0.Add(time.Minute)))
	addPin(t, b, p)
	if _, contradicted, err := rb.revalidate(ctx, "k1", "kz", p, true); err != nil || len(contradicted) != 1 {
		t.Errorf("replica b: contradicted %v, %v (want the crash pin of the same pod)", contradicted, err)
	}
	// The contradicted pin's new version carries its facts (the pool
	// keeps them encoded).
	pins, _ := latest(t, b, "k1")
	if got := pins["ka"]; got.GetVersion() < 3 || !proto.Equal(got.GetMetadata(), crashPod(t, "api-7d9f8b6c5-ka")) {
		t.Errorf("the contradicted pin's new version lost its facts: %v", got)
	}
}
