// Package warm runs functions on goroutines that outlive them, so that a
// function run for every request does not start on a new goroutine's
// small stack and grow it again each time.
//
// A new goroutine starts with a stack of a few kilobytes; a request
// handler that goes deeper (a gRPC client call, a tool handler with its
// facts and fmt) makes the runtime copy its stack to one twice as large,
// again and again (runtime.newstack, copystack): on the fast path of a
// slash command it was 3.5% of the CPU, half of it in gRPC's goroutine per
// call (the servers now use grpc.NumStreamWorkers), the rest in the
// router's goroutine per dispatched call and the tools' per handler, which
// run on Pools.
package warm

import (
	"sync/atomic"
	"time"
)

// DefaultIdle is how long an idle worker waits for another function
// before it exits.
const DefaultIdle = 10 * time.Second

// resetAfter is how many functions a worker runs before it hands its place
// to a new goroutine, so that a stack grown by one deep call does not live
// forever (grpc's serverWorkerResetThreshold); the collector also shrinks
// the stack of a goroutine that uses little of it.
const resetAfter = 1 << 16

// Pool runs functions on warm goroutines. The zero value is not usable:
// use New. Its workers exit after Idle without work; none is kept.
type Pool struct {
	work    chan func()
	idle    time.Duration
	started atomic.Int64 // workers started (tests)
	running atomic.Int64 // workers alive (tests)
}

// New returns a Pool whose idle workers exit after idle (DefaultIdle when
// idle <= 0).
func New(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{work: make(chan func()), idle: idle}
}

// Go runs fn concurrently, as `go fn()` does: on an idle worker of the pool
// when one is waiting, otherwise on a new goroutine that then stays as a
// worker. It never waits for a worker. A panic in fn is not recovered (it
// ends the process, as it would on a goroutine of its own).
func (p *Pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.started.Add(1)
		p.running.Add(1)
		go p.worker(fn)
	}
}

func (p *Pool) worker(fn func()) {
	defer p.running.Add(-1)
	fn()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for range resetAfter {
		select {
		case fn := <-p.work:
			fn()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
	// Exits: the next Go starts a fresh goroutine.
}
