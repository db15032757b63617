package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/auth"
)

// testCA issues certificates for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t testing.TB) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate for 127.0.0.1 and localhost (server and
// client use) with serial into dir as cert.pem/key.pem.
func (ca *testCA) issue(t testing.TB, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "rcamesh"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	// Written next to the target and renamed, as cert-manager and kubelet do.
	for f, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	} {
		if err := os.WriteFile(f+".tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f+".tmp", f); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

func (ca *testCA) file(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

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
	ca := newCA(t)
	certFile, keyFile := ca.issue(t, dir, 100)
	cfg := auth.TLSConfig{CertFile: certFile, KeyFile: keyFile, CAFile: ca.file(t, dir)}
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
	ca.issue(t, dir, 200) // rotated on disk; the server keeps running
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
	other := newCA(t)
	odir := t.TempDir()
	oc, ok := other.issue(t, odir, 300)
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
	ca := newCA(t)
	certFile, keyFile := ca.issue(t, dir, 1)
	cfg := auth.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.file(t, dir), RequireClientCert: true}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rl, err := auth.NewReloader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, rl.ServerConfig())
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	if _, err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client without a certificate completed the mTLS handshake")
	}
	// A client certificate of another CA is refused too.
	other := newCA(t)
	odir := t.TempDir()
	oc, ok := other.issue(t, odir, 2)
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
