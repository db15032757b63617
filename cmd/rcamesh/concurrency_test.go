package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// TestConcurrentManualCommandsLoseNoPin fires 100 slash commands at one
// session at once and checks that every returned pin is in the session.
func TestConcurrentManualCommandsLoseNoPin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	set, err := fixture.New(sc, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := startMesh(ctx, set, filepath.Join(t.TempDir(), "data"), logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	router := routerv1.NewRouterServiceClient(m.conn)
	commands := []string{"/status namespace=retail", "/events namespace=retail", "/pods namespace=retail", "/deployments namespace=retail"}
	var mu sync.Mutex
	ids := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := router.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "burst",
				Input: &routerv1.InvestigateRequest_Command{Command: fmt.Sprintf("%s label_selector=app=x%d", commands[0], i)}})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			ids[resp.GetPinId()] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a command failed: %v", err)
	}
	if len(ids) != 100 {
		t.Fatalf("%d distinct pin ids for 100 commands", len(ids))
	}
	brain := brainv1.NewBrainServiceClient(m.conn)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := brain.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: "burst"})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, p := range resp.GetPins() {
			if ids[p.GetId()] {
				found++
			}
		}
		if found == 100 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 100 pins reached the session", found)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
