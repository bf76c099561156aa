package devserver

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/internal/tlstest"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// TestMutualTLS serves the frontend with TLS requiring client certificates
// on a non-loopback IP (allowed without Insecure: every client must
// authenticate, and there is no UI): a client with the CA's certificate
// runs workflows; one without is refused; the local address serves without
// TLS on loopback.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, tlstest.Write(dir))
	file := func(name string) string { return filepath.Join(dir, name) }
	s := startServer(t, Options{IP: "0.0.0.0", SearchAttributes: testAttrs, TLS: &TLSOptions{
		CertFile: file(tlstest.ServerCert), KeyFile: file(tlstest.ServerKey), ClientCAFile: file(tlstest.CA)}})
	_, port, err := splitAddr(s.FrontendAddress())
	require.NoError(t, err)
	host, _, err := splitAddr(s.LocalAddress())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host, "the internal frontend listens on loopback")

	roots := x509.NewCertPool()
	ca, err := os.ReadFile(file(tlstest.CA))
	require.NoError(t, err)
	require.True(t, roots.AppendCertsFromPEM(ca))
	cert, err := tls.LoadX509KeyPair(file(tlstest.ClientCert), file(tlstest.ClientKey))
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port)

	// Through TLS, with the client certificate: a workflow runs.
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{},
		ConnectionOptions: client.ConnectionOptions{TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}}})
	require.NoError(t, err)
	defer c.Close()
	connect(t, s) // the worker, through the local address
	runChain(t, c, "tls-chain", "tls", 2)

	// Without a client certificate the handshake fails.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err == nil {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	require.ErrorContains(t, err, "certificate required")
}
