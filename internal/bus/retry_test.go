package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"attempt timed out", fmt.Errorf("publish: %w", context.DeadlineExceeded), true},
		{"nats timeout", nats.ErrTimeout, true},
		{"no stream leader", jetstream.ErrNoStreamResponse, true},
		{"no responders", nats.ErrNoResponders, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"async ack timed out", jetstream.ErrAsyncPublishTimeout, true},
		{"cluster unavailable", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{"caller cancelled", context.Canceled, false},
		{"too big", nats.ErrMaxPayload, false},
		{"bad request", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest}, false},
		{"closed", nats.ErrConnectionClosed, false},
		{"other", errors.New("boom"), false},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("%s: retryable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestRetryWaitsStopAtTheWindowAndTheContext(t *testing.T) {
	r := newRetryWaits(time.Hour)
	if !r.wait(context.Background()) || r.next != 100*time.Millisecond {
		t.Fatalf("first wait: next %s, want 100ms after a 50ms pause", r.next)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r.wait(ctx) {
		t.Error("waited although the context is done")
	}
	if newRetryWaits(0).wait(context.Background()) {
		t.Error("waited with no retry window")
	}
}
