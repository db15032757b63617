package bus_test

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestOnConnPublishesThroughItsConnection: a Bus moved to another
// in-process connection publishes and reads through it, signs as its
// origin, and its origin's readers (another connection) verify what it
// signed from the shared cache; closing one connection leaves the other.
func TestOnConnPublishesThroughItsConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(t, testKey)
	srv, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := bus.ConnectInProcess(srv, bus.EmbeddedConfig{}, "tools-own")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tools, err := b.As("tools").OnConn(other)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Conn() != other || b.Conn() != nc {
		t.Fatal("OnConn did not move the Bus to the other connection")
	}
	sent := other.Statistics.OutMsgs
	if _, err := tools.PublishPin(ctx, pinEvent("s", "p1", added, 1)); err != nil {
		t.Fatal(err)
	}
	if other.Statistics.OutMsgs == sent {
		t.Error("the pin was not published through the Bus's own connection")
	}
	if n := bus.VerifiedCount(b); n != 1 {
		t.Errorf("the origin's cache holds %d verified signatures after its copy signed one, want 1 (shared)", n)
	}
	got, err := b.Replay(ctx, bus.SessionFilter("s"), 0)
	if err != nil || len(got) != 1 || got[0].GetPin().GetPin().GetId() != "p1" {
		t.Fatalf("the origin read %v, %v; want the signed pin", got, err)
	}
	other.Close()
	if got, err := b.Replay(ctx, bus.SessionFilter("s"), 0); err != nil || len(got) != 1 {
		t.Errorf("after the other connection closed the origin read %v, %v", got, err)
	}
}
