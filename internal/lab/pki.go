package lab

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the lab's throwaway certificate authority and the files it wrote:
// the API server's serving pair, an admin client pair (group system:masters),
// kwok's serving pair, the API server's kubelet-client pair and the
// service-account signing key.
type pki struct {
	CA, CAKey                   string
	ServingCert, ServingKey     string
	AdminCert, AdminKey         string
	KubeletClient, KubeletKey   string
	KwokCert, KwokKey           string
	SAPub, SAKey                string
	caPEM, adminPEM, adminKeyPM []byte
}

type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

func (ca *certAuthority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// newPKI generates every key and certificate the Kubernetes lab needs and
// writes them under dir (mode 0600 for keys).
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	caKey, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: "rcamesh-lab-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	ca := &certAuthority{cert: caCert, key: caKey}
	p := &pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	write := func(name string, b []byte, mode os.FileMode) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, b, mode)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	if p.CA, err = write("ca.crt", p.caPEM, 0o644); err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	if p.CAKey, err = write("ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	local := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	pairs := []struct {
		name       string
		tmpl       *x509.Certificate
		cert, key  *string
		keepClient bool
	}{
		{"apiserver", &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"}, IPAddresses: local,
			DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, &p.ServingCert, &p.ServingKey, false},
		{"admin", &x509.Certificate{Subject: pkix.Name{CommonName: "rcamesh-lab-admin", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &p.AdminCert, &p.AdminKey, true},
		{"kubelet-client", &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &p.KubeletClient, &p.KubeletKey, false},
		{"kwok", &x509.Certificate{Subject: pkix.Name{CommonName: "kwok"}, IPAddresses: local, DNSNames: []string{"localhost"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, &p.KwokCert, &p.KwokKey, false},
	}
	for _, pr := range pairs {
		c, k, err := ca.issue(pr.tmpl)
		if err != nil {
			return nil, fmt.Errorf("lab: pki %s: %w", pr.name, err)
		}
		if *pr.cert, err = write(pr.name+".crt", c, 0o644); err != nil {
			return nil, fmt.Errorf("lab: pki: %w", err)
		}
		if *pr.key, err = write(pr.name+".key", k, 0o600); err != nil {
			return nil, fmt.Errorf("lab: pki: %w", err)
		}
		if pr.keepClient {
			p.adminPEM, p.adminKeyPM = c, k
		}
	}
	saKey, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	if p.SAKey, err = write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}), 0o600); err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	if p.SAPub, err = write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, fmt.Errorf("lab: pki: %w", err)
	}
	return p, nil
}
