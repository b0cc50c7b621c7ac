package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Certs are PEM files generated for one test: a self-signed CA, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, both
// signed by the CA.
type Certs struct {
	Dir        string
	CA         string
	ServerCert string
	ServerKey  string
	ClientCert string
	ClientKey  string
	// Pool trusts the CA.
	Pool *x509.CertPool
}

// GenerateCerts writes a fresh CA, server and client certificate into a
// temporary directory. The keys are ECDSA P-256, valid for one hour.
func GenerateCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{Dir: dir, CA: filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key")}
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rlctl test CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("parse CA: %v", err)
	}
	writePEM(t, c.CA, "CERTIFICATE", caDER)
	c.Pool = x509.NewCertPool()
	c.Pool.AddCert(caCert)

	leaf := func(serial int64, cn string, usage []x509.ExtKeyUsage, certPath, keyPath string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: usage,
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("create %s certificate: %v", cn, err)
		}
		writePEM(t, certPath, "CERTIFICATE", der)
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatalf("marshal key: %v", err)
		}
		writePEM(t, keyPath, "PRIVATE KEY", kder)
	}
	// The server certificate is also the client certificate a TLS replica
	// presents to its primary, hence both usages.
	leaf(2, "127.0.0.1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, c.ServerCert, c.ServerKey)
	leaf(3, "rlctl test client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, c.ClientCert, c.ClientKey)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random: %v", err)
	}
	return hex.EncodeToString(b)
}

func itoa(n int) string { return strconv.Itoa(n) }
