package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

// TLSConfig is the -tls.* configuration: one certificate per process, used
// as the server certificate of gRPC, the REST gateway and the embedded NATS
// server and as the client certificate toward the other services (mTLS).
type TLSConfig struct {
	CertFile          string
	KeyFile           string
	ClientCAFile      string
	RequireClientCert bool
	// CAFile verifies the servers this process dials (default: ClientCAFile).
	CAFile string
	// ServerName overrides the name checked in the certificates of dialed
	// services (default: the host of -<svc>.addr).
	ServerName string
}

// RegisterFlags registers the -tls.* flags.
func (c *TLSConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CertFile, "tls.cert-file", c.CertFile, "PEM certificate (chain) of this process for gRPC, HTTP and embedded NATS; reloaded when the file changes")
	fs.StringVar(&c.KeyFile, "tls.key-file", c.KeyFile, "PEM private key of -tls.cert-file")
	fs.StringVar(&c.ClientCAFile, "tls.client-ca-file", c.ClientCAFile, "PEM CA bundle that verifies client certificates (mTLS); also verifies dialed services unless -tls.ca-file is set")
	fs.BoolVar(&c.RequireClientCert, "tls.require-client-cert", c.RequireClientCert, "refuse TLS clients without a certificate signed by -tls.client-ca-file (mTLS)")
	fs.StringVar(&c.CAFile, "tls.ca-file", c.CAFile, "PEM CA bundle that verifies the services this process dials (default -tls.client-ca-file, else the system pool)")
	fs.StringVar(&c.ServerName, "tls.server-name", c.ServerName, "server name expected in the certificates of dialed services (default: the host of -<svc>.addr)")
}

// Enabled reports whether TLS is configured.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" }

// Validate names the first bad field (NewReloader loads the files).
func (c TLSConfig) Validate() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("auth: -tls.cert-file and -tls.key-file go together")
	}
	if !c.Enabled() {
		if c.ClientCAFile != "" || c.RequireClientCert || c.CAFile != "" {
			return errors.New("auth: -tls.client-ca-file, -tls.require-client-cert and -tls.ca-file need -tls.cert-file and -tls.key-file")
		}
		return nil
	}
	if c.RequireClientCert && c.ClientCAFile == "" {
		return errors.New("auth: -tls.require-client-cert needs -tls.client-ca-file")
	}
	return nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Reloader serves the certificate and CA files of a TLSConfig, reloading
// them when a file's modification time or size changes (checked at most
// once per CheckInterval, on a handshake). A file that fails to load keeps
// the previous good state and the error is reported by Err.
type Reloader struct {
	cfg           TLSConfig
	CheckInterval time.Duration
	now           func() time.Time

	mu        sync.Mutex
	checked   time.Time
	stamp     string
	cert      *tls.Certificate
	clientCAs *x509.CertPool
	rootCAs   *x509.CertPool
	err       error
}

// NewReloader loads the files of cfg (which must be Enabled).
func NewReloader(cfg TLSConfig) (*Reloader, error) {
	if !cfg.Enabled() {
		return nil, errors.New("auth: TLS is not configured")
	}
	r := &Reloader{cfg: cfg, CheckInterval: time.Second, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) files() []string {
	return []string{r.cfg.CertFile, r.cfg.KeyFile, r.cfg.ClientCAFile, r.cfg.CAFile}
}

// stampOf summarizes the files' sizes and modification times.
func (r *Reloader) stampOf() string {
	var b bytes.Buffer
	for _, f := range r.files() {
		if f == "" {
			continue
		}
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

func (r *Reloader) load() error {
	stamp := r.stampOf()
	cert, err := tls.LoadX509KeyPair(r.cfg.CertFile, r.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("auth: load TLS certificate: %w", err)
	}
	var clientCAs, rootCAs *x509.CertPool
	if r.cfg.ClientCAFile != "" {
		if clientCAs, err = loadPool(r.cfg.ClientCAFile); err != nil {
			return fmt.Errorf("auth: load -tls.client-ca-file: %w", err)
		}
		rootCAs = clientCAs
	}
	if r.cfg.CAFile != "" {
		if rootCAs, err = loadPool(r.cfg.CAFile); err != nil {
			return fmt.Errorf("auth: load -tls.ca-file: %w", err)
		}
	}
	r.mu.Lock()
	r.cert, r.clientCAs, r.rootCAs, r.stamp, r.err = &cert, clientCAs, rootCAs, stamp, nil
	r.mu.Unlock()
	return nil
}

// refresh reloads when the files changed since the last load.
func (r *Reloader) refresh() {
	r.mu.Lock()
	now := r.now()
	due := now.Sub(r.checked) >= r.CheckInterval
	if due {
		r.checked = now
	}
	old := r.stamp
	r.mu.Unlock()
	if !due || r.stampOf() == old {
		return
	}
	if err := r.load(); err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
}

// Err is the last reload error (nil after a good load).
func (r *Reloader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Reloader) current() (*tls.Certificate, *x509.CertPool, *x509.CertPool) {
	r.refresh()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert, r.clientCAs, r.rootCAs
}

// ServerConfig is the server side: the current certificate on every
// handshake, client certificates verified against the current client CA
// pool (required with -tls.require-client-cert).
func (r *Reloader) ServerConfig() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, clientCAs, _ := r.current()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{*cert},
			NextProtos:   []string{"h2", "http/1.1"},
		}
		if clientCAs != nil {
			c.ClientCAs = clientCAs
			c.ClientAuth = tls.VerifyClientCertIfGiven
			if r.cfg.RequireClientCert {
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
		}
		return c, nil
	}
	return base
}

// ClientConfig is the client side toward serverName: the server verified
// against -tls.ca-file (or the client CA bundle, or the system pool), this
// process's certificate presented for mTLS.
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	if r.cfg.ServerName != "" {
		serverName = r.cfg.ServerName
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// Verified in VerifyConnection against the CA pool current at each
		// handshake, so a rotated CA bundle applies without a restart.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("auth: the server presented no certificate")
			}
			_, _, roots := r.current()
			opts := x509.VerifyOptions{DNSName: serverName, Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, _ := r.current()
			return cert, nil
		},
	}
}

// SelfConfig is the client side toward this process's own listeners: the
// server must present exactly the certificate this process serves (whatever
// names it holds), and this process's certificate is presented for mTLS.
func (r *Reloader) SelfConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not verified by name: the peer is pinned to our own
		// current certificate below, which is stronger.
		InsecureSkipVerify: true, //nolint:gosec // pinned in VerifyPeerCertificate
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			cert, _, _ := r.current()
			if len(raw) == 0 || len(cert.Certificate) == 0 || !bytes.Equal(raw[0], cert.Certificate[0]) {
				return errors.New("auth: the local server did not present this process's certificate")
			}
			return nil
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, _ := r.current()
			return cert, nil
		},
	}
}
