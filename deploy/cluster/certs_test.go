package cluster

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

	"github.com/stretchr/testify/require"
)

// serverName is the name the frontend's certificate carries and clients
// check, whatever address they dial.
const serverName = "temporal.porch.test"

// pki is a CA made for one test run and the certificates it signed, as
// PEM files in dir.
type pki struct {
	t      *testing.T
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAFile string
}

// keyPair is a certificate and its key, as files.
type keyPair struct{ Cert, Key string }

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{t: t, dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "porch cluster test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	p.ca, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	p.caKey = key
	p.CAFile = p.write("ca.pem", "CERTIFICATE", der)
	return p
}

// server issues the frontend's certificate, for serverName and ips.
func (p *pki) server(ips ...string) keyPair {
	tmpl := p.template(serverName, x509.ExtKeyUsageServerAuth)
	tmpl.DNSNames = []string{serverName}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	return p.issue("server", tmpl)
}

// client issues a client certificate with the given common name.
func (p *pki) client(name string) keyPair {
	return p.issue(name, p.template(name, x509.ExtKeyUsageClientAuth))
}

func (p *pki) template(name string, usage x509.ExtKeyUsage) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	require.NoError(p.t, err)
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func (p *pki) issue(name string, tmpl *x509.Certificate) keyPair {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(p.t, err)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(p.t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(p.t, err)
	return keyPair{Cert: p.write(name+".pem", "CERTIFICATE", der), Key: p.write(name+"-key.pem", "EC PRIVATE KEY", keyDER)}
}

func (p *pki) write(name, kind string, der []byte) string {
	path := filepath.Join(p.dir, name)
	require.NoError(p.t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	return path
}

// clientTLS is the TLS configuration of a client holding kp.
func (p *pki) clientTLS(kp keyPair) *tls.Config {
	cert, err := tls.LoadX509KeyPair(kp.Cert, kp.Key)
	require.NoError(p.t, err)
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
}
