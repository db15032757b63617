package app_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/auth/authtest"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestSplitModeOverMTLSWithTokens: two processes with mTLS and API tokens;
// the router in B reaches the tools in A over mTLS with the service
// identity, and REST callers need a token.
func TestSplitModeOverMTLSWithTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	srv, _ := bustest.Server(t)
	dir := t.TempDir()
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, dir, 7)
	caFile := ca.File(t, dir)
	const token = "split-read-token-0123456789"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ops read "+auth.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := meshKeyFile(t)
	common := []string{"-nats.url=" + srv.ClientURL(), "-mesh.key-file=" + key, "-auth.tokens-file=" + tokens,
		"-tls.cert-file=" + certFile, "-tls.key-file=" + keyFile, "-tls.client-ca-file=" + caFile, "-tls.require-client-cert"}

	kp, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}}}}

	fxA, fxB := &fixture{}, &fixture{}
	a := startAppWith(t, fxA.registry(t), client, "https", append([]string{"-target=tools"}, common...)...)
	b := startAppWith(t, fxB.registry(t), client, "https", append([]string{"-target=router", "-tools.addr=" + a.grpcAddr}, common...)...)

	get := func(tok string) (int, string) {
		req, _ := http.NewRequest("GET", b.httpURL+"/api/v4/session/s1/tools", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d %s", code, body)
	}
	if code, body := get(token); code != 200 || !strings.Contains(body, `"intent":"fetch_pod_logs"`) {
		t.Errorf("router in B did not reach tools in A over mTLS: %d %s", code, body)
	}
}
