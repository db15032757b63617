package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Losing a NATS node: what a request in flight meets, and what this file does.
//
//   - A request sent on the connection to a server that dies is never
//     answered (the client reconnects to another server, but the reply is
//     gone). Every attempt is bounded by Config.RequestTimeout instead of the
//     caller's deadline, which may be minutes away.
//   - While the cluster elects a new leader for a stream nobody answers a
//     publish (no responders, or a timeout), and the API may answer 503.
//
// Both are worth retrying; every publish carries a message id, so a retry
// whose first attempt was in fact stored is deduplicated by the stream (the
// id is replicated with the message) and returns the first copy's sequence.

// retryable reports whether a failed JetStream request may succeed when made
// again after a short wait.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code == 503
	}
	return false
}

// retryWaits yields the pause before each retry of an operation that may go
// on until deadline (the first pause short: a failed-over leader is usually
// back within a second), and stops when ctx is done or the deadline is near.
type retryWaits struct {
	deadline time.Time
	next     time.Duration
}

func newRetryWaits(retryFor time.Duration) *retryWaits {
	return &retryWaits{deadline: time.Now().Add(retryFor), next: 50 * time.Millisecond}
}

// wait pauses before the next attempt; false means give up (the retry
// window is over or ctx is done).
func (r *retryWaits) wait(ctx context.Context) bool {
	if ctx.Err() != nil || time.Now().Add(r.next).After(r.deadline) {
		return false
	}
	t := time.NewTimer(r.next)
	defer t.Stop()
	r.next = min(r.next*2, time.Second)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// publishAcked publishes msg under msgID and returns the stream's ack. Each
// attempt waits at most Config.RequestTimeout; retryable failures are retried
// for up to Config.RetryFor (never beyond ctx).
func (b *Bus) publishAcked(ctx context.Context, msg *nats.Msg, msgID string) (*jetstream.PubAck, error) {
	waits := newRetryWaits(b.cfg.RetryFor)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
		ack, err := b.js.PublishMsg(actx, msg, jetstream.WithMsgID(msgID))
		cancel()
		if err == nil {
			if attempt > 1 {
				b.logger.InfoContext(ctx, "publish acknowledged after retrying", "subject", msg.Subject, "msg_id", msgID, "attempts", attempt, "duplicate", ack.Duplicate)
			}
			return ack, nil
		}
		if !retryable(err) || !waits.wait(ctx) {
			if attempt > 1 {
				return nil, fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return nil, err
		}
		b.logger.WarnContext(ctx, "publish not acknowledged; retrying under the same message id", "subject", msg.Subject, "msg_id", msgID, "attempt", attempt, "err", err)
	}
}

// publishBatch publishes the messages build makes (ids[i] is the message
// id of message i; each is built once, just before it is first sent)
// asynchronously and returns the stream sequence of each, every ack
// checked. The messages whose ack did not come (a timeout, no leader) are
// published again, under the same ids, for up to Config.RetryFor. done
// (when not nil) is called, once publishBatch is over, with each message
// the client no longer holds: its last publication was answered, with an
// ack or an error (one still unanswered may yet be sent again by the
// client, so its buffer must not be reused).
func (b *Bus) publishBatch(ctx context.Context, ids []string, build func(int) (*nats.Msg, error), done func(int)) ([]uint64, error) {
	msgs := make([]*nats.Msg, len(ids))
	seqs := make([]uint64, len(ids))
	pending := make([]int, len(ids))
	for i := range pending {
		pending[i] = i
	}
	held := make([]bool, len(ids)) // sent, and its last publication unanswered
	if done != nil {
		defer func() {
			for i, m := range msgs {
				if m != nil && !held[i] {
					done(i)
				}
			}
		}()
	}
	waits := newRetryWaits(b.cfg.RetryFor)
	for attempt := 1; ; attempt++ {
		failed, err := b.publishBatchOnce(ctx, msgs, ids, build, pending, seqs, held)
		if len(failed) == 0 && err == nil {
			return seqs, nil
		}
		if !retryable(err) || !waits.wait(ctx) {
			return nil, fmt.Errorf("bus: %d of %d events not acknowledged (attempt %d): %w", len(failed), len(ids), attempt, err)
		}
		b.logger.WarnContext(ctx, "batch partly not acknowledged; publishing the rest again under the same message ids", "unacknowledged", len(failed), "batch", len(ids), "attempt", attempt, "err", err)
		pending = failed
	}
}

// publishBatchOnce is one attempt of publishBatch over the messages at
// pending (built on first use into msgs): it fills seqs and returns the
// indices that failed with a retryable error (the last one in err), or a
// permanent error. held[i] is set while message i's publication is
// unanswered.
func (b *Bus) publishBatchOnce(ctx context.Context, msgs []*nats.Msg, ids []string, build func(int) (*nats.Msg, error), pending []int, seqs []uint64, held []bool) ([]int, error) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, len(pending))
	var failed []int
	var last error
	for k, i := range pending {
		if msgs[i] == nil {
			m, err := build(i)
			if err != nil {
				return nil, err
			}
			msgs[i] = m
		}
		held[i] = true
		f, err := b.js.PublishMsgAsync(msgs[i], jetstream.WithMsgID(ids[i]))
		if err != nil {
			if !retryable(err) {
				return nil, fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
			}
			failed, last = append(failed, i), err
			continue
		}
		futures[k] = f
	}
	for k, i := range pending {
		f := futures[k]
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			seqs[i], held[i] = ack.Sequence, false
		case err := <-f.Err():
			held[i] = false
			if !retryable(err) {
				return nil, fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
			}
			failed, last = append(failed, i), err
		case <-actx.Done():
			failed, last = append(failed, i), actx.Err()
		}
	}
	return failed, last
}
