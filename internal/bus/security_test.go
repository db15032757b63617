package bus_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/auth/authtest"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func password(u string) string { return "pw-of-" + u + "-0123456789" }

// securedServer starts an embedded server with the mesh's users and a
// reader, listening on loopback, and returns its client URL.
func securedServer(t *testing.T) string {
	t.Helper()
	ctx := testCtx(t)
	srv, nc, err := bus.StartEmbeddedConfig(ctx, bus.EmbeddedConfig{
		StoreDir:       t.TempDir(),
		Listen:         ":0", // no host: loopback
		Users:          bus.Users(password, "reader-password-0123456789"),
		ClientUser:     bus.UserAll,
		ClientPassword: password(bus.UserAll),
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); srv.Shutdown(); srv.WaitForShutdown() })
	if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") {
		t.Errorf("embedded server listens on %s, want loopback", srv.ClientURL())
	}
	// The streams exist before any service connects (as in -target=all).
	if _, err := bus.ConnectConfig(ctx, nc, nil, bus.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL()
}

func dialAs(t *testing.T, url, user, pw string) (*nats.Conn, error) {
	t.Helper()
	nc, err := bus.Dial(testCtx(t), bus.Options{URL: url, User: user, Password: pw})
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

// permissionError waits for the async permission violation the server
// reports on a connection (publish errors are asynchronous in NATS).
func expectViolation(t *testing.T, nc *nats.Conn, do func() error) {
	t.Helper()
	errc := make(chan error, 8)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errc <- err })
	err := do()
	if err == nil {
		select {
		case err = <-errc:
		case <-testCtx(t).Done():
		}
	}
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "permission") {
		t.Fatalf("want a permissions violation, got %v", err)
	}
}

func TestServicePublishersMatchTheMesh(t *testing.T) {
	// The five services, the SAST triage module (it publishes the pins and
	// lifecycle of its own sessions; its module name signs them) and the
	// history recorder (it writes its own bucket).
	known := append(append([]string(nil), mesh.All...), "triage", "history")
	for key, pubs := range bus.Publishers {
		for _, p := range pubs {
			if !contains(known, p) {
				t.Errorf("Publishers[%s] names %q, not a service of the mesh %v", key, p, mesh.All)
			}
		}
	}
	for _, s := range bus.Services {
		if !contains(known, s) {
			t.Errorf("bus.Services has %q, not in mesh.All", s)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestNATSRefusesAnonymousAndEnforcesPerServicePermissions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	url := securedServer(t)
	ctx := testCtx(t)

	if _, err := dialAs(t, url, "", ""); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connection: err = %v, want an authorization violation", err)
	}
	if _, err := dialAs(t, url, bus.UserPrefix+"tools", "wrong-password-0123"); err == nil {
		t.Fatal("a wrong password was accepted")
	}

	cfg := bus.DefaultConfig()
	cfg.SigningKey = testKey
	connect := func(svc string) *bus.Bus {
		nc, err := dialAs(t, url, bus.UserPrefix+svc, password(bus.UserPrefix+svc))
		if err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
		b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
		if err != nil {
			t.Fatalf("%s: connect bus (stream create/update): %v", svc, err)
		}
		return b.As(svc)
	}

	// What each service does in the mesh works under its own user.
	tools := connect("tools")
	if _, err := tools.PublishPin(ctx, pinEvent("s1", "p1", added, 1)); err != nil {
		t.Fatalf("tools publishes a pin: %v", err)
	}
	critic := connect("critic")
	if _, err := critic.PublishPin(ctx, pinEvent("s1", "p1", updated, 2)); err != nil {
		t.Fatalf("critic publishes a verdict: %v", err)
	}
	if err := critic.ConsumeDurable(cctx(ctx), bus.ConsumerCritic, bus.PinAddedFilter, func(context.Context, *evidencev1.SessionEvent) error { return nil }); err != nil {
		t.Fatalf("critic consumes pins: %v", err)
	}
	brain := connect("brain")
	if _, err := brain.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{SessionId: "s1", Kind: stage}); err != nil {
		t.Fatalf("brain publishes lifecycle: %v", err)
	}
	if err := brain.Enqueue(ctx, "w1", []byte(`{}`)); err != nil {
		t.Fatalf("brain enqueues work: %v", err)
	}
	for _, b := range []string{bus.BucketSessions, bus.BucketRecords, bus.BucketFingerprints} {
		kv, err := brain.KV(ctx, b)
		if err != nil {
			t.Fatalf("brain opens %s: %v", b, err)
		}
		if _, err := kv.Put(ctx, "k1", []byte("v")); err != nil {
			t.Fatalf("brain writes %s: %v", b, err)
		}
	}
	evs, err := brain.Replay(ctx, bus.SessionFilter("s1"), 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("brain replays the session: %d events, %v (want 3)", len(evs), err)
	}
	delivery := connect("delivery")
	kv, err := delivery.KV(ctx, bus.BucketReports)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "r1", []byte("v")); err != nil {
		t.Fatalf("delivery writes reports: %v", err)
	}

	// What a service may not do.
	if _, err := tools.PublishLifecycle(deny(t), &evidencev1.LifecycleEvent{SessionId: "s1", Kind: stage}); err == nil {
		t.Error("tools published a lifecycle event")
	}
	if _, err := tools.PublishPin(deny(t), pinEvent("s1", "p1", rejected, 3)); err == nil {
		t.Error("tools published a critic verdict")
	}
	if _, err := critic.PublishPin(deny(t), pinEvent("s1", "p9", added, 1)); err == nil {
		t.Error("critic published a new pin")
	}
	rkv, err := tools.KV(ctx, bus.BucketFingerprints) // reading is allowed
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rkv.Put(deny(t), "fp", []byte(`{"first_seen":"2100-01-01T00:00:00Z"}`)); err == nil {
		t.Error("tools wrote a fingerprint")
	}
	if err := tools.JetStream().DeleteStream(deny(t), bus.StreamEvents); err == nil {
		t.Error("tools deleted the events stream")
	}

	// The reader: replays and follows, never writes.
	rnc, err := dialAs(t, url, bus.UserReader, "reader-password-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(rnc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(deny(t), bus.PinSubject("s1", added), []byte("forged")); err == nil {
		t.Error("the reader published a pin")
	}
	if err := js.DeleteStream(deny(t), bus.StreamEvents); err == nil {
		t.Error("the reader deleted the stream")
	}
	if _, err := js.CreateOrUpdateKeyValue(deny(t), jetstream.KeyValueConfig{Bucket: bus.BucketFingerprints}); err == nil {
		t.Error("the reader created or updated a bucket")
	}
	reader := bus.ConnectReader(rnc, cfg)
	evs, err = reader.Replay(ctx, bus.SessionFilter("s1"), 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("reader replays: %d events, %v (want 3)", len(evs), err)
	}
	sub, err := rnc.SubscribeSync(bus.SessionSubjects)
	if err != nil {
		t.Fatal(err)
	}
	// The server must know the subscription before the event is published,
	// or the event passes before it (core NATS keeps nothing).
	if err := rnc.Flush(); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if _, err := brain.PublishLifecycle(sctx, &evidencev1.LifecycleEvent{SessionId: "s2", Kind: stage}); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsgWithContext(sctx); err != nil {
		t.Fatalf("reader's core subscription: %v", err)
	}
	expectViolation(t, rnc, func() error { return rnc.Publish(bus.PinSubject("s1", added), []byte("x")) })
}

// deny is the context of an operation that must be refused: a refused
// JetStream request gets no reply, so it ends with this deadline.
func deny(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func cctx(ctx context.Context) context.Context {
	c, cancel := context.WithCancel(ctx)
	cancel() // ConsumeDurable returns nil once its consumer exists and ctx is done
	return c
}

func TestForgedEventsAreRefusedOnRead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.SigningKey = testKey
	_, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.SigningKey = []byte("another-mesh-key-0123456789abcdef")
	ob, err := bus.ConnectConfig(ctx, nc, nil, other)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := bus.ConnectConfig(ctx, nc, nil, bus.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}

	mustPublishPin(t, ctx, b.As("tools"), pinEvent("s", "genuine", added, 1))
	mustPublishPin(t, ctx, unsigned.As("tools"), pinEvent("s", "unsigned", added, 1))
	mustPublishPin(t, ctx, ob.As("tools"), pinEvent("s", "other-key", added, 1))
	mustPublishPin(t, ctx, b.As("critic"), pinEvent("s", "critic-added", added, 1))
	// A genuine message copied to another session's subject.
	ev := pinEvent("victim", "moved", added, 1)
	mustPublishPin(t, ctx, b.As("tools"), ev)
	stream, err := b.JetStream().Stream(ctx, bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := stream.GetLastMsgForSubject(ctx, bus.PinSubject("victim", added))
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: bus.PinSubject("s", added), Header: raw.Header, Data: raw.Data}
	msg.Header.Del(jetstream.MsgIDHeader)
	if _, err := b.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	// A genuine signature over a changed payload.
	tampered := proto.CloneOf(ev)
	tampered.Pin.Claim = "tampered"
	data, _ := proto.Marshal(tampered)
	msg2 := &nats.Msg{Subject: bus.PinSubject("victim", added), Header: raw.Header, Data: data}
	msg2.Header.Del(jetstream.MsgIDHeader)
	if _, err := b.JetStream().PublishMsg(ctx, msg2); err != nil {
		t.Fatal(err)
	}

	evs, err := b.Replay(ctx, bus.SessionFilter("s"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].GetPin().GetPin().GetId() != "genuine" {
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.GetPin().GetPin().GetId())
		}
		t.Errorf("replay of s = %v, want only the genuine pin", ids)
	}
	evs, err = b.Replay(ctx, bus.SessionFilter("victim"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].GetPin().GetPin().GetClaim() == "tampered" {
		t.Errorf("replay of victim = %v, want the untampered pin only", evs)
	}

	// The critic's durable consumer terminates forged pins instead of handling them.
	seen := make(chan string, 16)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.ConsumeDurable(cctx, "sec-test", bus.PinAddedFilter, func(_ context.Context, e *evidencev1.SessionEvent) error {
			seen <- e.GetPin().GetPin().GetId()
			return nil
		})
	}()
	var got []string
	for len(got) < 2 {
		select {
		case id := <-seen:
			got = append(got, id)
		case <-ctx.Done():
			t.Fatalf("consumer saw %v", got)
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, id := range got {
		if id != "genuine" && id != "moved" {
			t.Errorf("the durable consumer handled forged pin %q", id)
		}
	}
}

// TestServerConfigRunsAnExternalNATS: the generated nats-server config
// (what `rcamesh nats-config` prints for compose) loads in nats-server and
// enforces the same users and permissions.
func TestServerConfigRunsAnExternalNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	conf, err := bus.ServerConfig(bus.Users(password, ""), t.TempDir(), "127.0.0.1:4222")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(conf), password(bus.UserPrefix+"tools")) {
		t.Fatal("the config holds a clear-text password")
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server rejects the config: %v", err)
	}
	opts.Port, opts.HTTPPort, opts.NoSigs, opts.NoLog = -1, -1, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	if _, err := dialAs(t, srv.ClientURL(), "", ""); err == nil {
		t.Error("anonymous client accepted")
	}
	nc, err := dialAs(t, srv.ClientURL(), bus.UserPrefix+"brain", password(bus.UserPrefix+"brain"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, bus.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{SessionId: "s", Kind: stage}); err != nil {
		t.Errorf("brain publishes lifecycle: %v", err)
	}
	tnc, err := dialAs(t, srv.ClientURL(), bus.UserPrefix+"tools", password(bus.UserPrefix+"tools"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := bus.ConnectConfig(ctx, tnc, nil, bus.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.PublishLifecycle(deny(t), &evidencev1.LifecycleEvent{SessionId: "s", Kind: stage}); err == nil {
		t.Error("tools published a lifecycle event")
	}
}

// TestEmbeddedNATSOverTLS: with a TLS config the embedded server's TCP
// listener requires TLS (here with client certificates); the in-process
// connection keeps working without it.
func TestEmbeddedNATSOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	dir := t.TempDir()
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, dir, 3)
	rl, err := auth.NewReloader(auth.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File(t, dir), RequireClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	srv, nc, err := bus.StartEmbeddedConfig(ctx, bus.EmbeddedConfig{
		StoreDir: t.TempDir(), Listen: "127.0.0.1:0",
		Users: bus.Users(password, ""), ClientUser: bus.UserAll, ClientPassword: password(bus.UserAll),
		TLS: rl.ServerConfig(), TLSVerify: true,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); srv.Shutdown(); srv.WaitForShutdown() })
	if _, err := bus.ConnectConfig(ctx, nc, nil, bus.DefaultConfig()); err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	addr := srv.ClientURL()[strings.Index(srv.ClientURL(), "://")+3:]
	user, pw := bus.UserPrefix+"tools", password(bus.UserPrefix+"tools")
	if _, err := bus.Dial(ctx, bus.Options{URL: "nats://" + addr, User: user, Password: pw}); err == nil {
		t.Error("a plaintext client connected")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := bus.Dial(ctx, bus.Options{URL: "tls://" + addr, User: user, Password: pw, TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}); err == nil {
		t.Error("a TLS client without a certificate connected")
	}
	c, err := bus.Dial(ctx, bus.Options{URL: "tls://" + addr, User: user, Password: pw, TLS: rl.ClientConfig("127.0.0.1")})
	if err != nil {
		t.Fatalf("mTLS client: %v", err)
	}
	c.Close()
}
