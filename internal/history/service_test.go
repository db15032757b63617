package history

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
)

// TestRetentionLoop: the module deletes what finished before now-Retention
// as soon as it runs, and keeps the rest.
func TestRetentionLoop(t *testing.T) {
	ctx := context.Background()
	s := kvStore(t)
	for _, f := range fixtures {
		if err := s.Save(ctx, f.investigation()); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	// "Now" is inv-a4's start: inv-a1..a2 finished more than 90 minutes before.
	cfg.Retention, cfg.RetentionInterval = 90*time.Minute, time.Hour
	svc, err := New(cfg, Deps{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	svc.now = func() time.Time { return t0.Add(3 * time.Hour) }
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := svc.ListInvestigations(ctx, &historyv1.ListInvestigationsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetInvestigations()) == 3 {
			if got := resp.GetInvestigations()[2].GetInvestigationId(); got != "inv-a3" {
				t.Errorf("oldest kept %s, want inv-a3", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention left %d investigations, want 3", len(resp.GetInvestigations()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServiceErrors(t *testing.T) {
	svc, err := New(DefaultConfig(), Deps{Store: kvStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"bad token", func() error {
			_, err := svc.ListInvestigations(ctx, &historyv1.ListInvestigationsRequest{PageToken: "%%%"})
			return err
		}, codes.InvalidArgument},
		{"negative page size", func() error {
			_, err := svc.ListInvestigations(ctx, &historyv1.ListInvestigationsRequest{PageSize: -1})
			return err
		}, codes.InvalidArgument},
		{"empty id", func() error {
			_, err := svc.GetInvestigation(ctx, &historyv1.GetInvestigationRequest{})
			return err
		}, codes.InvalidArgument},
		{"unknown id", func() error {
			_, err := svc.GetInvestigation(ctx, &historyv1.GetInvestigationRequest{InvestigationId: "inv-nope"})
			return err
		}, codes.NotFound},
	} {
		if got := status.Code(tc.call()); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, err := New(DefaultConfig(), Deps{}); err == nil {
		t.Error("New without a store succeeded")
	}
}
