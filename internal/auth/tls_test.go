package auth_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/auth/authtest"
)

// serveTLS accepts connections on loopback and completes their handshakes.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				buf := make([]byte, 1)
				_, _ = c.Read(buf) // until the client closes
				c.Close()
			}()
		}
	}()
	return l.Addr().String()
}

func handshake(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3: a refused client certificate shows on the first read.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return nil, err
		}
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func TestTLSReloadPicksUpANewCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a TLS server")
	}
	dir := t.TempDir()
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, dir, 100)
	cfg := auth.TLSConfig{CertFile: certFile, KeyFile: keyFile, CAFile: ca.File(t, dir)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rl, err := auth.NewReloader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rl.CheckInterval = 0
	addr := serveTLS(t, rl.ServerConfig())
	client := rl.ClientConfig("127.0.0.1")

	got, err := handshake(addr, client)
	if err != nil || got.SerialNumber.Int64() != 100 {
		t.Fatalf("first handshake: serial %v, %v", got, err)
	}
	ca.Issue(t, dir, 200) // rotated on disk; the server keeps running
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = handshake(addr, client)
		if err == nil && got.SerialNumber.Int64() == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after rotation: serial %v, %v", got.SerialNumber, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A broken file keeps the last good certificate and reports the error.
	if err := os.WriteFile(certFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = handshake(addr, client)
	if err != nil || got.SerialNumber.Int64() != 200 {
		t.Fatalf("after a broken rewrite: serial %v, %v", got, err)
	}
	if rl.Err() == nil {
		t.Error("the reload error is not reported")
	}
	// A server verified against another CA is refused by the client.
	other := authtest.NewCA(t)
	odir := t.TempDir()
	oc, ok := other.Issue(t, odir, 300)
	orl, _ := auth.NewReloader(auth.TLSConfig{CertFile: oc, KeyFile: ok})
	if _, err := handshake(serveTLS(t, orl.ServerConfig()), client); err == nil {
		t.Error("a server with a certificate of another CA was accepted")
	}
}

func TestMTLSRefusesAClientWithoutCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a TLS server")
	}
	dir := t.TempDir()
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, dir, 1)
	cfg := auth.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File(t, dir), RequireClientCert: true}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rl, err := auth.NewReloader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, rl.ServerConfig())
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client without a certificate completed the mTLS handshake")
	}
	// A client certificate of another CA is refused too.
	other := authtest.NewCA(t)
	odir := t.TempDir()
	oc, ok := other.Issue(t, odir, 2)
	kp, _ := tls.LoadX509KeyPair(oc, ok)
	if _, err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{kp}}); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	if _, err := handshake(addr, rl.ClientConfig("127.0.0.1")); err != nil {
		t.Errorf("the mesh's own client certificate: %v", err)
	}
	if _, err := handshake(addr, rl.SelfConfig()); err != nil {
		t.Errorf("the self connection: %v", err)
	}
}
