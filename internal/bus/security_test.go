package bus_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
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
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/auth/authtest"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// meshIdentity is the identity of a process holding key (all services).
func meshIdentity(t testing.TB, key []byte) *auth.Identity {
	t.Helper()
	id, err := auth.IdentityFromMeshKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

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
	known := append(append([]string(nil), mesh.All...), "triage", "history", "gateway")
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
	cfg.Keys = meshIdentity(t, testKey)
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
	pkv, err := delivery.KV(ctx, bus.BucketPageClaims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pkv.Create(ctx, "delivery_fp", []byte(`{"session_id":"s1"}`)); err != nil {
		t.Fatalf("delivery claims a page: %v", err)
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
	// The fingerprints bucket has one writer, the brain (the owner of the
	// alert-fingerprint dedup guardrail): delivery may read it, not write it.
	dfp, err := delivery.KV(ctx, bus.BucketFingerprints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dfp.Get(ctx, "k1"); err != nil {
		t.Errorf("delivery reads a fingerprint: %v", err)
	}
	for name, write := range map[string]func(context.Context) error{
		"put": func(c context.Context) error {
			_, err := dfp.Put(c, "fp", []byte(`{"first_seen":"2100-01-01T00:00:00Z"}`))
			return err
		},
		"create": func(c context.Context) error { _, err := dfp.Create(c, "fp2", []byte(`{}`)); return err },
		"delete": func(c context.Context) error { return dfp.Delete(c, "k1") },
	} {
		if err := write(deny(t)); err == nil {
			t.Errorf("delivery's %s on the fingerprints bucket was accepted", name)
		}
	}
	if e, err := dfp.Get(ctx, "k1"); err != nil || string(e.Value()) != "v" {
		t.Errorf("the brain's fingerprint after delivery's attempts: %v %v", e, err)
	}
	tpc, err := tools.KV(ctx, bus.BucketPageClaims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpc.Put(deny(t), "delivery_fp", []byte(`{}`)); err == nil {
		t.Error("tools wrote delivery's page claims")
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
	cfg.Keys = meshIdentity(t, testKey)
	_, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Keys = meshIdentity(t, []byte("another-mesh-key-0123456789abcdef"))
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

// TestPinsSignedByAnotherServiceOrOfAForbiddenKindAreRefused: each service
// signs with its own key. A process holding only the credentials issued to
// delivery cannot sign as the tools service; a pin it signs claiming to be
// the tools', or signs as itself, is refused on read; a service allowed to
// publish added pins (router, brain) may still not write a tool's result.
// Readers holding public keys only verify what the others sign.
func TestPinsSignedByAnotherServiceOrOfAForbiddenKindAreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	_, nc := bustest.Server(t)
	issued := func(svc string) *auth.Identity {
		c, err := auth.IssueCredentials(testKey, []string{svc}, bus.UserPrefix+svc, bus.Services)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), svc+".cred")
		if err := auth.WriteCredentials(path, c); err != nil {
			t.Fatal(err)
		}
		id, err := auth.LoadCredentials(path)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	busOf := func(keys bus.Keys) *bus.Bus {
		cfg := bus.DefaultConfig()
		cfg.Keys = keys
		b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := busOf(meshIdentity(t, testKey))
	delivery := busOf(issued("delivery"))
	tools := busOf(issued("tools"))

	toolPin := func(session, id string) *evidencev1.PinEvent {
		ev := pinEvent(session, id, added, 1)
		ev.Pin.Success, ev.Pin.RawOutput = true, "OOMKilled x40"
		return ev
	}
	// Genuine: the tools service with its issued key; a failed call by the router.
	mustPublishPin(t, ctx, tools.As("tools"), toolPin("s", "genuine"))
	mustPublishPin(t, ctx, full.As("router"), pinEvent("s", "router-failed-call", added, 1))
	cp := toolPin("s", "brain-copy")
	cp.Pin.Metadata = mustStructpb(t, map[string]any{"parent_ref": map[string]any{"session_id": "child", "pin_id": "genuine"}})
	mustPublishPin(t, ctx, full.As("brain"), cp)

	// delivery's credentials hold no key of the tools service.
	if _, err := delivery.As("tools").PublishPin(ctx, toolPin("s", "no-key")); err == nil || !strings.Contains(err.Error(), "no signing key") {
		t.Errorf("delivery's credentials published as tools: %v", err)
	}
	// delivery signs with its own key and claims to be the tools service.
	dkey, ok := issued("delivery").SigningKey("delivery")
	if !ok {
		t.Fatal("delivery's credentials hold no delivery key")
	}
	ev := toolPin("s", "delivery-claims-tools")
	data, _ := proto.Marshal(ev)
	subj := bus.PinSubject("s", added)
	msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	msg.Header.Set(bus.HeaderEventKind, bus.EventKindPin)
	msg.Header.Set(bus.HeaderSigner, "tools")
	msg.Header.Set(bus.HeaderSignature, base64.RawStdEncoding.EncodeToString(
		ed25519.Sign(dkey, []byte("tools\n"+subj+"\n"+bus.EventKindPin+"\n"+string(data)))))
	if _, err := full.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	// Signed as itself: delivery publishes no pins.
	mustPublishPin(t, ctx, delivery.As("delivery"), toolPin("s", "delivery-as-itself"))
	// Allowed publishers of added pins, with a kind they may not write.
	mustPublishPin(t, ctx, full.As("router"), toolPin("s", "router-tool-result"))
	mustPublishPin(t, ctx, full.As("brain"), toolPin("s", "brain-tool-result"))
	mustPublishPin(t, ctx, full.As("triage"), toolPin("s", "triage-tool-result"))

	want := []string{"genuine", "router-failed-call", "brain-copy"}
	for name, reader := range map[string]*bus.Bus{"mesh key": full, "delivery's public keys": delivery, "tools' public keys": tools} {
		evs, err := reader.Replay(ctx, bus.SessionFilter("s"), 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.GetPin().GetPin().GetId())
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("reader with the %s: replay = %v, want %v", name, got, want)
		}
	}
}

func TestPinKindOf(t *testing.T) {
	md := func(m map[string]any) *structpb.Struct { s, _ := structpb.NewStruct(m); return s }
	for _, tc := range []struct {
		name string
		pin  *evidencev1.EvidencePin
		want string
	}{
		{"tool result", &evidencev1.EvidencePin{Success: true, RawOutput: "x"}, bus.PinKindTool},
		{"no data is a result", &evidencev1.EvidencePin{NoData: true}, bus.PinKindTool},
		{"failed with output is a result", &evidencev1.EvidencePin{RawOutput: "error body"}, bus.PinKindTool},
		{"failed with evidence is a result", &evidencev1.EvidencePin{SupportingEvidence: []string{"x"}}, bus.PinKindTool},
		{"failed call", &evidencev1.EvidencePin{Error: "unavailable"}, bus.PinKindFailedCall},
		{"parent copy", &evidencev1.EvidencePin{Success: true, Metadata: md(map[string]any{"parent_ref": map[string]any{}})}, bus.PinKindParentCopy},
		{"sast finding", &evidencev1.EvidencePin{SourceAgent: "triage", SourceTool: "sast_triage", Success: true}, bus.PinKindFinding},
		{"sast tool name alone", &evidencev1.EvidencePin{SourceTool: "sast_triage", Success: true}, bus.PinKindTool},
	} {
		if got := bus.PinKindOf(tc.pin); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// Every kind has writers, and they are the publishers of added pins.
	var union []string
	for _, ws := range bus.PinWriters {
		union = append(union, ws...)
	}
	for _, p := range bus.Publishers["pin.added"] {
		if !contains(union, p) {
			t.Errorf("%s publishes added pins but may write no kind", p)
		}
	}
	for _, p := range union {
		if !contains(bus.Publishers["pin.added"], p) {
			t.Errorf("%s may write a kind of pin but not publish added pins", p)
		}
	}
}

func mustStructpb(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerdictsCarryOnlyTheCriticsFields: a verdict (signed by the critic)
// that rewrites the judged pin's claim and output keeps only its own
// fields, and a verdict on a pin never added brings no pin in: on a
// whole-session replay, a replay from a cursor, a replay of verdicts only
// and a follow from a cursor.
func TestVerdictsCarryOnlyTheCriticsFields(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(t, testKey)
	_, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	orig := pinEvent("v", "p1", added, 1)
	orig.Pin.Success, orig.Pin.RawOutput, orig.Pin.SourceTool = true, "restarts=0", "check_pod_status"
	mustPublishPin(t, ctx, b.As("tools"), orig)
	verdict := pinEvent("v", "p1", updated, 2)
	verdict.Pin.Success, verdict.Pin.RawOutput, verdict.Pin.Claim, verdict.Pin.SourceTool = true, "OOMKilled x40", "rewritten by the critic", "get_events"
	verdict.Pin.ValidationStatus, verdict.Pin.Confidence, verdict.Pin.CriticRationale = evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED, 90, "VALIDATED"
	verdict.Pin.Supports = []string{"p0"}
	mustPublishPin(t, ctx, b.As("critic"), verdict)
	mustPublishPin(t, ctx, b.As("critic"), pinEvent("v", "ghost", updated, 2))

	evs, err := b.Replay(ctx, bus.SessionFilter("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("replay: %d events, want the pin and its verdict (not the ghost's): %v", len(evs), evs)
	}
	got := evs[1].GetPin().GetPin()
	if got.GetClaim() != orig.Pin.GetClaim() || got.GetRawOutput() != "restarts=0" || got.GetSourceTool() != "check_pod_status" {
		t.Errorf("the verdict rewrote the tool's content: claim %q output %q tool %q", got.GetClaim(), got.GetRawOutput(), got.GetSourceTool())
	}
	if got.GetValidationStatus() != evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED || got.GetConfidence() != 90 ||
		got.GetCriticRationale() != "VALIDATED" || got.GetVersion() != 2 || len(got.GetSupports()) != 1 {
		t.Errorf("the verdict's own fields are lost: %v", got)
	}
	// Reads from a cursor after the added pin, and of verdicts only, bind
	// the same way.
	bound := func(name string, evs []*evidencev1.SessionEvent) {
		t.Helper()
		if len(evs) != 1 || evs[0].GetPin().GetPin().GetClaim() != orig.Pin.GetClaim() ||
			evs[0].GetPin().GetPin().GetValidationStatus() != evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED {
			t.Errorf("%s: %v, want the one verdict bound to the tool's pin", name, evs)
		}
	}
	after, err := b.Replay(ctx, bus.SessionFilter("v"), evs[0].GetSequence())
	if err != nil {
		t.Fatal(err)
	}
	bound("replay after a cursor", after)
	only, err := b.Replay(ctx, bus.PinSubject("v", updated), 0)
	if err != nil {
		t.Fatal(err)
	}
	bound("replay of verdicts only", only)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got2 := make(chan *evidencev1.SessionEvent, 4)
	go func() {
		_ = b.Follow(fctx, bus.SessionFilter("v"), evs[0].GetSequence(), func(_ context.Context, e *evidencev1.SessionEvent) error {
			got2 <- e
			return nil
		})
	}()
	select {
	case e := <-got2:
		bound("follow from a cursor", []*evidencev1.SessionEvent{e})
	case <-ctx.Done():
		t.Fatal("follow delivered nothing")
	}
	// The ghost's verdict never follows (the next event is a new one).
	mustPublishPin(t, ctx, b.As("tools"), pinEvent("v", "p2", added, 1))
	select {
	case e := <-got2:
		if id := e.GetPin().GetPin().GetId(); id != "p2" {
			t.Errorf("follow delivered %s after the bound verdict, want p2", id)
		}
	case <-ctx.Done():
		t.Fatal("follow delivered nothing more")
	}
}

// TestProcessOfSeveralServicesHasTheirRightsOnly: a process running tools,
// router and critic connects as their combined user, which may publish
// pins and verdicts but not lifecycle events, and may not write the
// fingerprints bucket.
func TestProcessOfSeveralServicesHasTheirRightsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	if u := bus.UserFor([]string{"tools", "router", "critic"}); u != bus.UserPrefix+"critic+router+tools" {
		t.Fatalf("UserFor = %s", u)
	}
	if u := bus.UserFor([]string{"brain", "history"}); u != bus.UserAll {
		t.Errorf("a mix with a module: %s, want %s", u, bus.UserAll)
	}
	url := securedServer(t)
	ctx := testCtx(t)
	// The brain creates the fingerprints bucket (its only writer).
	bnc, err := dialAs(t, url, bus.UserPrefix+"brain", password(bus.UserPrefix+"brain"))
	if err != nil {
		t.Fatal(err)
	}
	if bb, err := bus.ConnectConfig(ctx, bnc, nil, bus.DefaultConfig()); err != nil {
		t.Fatal(err)
	} else if _, err := bb.KV(ctx, bus.BucketFingerprints); err != nil {
		t.Fatal(err)
	}
	u := bus.UserFor([]string{"tools", "router", "critic"})
	nc, err := dialAs(t, url, u, password(u))
	if err != nil {
		t.Fatal(err)
	}
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(t, testKey)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := pinEvent("c", "p1", added, 1)
	tp.Pin.Success, tp.Pin.RawOutput = true, "x"
	if _, err := b.As("tools").PublishPin(ctx, tp); err != nil {
		t.Errorf("tools' pin: %v", err)
	}
	if _, err := b.As("critic").PublishPin(ctx, pinEvent("c", "p1", updated, 2)); err != nil {
		t.Errorf("critic's verdict: %v", err)
	}
	if _, err := b.As("brain").PublishLifecycle(deny(t), &evidencev1.LifecycleEvent{SessionId: "c", Kind: stage}); err == nil {
		t.Error("the tools+router+critic user published a lifecycle event")
	}
	kv, err := b.KV(ctx, bus.BucketFingerprints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(deny(t), "fp", []byte(`{}`)); err == nil {
		t.Error("the tools+router+critic user wrote a fingerprint")
	}
}

// TestAuthorizationConfigIncluded: the authorization block alone (what
// `rcamesh nats-config -authorization-only` prints for the official NATS
// chart) is included from another directory by a config that holds the
// server's own settings, as the chart's config.merge.$include does, and the
// server then refuses anonymous clients and admits the services' users.
func TestAuthorizationConfigIncluded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	auth, err := bus.AuthorizationConfig(bus.Users(password, ""))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(auth), password(bus.UserPrefix+"tools")) || strings.Contains(string(auth), "listen") {
		t.Fatalf("the authorization block holds a clear password or server settings:\n%.300s", auth)
	}
	root := t.TempDir()
	for _, d := range []string{"nats-config", "rcamesh-nats-auth"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "rcamesh-nats-auth", "auth.conf"), auth, 0o600); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf("port: 4222\njetstream {\n  store_dir: %q\n}\ninclude ../rcamesh-nats-auth/auth.conf;\n", t.TempDir())
	path := filepath.Join(root, "nats-config", "nats.conf")
	if err := os.WriteFile(path, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server rejects the config with the include: %v", err)
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
	if _, err := dialAs(t, srv.ClientURL(), bus.UserPrefix+"gateway", "wrong-password-0123456789"); err == nil {
		t.Error("a wrong password accepted")
	}
	nc, err := dialAs(t, srv.ClientURL(), bus.UserPrefix+"brain", password(bus.UserPrefix+"brain"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.ConnectConfig(testCtx(t), nc, nil, bus.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PublishLifecycle(testCtx(t), &evidencev1.LifecycleEvent{SessionId: "s", Kind: stage}); err != nil {
		t.Errorf("brain publishes lifecycle: %v", err)
	}
}

// TestFollowFactsEncoded: a follower that keeps the facts encoded gets the
// events a plain follower gets (the same events once encoded: pins, a
// parent copy, a verdict bound to its pin), the same forged or forbidden
// pins refused, and no decoded facts.
func TestFollowFactsEncoded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(t, testKey)
	_, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	facts := map[string]any{"pods": []any{map[string]any{"name": "api-1", "ready": false, "restarts": 4.0, "labels": map[string]any{"app": "api"}}}, "window_origin": "default"}
	tool := pinEvent("f", "p1", added, 1)
	tool.Pin.Success, tool.Pin.RawOutput = true, "api-1 CrashLoopBackOff"
	tool.Pin.Metadata, tool.Pin.Params = mustStructpb(t, facts), mustStructpb(t, map[string]any{"namespace": "retail"})
	mustPublishPin(t, ctx, b.As("tools"), tool)
	cp := pinEvent("f", "copy", added, 1)
	cp.Pin.Success, cp.Pin.RawOutput = true, "copied"
	cp.Pin.Metadata = mustStructpb(t, map[string]any{"parent_ref": map[string]any{"session_id": "child", "pin_id": "p1"}})
	mustPublishPin(t, ctx, b.As("brain"), cp)
	forbidden := pinEvent("f", "brain-tool-result", added, 1) // the brain may not write a tool's result
	forbidden.Pin.Success, forbidden.Pin.RawOutput, forbidden.Pin.Metadata = true, "x", mustStructpb(t, facts)
	mustPublishPin(t, ctx, b.As("brain"), forbidden)
	verdict := pinEvent("f", "p1", updated, 2)
	verdict.Pin.ValidationStatus, verdict.Pin.CriticRationale = evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED, "ok"
	mustPublishPin(t, ctx, b.As("critic"), verdict)

	follow := func(opts ...bus.ReadOption) []*evidencev1.SessionEvent {
		t.Helper()
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		got := make(chan *evidencev1.SessionEvent, 8)
		go func() {
			_ = b.Follow(fctx, bus.SessionFilter("f"), 0, func(_ context.Context, e *evidencev1.SessionEvent) error {
				got <- e
				return nil
			}, opts...)
		}()
		var evs []*evidencev1.SessionEvent
		for len(evs) < 3 {
			select {
			case e := <-got:
				evs = append(evs, e)
			case <-ctx.Done():
				t.Fatalf("follow delivered %d events", len(evs))
			}
		}
		return evs
	}
	plain, encoded := follow(), follow(bus.FactsEncoded())
	var ids []string
	for i, e := range encoded {
		ids = append(ids, e.GetPin().GetPin().GetId())
		if e.GetPin().GetPin().GetMetadata() != nil {
			t.Errorf("event %d: facts decoded", i)
		}
		data, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back := &evidencev1.SessionEvent{}
		if err := proto.Unmarshal(data, back); err != nil || !proto.Equal(back, plain[i]) {
			t.Errorf("event %d once encoded: %v (%v)\nwant %v", i, back, err, plain[i])
		}
	}
	if want := "p1,copy,p1"; strings.Join(ids, ",") != want {
		t.Errorf("followed %v, want %s (the forbidden pin refused)", ids, want)
	}
	if v := plain[2].GetPin().GetPin(); v.GetValidationStatus() != evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED ||
		v.GetMetadata().GetFields()["pods"] == nil {
		t.Errorf("the verdict is not bound to its pin's facts: %v", v)
	}
}

// TestBatchSignedEvents: events published together are signed in groups
// (one signature a group, each event carrying the group's digests) and
// each verifies alone in a reader of another process; an event whose
// payload, subject or digests were changed, or whose group header was
// removed, is refused like any forged event.
func TestBatchSignedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(t, testKey)
	_, nc := bustest.Server(t)
	b, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Another process of the mesh: the same keys, nothing it verified yet.
	reader, err := bus.ConnectConfig(ctx, nc, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 11 // two groups: 8 and 3
	evs := make([]*evidencev1.PinEvent, n)
	for i := range evs {
		evs[i] = pinEvent("s", fmt.Sprintf("p%02d", i), added, 1)
	}
	seqs, err := b.As("tools").PublishPins(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := b.JetStream().Stream(ctx, bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	raws := make([]*jetstream.RawStreamMsg, n)
	sigs := map[string]int{}
	for i, seq := range seqs {
		if raws[i], err = stream.GetMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
		if raws[i].Header.Get(bus.HeaderSignedBatch) == "" {
			t.Errorf("event %d has no group header", i)
		}
		sigs[raws[i].Header.Get(bus.HeaderSignature)]++
	}
	if len(sigs) != 2 {
		t.Errorf("%d events signed with %d signatures (%v), want 2 groups", n, len(sigs), sigs)
	}
	got, err := reader.Replay(ctx, bus.SessionFilter("s"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("the reader verified %d of %d events", len(got), n)
	}
	from := seqs[n-1] // a read from a cursor gets the last event alone
	if got, err := reader.Replay(ctx, bus.SessionFilter("s"), from-1); err != nil || len(got) != 1 || got[0].GetPin().GetPin().GetId() != "p10" {
		t.Errorf("read from the last event's cursor: %v, %v", got, err)
	}

	clone := func(h nats.Header) nats.Header {
		out := nats.Header{}
		for k, v := range h {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
	republish := func(subject string, h nats.Header, data []byte) {
		t.Helper()
		msg := &nats.Msg{Subject: subject, Header: clone(h), Data: data}
		if h.Get("Nats-Msg-Id") != "stripped" {
			msg.Header.Del(jetstream.MsgIDHeader)
		}
		if _, err := b.JetStream().PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	genuine := raws[3]
	// A changed payload under the group's signature.
	tampered := proto.CloneOf(evs[3])
	tampered.Pin.Claim = "tampered"
	tampered.Pin.Id = "tampered"
	data, _ := proto.Marshal(tampered)
	republish(genuine.Subject, genuine.Header, data)
	// The genuine event moved to another session.
	republish(bus.PinSubject("elsewhere", added), genuine.Header, genuine.Data)
	// The genuine event without its group header.
	stripped := clone(genuine.Header)
	stripped.Del(bus.HeaderSignedBatch)
	stripped.Set("Nats-Msg-Id", "stripped") // stored again despite deduplication
	republish(genuine.Subject, stripped, genuine.Data)
	// The digests changed: the event's own replaced by a forged payload's.
	forged := proto.CloneOf(evs[3])
	forged.Pin.Id = "forged"
	fdata, _ := proto.Marshal(forged)
	digests, err := base64.RawStdEncoding.DecodeString(genuine.Header.Get(bus.HeaderSignedBatch))
	if err != nil {
		t.Fatal(err)
	}
	signed := append([]byte("tools\n"+genuine.Subject+"\n"+genuine.Header.Get(bus.HeaderEventKind)+"\n"), fdata...)
	d := sha256.Sum256(signed)
	copy(digests[3*sha256.Size:], d[:])
	changed := clone(genuine.Header)
	changed.Set(bus.HeaderSignedBatch, base64.RawStdEncoding.EncodeToString(digests))
	republish(genuine.Subject, changed, fdata)

	for _, r := range []*bus.Bus{reader, b} {
		got, err := r.Replay(ctx, bus.SessionFilter("s"), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, e := range got {
			ids[e.GetPin().GetPin().GetId()]++
		}
		if len(got) != n || ids["tampered"]+ids["forged"] > 0 || ids["p03"] != 1 {
			t.Errorf("replay after forgeries: %v, want the %d genuine events once each", ids, n)
		}
		if moved, err := r.Replay(ctx, bus.SessionFilter("elsewhere"), 0); err != nil || len(moved) != 0 {
			t.Errorf("the moved event was read in another session: %v, %v", moved, err)
		}
	}
}
