// Package tlstest writes the certificates that tests of TLS connections
// need: a CA, a server certificate and a client certificate it signed, and
// a second CA with a client certificate of its own, which the first CA's
// server does not trust.
package tlstest

import (
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

// Files are the names Write gives the files, under its folder.
const (
	CA          = "ca.pem"       // the CA of the server and of its clients
	ServerCert  = "server.pem"   // for 127.0.0.1, ::1 and localhost
	ServerKey   = "server.key"   // its key
	ClientCert  = "client.pem"   // a client certificate CA signed
	ClientKey   = "client.key"   // its key
	OtherCA     = "other-ca.pem" // a CA that signed neither the server's nor client.pem
	OtherClient = "other-client.pem"
	OtherKey    = "other-client.key"
)

// issuer is a CA that signs certificates.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Write writes the files above to dir, which must exist.
func Write(dir string) error {
	ca, err := newCA(dir, CA, "porch test CA")
	if err != nil {
		return err
	}
	other, err := newCA(dir, OtherCA, "porch other CA")
	if err != nil {
		return err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := ca.sign(server, dir, ServerCert, ServerKey); err != nil {
		return err
	}
	client := func() *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: "porch worker"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	if err := ca.sign(client(), dir, ClientCert, ClientKey); err != nil {
		return err
	}
	return other.sign(client(), dir, OtherClient, OtherKey)
}

func newCA(dir, file, name string) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	setValidity(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, writePEM(filepath.Join(dir, file), "CERTIFICATE", der)
}

// sign issues tmpl with a new key and writes both.
func (ca *issuer) sign(tmpl *x509.Certificate, dir, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	setValidity(tmpl)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", certFile, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, certFile), "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, keyFile), "EC PRIVATE KEY", keyDER)
}

func setValidity(tmpl *x509.Certificate) {
	// Random, so that no two certificates of a test share a serial.
	tmpl.SerialNumber, _ = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
