package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/rcamesh/rcamesh/api/openapi"
	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/auth/authtest"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/internal/server"
)

const (
	secReadToken   = "sec-test-read-token-0123456789"
	secSteerToken  = "sec-test-steer-token-0123456789"
	secIngestToken = "sec-test-ingest-token-0123456789"
)

// securedMesh runs every service in this process with API tokens on.
func securedMesh(t *testing.T, extra ...string) (*meshProc, string) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	set, err := fixture.New(sc, logger)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	content := fmt.Sprintf("reader read %s\nsteerer read,steer %s\nintake ingest %s\n",
		auth.HashToken(secReadToken), auth.HashToken(secSteerToken), auth.HashToken(secIngestToken))
	if err := os.WriteFile(tokens, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	m, err := startMesh(ctx, set, filepath.Join(dir, "data"), logger, append([]string{"-auth.tokens-file=" + tokens}, extra...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.stop() })
	return m, string(sc.AlertRaw)
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

// callCode calls method with an empty request (unary, or a server stream
// read to its first message) and returns the status code.
func callCode(ctx context.Context, cc *grpc.ClientConn, method string, streaming bool, opts ...grpc.CallOption) codes.Code {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !streaming {
		return status.Code(cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{}, opts...))
	}
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, opts...)
	if err != nil {
		return status.Code(err)
	}
	_ = st.SendMsg(&emptypb.Empty{})
	_ = st.CloseSend()
	return status.Code(st.RecvMsg(&emptypb.Empty{}))
}

// TestEveryRPCAndRouteRefusesUnauthenticatedAndWrongRole walks auth.Policy
// (every RPC) and the OpenAPI document (every REST route) against the
// whole mesh with tokens on, while the services' own calls (service
// identity, in process) keep working.
func TestEveryRPCAndRouteRefusesUnauthenticatedAndWrongRole(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	m, alert := securedMesh(t)
	ctx := context.Background()

	// The mesh investigates with auth on: internal calls carry the service identity.
	res, err := m.investigateAlert(ctx, []byte(alert), "demo")
	if err != nil {
		t.Fatalf("investigation with auth on: %v", err)
	}
	if !strings.Contains(res.Markdown, "Root cause") {
		t.Fatalf("no report with auth on:\n%s", res.Markdown)
	}

	anon, err := server.NewClientConn(m.local.GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	streaming := map[string]bool{}
	for _, sd := range []grpc.ServiceDesc{brainv1.BrainService_ServiceDesc} {
		for _, s := range sd.Streams {
			streaming["/"+sd.ServiceName+"/"+s.StreamName] = true
		}
	}
	streaming["/grpc.health.v1.Health/Watch"] = true
	streaming["/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"] = true
	streaming["/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"] = true
	for method, need := range auth.Policy {
		if need == auth.RolePublic {
			continue
		}
		if code := callCode(ctx, anon, method, streaming[method]); code != codes.Unauthenticated {
			t.Errorf("%s without a token: %v, want Unauthenticated", method, code)
		}
		if code := callCode(ctx, anon, method, streaming[method], grpc.PerRPCCredentials(bearer("not-a-token-0123456789"))); code != codes.Unauthenticated {
			t.Errorf("%s with an unknown token: %v, want Unauthenticated", method, code)
		}
		// A token with every user role but the one needed.
		wrong := map[auth.Role]string{auth.RoleRead: secIngestToken, auth.RoleSteer: secReadToken, auth.RoleIngest: secSteerToken, auth.RoleService: secSteerToken}[need]
		if code := callCode(ctx, anon, method, streaming[method], grpc.PerRPCCredentials(bearer(wrong))); code != codes.PermissionDenied {
			t.Errorf("%s (needs %s) with a wrong role: %v, want PermissionDenied", method, need, code)
		}
	}
	// Probes stay public.
	if _, err := healthpb.NewHealthClient(anon).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health without a token: %v", err)
	}
	// The right role passes the policy (the handler may still refuse the empty request).
	if code := callCode(ctx, anon, brainv1.BrainService_ListSessions_FullMethodName, false, grpc.PerRPCCredentials(bearer(secReadToken))); code != codes.OK {
		t.Errorf("ListSessions with read: %v", code)
	}

	// REST: every route of the OpenAPI document.
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	base := "http://" + m.local.HTTPAddr
	do := func(method, path, token string) (int, string) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader([]byte(`{}`)))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(rctx))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	routes := 0
	for path, ops := range doc.Paths {
		p := strings.NewReplacer("{sessionId}", "s1", "{source}", "alertmanager").Replace(path)
		for verb := range ops {
			routes++
			method := strings.ToUpper(verb)
			if code, body := do(method, p, ""); code != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %d %s", method, path, code, body)
			}
			wrong := secIngestToken
			if method == http.MethodPost {
				wrong = secReadToken
			}
			if code, body := do(method, p, wrong); code != http.StatusForbidden {
				t.Errorf("%s %s with a wrong role: %d %s", method, path, code, body)
			}
		}
	}
	if routes < 15 {
		t.Fatalf("walked only %d routes", routes)
	}
	if code, body := do("GET", "/api/v4/sessions", secReadToken); code != http.StatusOK || !strings.Contains(body, "sessions") {
		t.Errorf("GET /api/v4/sessions with read: %d %s", code, body)
	}
	if code, _ := do("GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without a token: %d", code)
	}
	// A caller cannot assert the gateway's delegation metadata itself.
	esc, _ := http.NewRequest("POST", base+"/api/v4/session/s1/investigate", strings.NewReader(`{"command":"/pods namespace=retail"}`))
	esc.Header.Set("Content-Type", "application/json")
	esc.Header.Set("Authorization", "Bearer "+secReadToken)
	esc.Header.Set("Grpc-Metadata-X-Rcamesh-Delegate-Roles", "admin")
	esc.Header.Set("Grpc-Metadata-X-Rcamesh-Delegate-Name", "root")
	if resp, err := http.DefaultClient.Do(esc); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("read token with forged delegation headers: %d, want 403", resp.StatusCode)
		}
	}
	// A cross-origin text/plain POST (what any web page can send) is refused.
	req, _ := http.NewRequest("POST", base+"/api/v4/alerts", strings.NewReader(alert))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "https://evil.example.com")
	req.Header.Set("Authorization", "Bearer "+secIngestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin text/plain POST: %d, want 403", resp.StatusCode)
	}
}

// TestForgedPinIsRejectedAndDoesNotChangeTheDiagnosis: a client holding a
// NATS publish right (the tools user's password) but not the mesh key
// injects pins into a finished session: unsigned, badly signed, signed by
// delivery's own key as the tools service, and a tool result signed by the
// router's genuine key (the router may record failed calls only); the
// brain refuses them, and a new investigation of that session reaches the
// same diagnosis.
func TestForgedPinIsRejectedAndDoesNotChangeTheDiagnosis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	natsAddr := freeAddr(t)
	dataDir := filepath.Join(t.TempDir(), "data")
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
	m, err := startMesh(ctx, set, dataDir, logger, []string{"-nats.listen=" + natsAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	bc := brainv1.NewBrainServiceClient(m.conn)
	var payload = mustStruct(t, string(sc.AlertRaw))
	sub, err := bc.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: payload, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	session := sub.GetSessionId()
	d1, err := bc.GetDiagnosis(ctx, &brainv1.GetDiagnosisRequest{SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	pins1, err := bc.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: session})
	if err != nil || len(pins1.GetPins()) == 0 {
		t.Fatalf("pins: %v %v", pins1, err)
	}

	// The attacker: the tools service's NATS password, not the mesh key.
	key, err := auth.LoadMeshKey(filepath.Join(dataDir, app.MeshKeyName))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo(bus.UserPrefix+"tools", auth.NATSPassword(key, bus.UserPrefix+"tools")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	genuine := pins1.GetPins()[0]
	forgeSigned := func(id, claim, signer string, sign func(subject string, data []byte) string) {
		p := proto.CloneOf(genuine)
		p.Id, p.Claim, p.RawOutput, p.Success = id, claim, claim, true
		p.Severity, p.Confidence, p.EvidenceType = evidencev1.Severity_SEVERITY_CRITICAL, 99, evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_EVENT
		data, _ := proto.Marshal(&evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: session, Pin: p})
		msg := &nats.Msg{Subject: bus.PinSubject(session, evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED), Data: data, Header: nats.Header{}}
		msg.Header.Set(bus.HeaderEventKind, bus.EventKindPin)
		if signer != "" {
			msg.Header.Set(bus.HeaderSigner, signer)
			msg.Header.Set(bus.HeaderSignature, sign(msg.Subject, data))
		}
		if _, err := nc.RequestMsg(msg, 5*time.Second); err != nil {
			t.Fatalf("the attacker could not store its pin (the test needs it stored): %v", err)
		}
	}
	forge := func(id, claim, signer, sig string) {
		forgeSigned(id, claim, signer, func(string, []byte) string { return sig })
	}
	forge("forged-unsigned", "OOMKilled: orders-api exceeded its memory limit 40 times", "", "")
	forge("forged-badsig", "OOMKilled: orders-api exceeded its memory limit 40 times", "tools", "AAAA")
	// A compromised delivery (its issued credentials: its own signing key)
	// signs as the tools service; a compromised router signs a tool result
	// with its own genuine key (it may record failed calls only).
	creds, err := auth.IssueCredentials(key, []string{"delivery"}, bus.UserPrefix+"delivery", bus.Services)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := hex.DecodeString(creds.SigningSeeds["delivery"])
	full, _ := auth.IdentityFromMeshKey(key)
	routerKey, _ := full.SigningKey("router")
	signWith := func(k ed25519.PrivateKey, signer string) func(subject string, data []byte) string {
		return func(subject string, data []byte) string {
			return base64.RawStdEncoding.EncodeToString(ed25519.Sign(k, []byte(signer+"\n"+subject+"\n"+bus.EventKindPin+"\n"+string(data))))
		}
	}
	forgeSigned("forged-delivery-as-tools", "OOMKilled: orders-api exceeded its memory limit 40 times", "tools", signWith(ed25519.NewKeyFromSeed(seed), "tools"))
	forgeSigned("forged-router-result", "OOMKilled: orders-api exceeded its memory limit 40 times", "router", signWith(routerKey, "router"))

	pins2, err := bc.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pins2.GetPins() {
		if strings.HasPrefix(p.GetId(), "forged") {
			t.Errorf("ListPins returns forged pin %s", p.GetId())
		}
	}
	if len(pins2.GetPins()) != len(pins1.GetPins()) {
		t.Errorf("pins after the forgery: %d, before: %d", len(pins2.GetPins()), len(pins1.GetPins()))
	}
	ns, svc := "", ""
	for _, p := range pins1.GetPins() {
		if ns == "" && p.GetNamespace() != "" {
			ns = p.GetNamespace()
		}
		if svc == "" && p.GetService() != "" {
			svc = p.GetService()
		}
	}
	if _, err := bc.StartInvestigation(ctx, &brainv1.StartInvestigationRequest{SessionId: session, Namespace: ns, Service: svc, Wait: true}); err != nil {
		t.Fatal(err)
	}
	d2, err := bc.GetDiagnosis(ctx, &brainv1.GetDiagnosisRequest{SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	if d2.GetDiagnosis().GetCategory() != d1.GetDiagnosis().GetCategory() || d2.GetDiagnosis().GetRootCauseEntity() != d1.GetDiagnosis().GetRootCauseEntity() {
		t.Errorf("the diagnosis changed after the forgery: %v %q, was %v %q", d2.GetDiagnosis().GetCategory(), d2.GetDiagnosis().GetRootCauseEntity(),
			d1.GetDiagnosis().GetCategory(), d1.GetDiagnosis().GetRootCauseEntity())
	}
	if s := fmt.Sprint(d2.GetDiagnosis()); strings.Contains(s, "forged-") || strings.Contains(s, "40 times") {
		t.Errorf("the diagnosis cites the forged pin: %s", s)
	}

	// Anonymous NATS clients are refused outright.
	if c, err := nats.Connect("nats://" + natsAddr); err == nil {
		c.Close()
		t.Error("an anonymous NATS client connected")
	}
}

func mustStruct(t *testing.T, raw string) *structpb.Struct {
	t.Helper()
	var s structpb.Struct
	if err := protojson.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestMTLSMesh runs the mesh with TLS and required client certificates:
// the services' own calls work, a client without a certificate is refused
// by gRPC and by the gateway.
func TestMTLSMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	dir := t.TempDir()
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, dir, 10)
	caFile := ca.File(t, dir)
	m, alert := securedMesh(t, "-tls.cert-file="+certFile, "-tls.key-file="+keyFile, "-tls.client-ca-file="+caFile, "-tls.require-client-cert")
	ctx := context.Background()
	if _, err := m.investigateAlert(ctx, []byte(alert), "demo"); err != nil {
		t.Fatalf("investigation over mTLS: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	kp, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	get := func(cfg *tls.Config) (int, error) {
		// HTTP/2 as browsers speak it (ALPN h2).
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}, Timeout: 5 * time.Second}
		resp, err := c.Get("https://" + m.local.HTTPAddr + "/healthz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			return 0, fmt.Errorf("served over %s, want HTTP/2", resp.Proto)
		}
		return resp.StatusCode, nil
	}
	if code, err := get(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}}); err != nil || code != 200 {
		t.Errorf("HTTPS with a client certificate: %d %v", code, err)
	}
	if _, err := get(&tls.Config{RootCAs: pool}); err == nil {
		t.Error("HTTPS without a client certificate was served")
	}
	if resp, err := http.Get("http://" + m.local.HTTPAddr + "/healthz"); err == nil && resp.StatusCode == 200 {
		resp.Body.Close()
		t.Error("plain HTTP was served")
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"no client certificate": credentials.NewTLS(&tls.Config{RootCAs: pool}),
		"plaintext":             insecure.NewCredentials(),
	} {
		cc, err := grpc.NewClient(m.local.GRPCAddr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		cc.Close()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("gRPC with %s: %v, want Unavailable (handshake refused)", name, err)
		}
	}
	cc, err := grpc.NewClient(m.local.GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("gRPC with a client certificate: %v", err)
	}
}

func TestTokenCmdLineAuthenticatesItsToken(t *testing.T) {
	var out bytes.Buffer
	if err := tokenCmd(context.Background(), []string{"-name", "ci", "-roles", "ingest"}, &out); err != nil {
		t.Fatal(err)
	}
	var tok, line string
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "token: "); ok {
			tok = v
		}
		if v, ok := strings.CutPrefix(l, "tokens-file line: "); ok {
			line = v
		}
	}
	if tok == "" || line == "" || strings.Contains(line, tok) {
		t.Fatalf("output %q", out.String())
	}
	f := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(f, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{TokensFile: f}, []byte("k-0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), tok)
	if err != nil || p.Name != "token:ci" || !p.Has(auth.RoleIngest) || p.Has(auth.RoleRead) {
		t.Fatalf("principal %+v, %v", p, err)
	}
	if err := tokenCmd(context.Background(), []string{"-name", "x", "-roles", "root"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("unknown role: %v", err)
	}
}

// meshSecrets writes a mesh key and a reader password for processes of
// one test.
func meshSecrets(t testing.TB) (keyFile, readerFile, readerPassword string) {
	t.Helper()
	dir := t.TempDir()
	keyFile, readerFile, readerPassword = filepath.Join(dir, "mesh.key"), filepath.Join(dir, "reader"), "reader-password-0123456789"
	if _, _, err := auth.EnsureMeshKey(keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readerFile, []byte(readerPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile, readerFile, readerPassword
}

// TestSplitFiveProcessesWithPerServiceNATSUsers runs each service in its
// own process, given only the addresses of the services it calls; four
// connect to the brain's embedded NATS as their own service user
// (rcamesh-<service>), holding only the credentials issued for their
// service (`rcamesh mesh-credentials`: their own signing key and NATS
// password), so every permission and signature a service needs is
// exercised: an alert is investigated, the critic's verdicts and the
// delivered report come back.
func TestSplitFiveProcessesWithPerServiceNATSUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts five processes")
	}
	key, _, _ := meshSecrets(t)
	natsAddr := freeAddr(t)
	needs := app.NewRegistry()
	if err := modules.Register(needs, modules.Options{}); err != nil {
		t.Fatal(err)
	}
	type proc5 struct{ http, grpc string }
	ps := map[string]proc5{}
	for _, svc := range []string{"brain", "tools", "critic", "router", "delivery"} {
		ps[svc] = proc5{freeAddr(t), freeAddr(t)}
	}
	args := func(svc string) []string {
		a := []string{"-target=" + svc, "-data.dir=" + t.TempDir(),
			"-http.addr=" + ps[svc].http, "-grpc.addr=" + ps[svc].grpc, "-tools.scenario=" + demoScenario}
		if svc == "brain" {
			a = append(a, "-nats.listen="+natsAddr, "-mesh.key-file="+key)
		} else {
			// Only the brain (it runs the embedded NATS) holds the mesh key;
			// the others hold the credentials issued for their service.
			cred := filepath.Join(t.TempDir(), svc+".cred")
			var out bytes.Buffer
			if err := meshCredentialsCmd(context.Background(), []string{"-mesh.key-file=" + key, "-targets=" + svc, "-out=" + cred}, &out); err != nil {
				t.Fatal(err)
			}
			a = append(a, "-nats.url=nats://"+natsAddr, "-mesh.credentials-file="+cred)
		}
		// Only the addresses of the services it calls (a missing one would
		// stop it at start).
		for _, other := range needs.Needs(svc) {
			a = append(a, "-"+other+".addr="+ps[other].grpc)
		}
		return a
	}
	var logs []proc
	for _, svc := range []string{"brain", "tools", "critic", "router", "delivery"} {
		logs = append(logs, startBinary(t, ps[svc].http, args(svc)...))
	}
	dump := func() string {
		var b strings.Builder
		for _, p := range logs {
			b.WriteString(p.log())
		}
		return b.String()
	}
	alert, err := os.ReadFile(filepath.Join(demoScenario, "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, resp := postJSON(t, "http://"+ps["brain"].http+"/api/v4/alerts", string(alert))
	sid, _ := resp["session_id"].(string)
	if code != 200 || sid == "" {
		t.Fatalf("post alert: %d %v", code, resp)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, _, body := request(t, "GET", "http://"+ps["delivery"].http+"/api/v4/session/"+sid+"/report", "")
		if code == 200 && strings.Contains(body, "Root cause") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report in split mode with per-service NATS users (%d %s):\n%s", code, body, dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, _, pins := request(t, "GET", "http://"+ps["brain"].http+"/api/v4/session/"+sid+"/pins", "")
	if !strings.Contains(pins, "VALIDATION_STATUS_VALIDATED") {
		t.Errorf("no critic verdict reached the brain:\n%s", pins)
	}
	// The REST gateway of split mode, a sixth process on its own NATS user
	// with its own credentials, serves every service's routes.
	gwHTTP := freeAddr(t)
	gwCred := filepath.Join(t.TempDir(), "gateway.cred")
	if err := meshCredentialsCmd(context.Background(), []string{"-mesh.key-file=" + key, "-targets=gateway", "-out=" + gwCred}, io.Discard); err != nil {
		t.Fatal(err)
	}
	gwArgs := []string{"-target=gateway", "-data.dir=" + t.TempDir(), "-http.addr=" + gwHTTP, "-grpc.addr=" + freeAddr(t),
		"-nats.url=nats://" + natsAddr, "-mesh.credentials-file=" + gwCred}
	for svc, p := range ps {
		gwArgs = append(gwArgs, "-"+svc+".addr="+p.grpc)
	}
	logs = append(logs, startBinary(t, gwHTTP, gwArgs...))
	if code, _, body := request(t, "GET", "http://"+gwHTTP+"/api/v4/session/"+sid+"/report", ""); code != 200 || !strings.Contains(body, "Root cause") {
		t.Errorf("the gateway's report: %d %.300s", code, body)
	}
	if code, _, body := request(t, "GET", "http://"+gwHTTP+"/api/v4/session/"+sid+"/tools?page_size=2", ""); code != 200 || !strings.Contains(body, "next_page_token") {
		t.Errorf("the gateway's tools page: %d %.300s", code, body)
	}
	if strings.Contains(strings.ToLower(dump()), "permissions violation") {
		t.Errorf("a service hit a NATS permissions violation:\n%s", dump())
	}
}

// TestServeRefusesOpenListenersWithoutAuth: beyond loopback without
// authentication the process does not start, unless -auth.insecure-open.
func TestServeRefusesOpenListenersWithoutAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the mesh")
	}
	env := func(string) (string, bool) { return "", false }
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := serve(ctx, []string{"-data.dir=" + t.TempDir(), "-http.addr=0.0.0.0:0", "-grpc.addr=127.0.0.1:0"}, io.Discard, &logs, env)
	if err == nil || !strings.Contains(err.Error(), "-auth.insecure-open") || !strings.Contains(err.Error(), "-http.addr 0.0.0.0:0") {
		t.Fatalf("serve on 0.0.0.0 without auth: %v", err)
	}
	// Open mode starts, and says so.
	octx, ocancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var olog syncBuffer
	go func() {
		done <- serve(octx, []string{"-data.dir=" + t.TempDir(), "-http.addr=0.0.0.0:0", "-grpc.addr=127.0.0.1:0", "-auth.insecure-open"}, io.Discard, &olog, env)
	}()
	for !strings.Contains(olog.String(), "msg=serving") {
		select {
		case err := <-done:
			t.Fatalf("open mode stopped: %v\n%s", err, olog.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	ocancel()
	if err := <-done; err != nil {
		t.Fatalf("open mode: %v", err)
	}
	if !strings.Contains(olog.String(), "OPEN MODE") {
		t.Errorf("open mode is not announced:\n%s", olog.String())
	}
}
