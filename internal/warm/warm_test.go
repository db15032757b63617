package warm

import (
	"sync"
	"testing"
	"time"
)

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name string
		// calls in sequence, each waited for before the next (sequential), or
		// all started together and held until every one runs (concurrent).
		calls      int
		concurrent bool
		// at most this many workers started
		maxStarted int64
		// at least this many workers started
		minStarted int64
	}{
		{name: "one call", calls: 1, minStarted: 1, maxStarted: 1},
		// A worker back at its wait takes the next call (under load it may not
		// be back yet, and Go starts another).
		{name: "sequential calls reuse workers", calls: 50, minStarted: 1, maxStarted: 10},
		// Go never waits for a busy worker: 20 calls that each wait for all
		// the others to start need 20 goroutines.
		{name: "concurrent calls each get a goroutine", calls: 20, concurrent: true, minStarted: 20, maxStarted: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(time.Minute)
			ran := make([]bool, tc.calls)
			if tc.concurrent {
				var all, done sync.WaitGroup
				all.Add(tc.calls)
				done.Add(tc.calls)
				for i := range tc.calls {
					p.Go(func() {
						defer done.Done()
						all.Done()
						all.Wait() // every call runs at once, or this deadlocks
						ran[i] = true
					})
				}
				waitOrFail(t, &done)
			} else {
				for i := range tc.calls {
					var done sync.WaitGroup
					done.Add(1)
					p.Go(func() { ran[i] = true; done.Done() })
					waitOrFail(t, &done)
					// Let the worker get back to waiting for work.
					waitFor(t, func() bool { return p.running.Load() >= 1 && len(p.work) == 0 })
					time.Sleep(time.Millisecond)
				}
			}
			for i, r := range ran {
				if !r {
					t.Fatalf("call %d did not run", i)
				}
			}
			if n := p.started.Load(); n < tc.minStarted || n > tc.maxStarted {
				t.Fatalf("%d workers started, want %d-%d", n, tc.minStarted, tc.maxStarted)
			}
		})
	}
}

func TestIdleWorkersExit(t *testing.T) {
	p := New(20 * time.Millisecond)
	var done sync.WaitGroup
	done.Add(3)
	for range 3 {
		p.Go(func() { time.Sleep(5 * time.Millisecond); done.Done() })
	}
	waitOrFail(t, &done)
	waitFor(t, func() bool { return p.running.Load() == 0 })
	// A call after they exited still runs.
	done.Add(1)
	p.Go(done.Done)
	waitOrFail(t, &done)
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("functions given to Go did not all run")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
