package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/internal/tlstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// TestDialMutualTLS dials an embedded server that requires client
// certificates: the right files connect, and each wrong one fails within
// seconds naming the setting that gave it.
func TestDialMutualTLS(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, tlstest.Write(dir))
	file := func(name string) string { return filepath.Join(dir, name) }
	srv, err := devserver.Start(context.Background(), devserver.Options{TLS: &devserver.TLSOptions{
		CertFile: file(tlstest.ServerCert), KeyFile: file(tlstest.ServerKey), ClientCAFile: file(tlstest.CA)}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })

	profile := "tls.server_ca_cert_path of profile \"prod\" in /x/temporal.toml"
	dial := func(t *testing.T, tls *envconfig.ClientConfigTLS, apiKey string) (time.Duration, error) {
		s := settings{Address: srv.FrontendAddress(), AddressFrom: "test", Namespace: "default",
			conn: envconfig.ClientConfigProfile{TLS: tls, APIKey: apiKey},
			from: origins{setCA.flag: profile, setCert.flag: setCert.flag}}
		start := time.Now()
		c, err := dialClient(context.Background(), s, sdkLogger(t.Output(), slog.LevelWarn))
		if c != nil {
			c.Close()
		}
		return time.Since(start), err
	}

	_, err = dial(t, &envconfig.ClientConfigTLS{ClientCertPath: file(tlstest.ClientCert), ClientKeyPath: file(tlstest.ClientKey),
		ServerCACertPath: file(tlstest.CA)}, "")
	require.NoError(t, err, "the CA's client certificate connects")

	tests := []struct {
		name string
		tls  *envconfig.ClientConfigTLS
		want string
	}{
		{"wrong CA", &envconfig.ClientConfigTLS{ClientCertPath: file(tlstest.ClientCert), ClientKeyPath: file(tlstest.ClientKey),
			ServerCACertPath: file(tlstest.OtherCA)},
			"certificate signed by unknown authority: the server's certificate is not signed by the CA of " + profile},
		{"no client certificate", &envconfig.ClientConfigTLS{ServerCACertPath: file(tlstest.CA)},
			"the server wants a client certificate: give one with --tls-cert-path and --tls-key-path"},
		{"another CA's client certificate", &envconfig.ClientConfigTLS{ClientCertPath: file(tlstest.OtherClient),
			ClientKeyPath: file(tlstest.OtherKey), ServerCACertPath: file(tlstest.CA)},
			"the server refused the client certificate of --tls-cert-path"},
		{"wrong server name", &envconfig.ClientConfigTLS{ClientCertPath: file(tlstest.ClientCert), ClientKeyPath: file(tlstest.ClientKey),
			ServerCACertPath: file(tlstest.CA), ServerName: "temporal.example"},
			`the server's certificate does not hold the name "temporal.example" (--tls-server-name)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			took, err := dial(t, tt.tls, "sekret-key")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "at "+srv.FrontendAddress()+" (from test)")
			assert.NotContains(t, err.Error(), "sekret")
			assert.Less(t, took, 5*time.Second, "a certificate problem fails at once")
		})
	}

	t.Run("no TLS", func(t *testing.T) {
		took, err := dial(t, nil, "")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "a server with TLS needs --tls or a profile with tls settings")
		assert.Less(t, took, 5*time.Second, "a server with TLS cuts a client without it short")
	})

	// The local address serves the same API without TLS.
	s := settings{Address: srv.LocalAddress(), AddressFrom: "test", Namespace: "default"}
	c, err := dialClient(context.Background(), s, sdkLogger(t.Output(), slog.LevelWarn))
	require.NoError(t, err)
	c.Close()
}

func TestDevTLSOptions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, tlstest.Write(dir))
	file := func(name string) string { return filepath.Join(dir, name) }
	opts, err := devFlags{}.tlsOptions()
	require.NoError(t, err)
	assert.Nil(t, opts, "no TLS flags, no TLS")

	opts, err = devFlags{tlsCert: file(tlstest.ServerCert), tlsKey: file(tlstest.ServerKey), tlsCA: file(tlstest.CA)}.tlsOptions()
	require.NoError(t, err)
	assert.Equal(t, &devserver.TLSOptions{CertFile: file(tlstest.ServerCert), KeyFile: file(tlstest.ServerKey),
		ClientCAFile: file(tlstest.CA)}, opts)

	for _, tt := range []struct {
		flags devFlags
		want  string
	}{
		{devFlags{tlsCA: file(tlstest.CA)}, "--tls-ca-path needs the server's certificate: add --tls-cert-path and --tls-key-path"},
		{devFlags{tlsCert: file(tlstest.ServerCert)}, "TLS needs both the certificate and its key"},
		{devFlags{tlsCert: file(tlstest.ServerCert), tlsKey: file(tlstest.ClientKey)}, "private key does not match public key"},
		{devFlags{tlsCert: file(tlstest.ServerCert), tlsKey: file(tlstest.ServerKey), tlsCA: file(tlstest.ServerKey)},
			"holds no PEM certificate"},
	} {
		_, err := tt.flags.tlsOptions()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tt.want)
	}
	assert.Error(t, checkDevIP("0.0.0.0", false))
	assert.NoError(t, checkDevIP("0.0.0.0", true))
}

// TestDialDevLocalAddress: porch dev's local address has no TLS, whatever
// the variables or a profile say (porch dev's fleet workers inherit its
// environment).
func TestDialDevLocalAddress(t *testing.T) {
	home := t.TempDir()
	srv, err := devserver.Start(context.Background(), devserver.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	env := fakeEnv{envHome: home, envConfigFile: filepath.Join(home, "absent.toml"), setCA.env: "/absent/ca.pem",
		"TEMPORAL_API_KEY": "sekret"}
	s, err := resolveSettings(env.get, serverFlags{address: srv.FrontendAddress()})
	require.NoError(t, err)
	_, err = dialClient(context.Background(), s, sdkLogger(t.Output(), slog.LevelWarn))
	require.ErrorContains(t, err, "server CA certificate (TEMPORAL_TLS_SERVER_CA_CERT_PATH)")

	remove, err := writeDevState(home, devState{Address: srv.LocalAddress(), PID: 1})
	require.NoError(t, err)
	defer remove()
	c, err := dialClient(context.Background(), s, sdkLogger(t.Output(), slog.LevelWarn))
	require.NoError(t, err)
	c.Close()
}

// TestAServerOnThisHostGetsUncompressedRequests: gzip between processes of
// one host only costs CPU; a remote server keeps the SDK's default.
func TestAServerOnThisHostGetsUncompressedRequests(t *testing.T) {
	for addr, local := range map[string]bool{
		"127.0.0.1:7233": true, "localhost:7233": true, "[::1]:7233": true, "127.0.0.2:7233": true,
		"temporal.example.com:7233": false, "10.0.0.5:7233": false, "127.0.0.1": false,
	} {
		opts, err := clientOptions(settings{Address: addr, Namespace: "default"})
		require.NoError(t, err, addr)
		if local {
			assert.IsType(t, &client.GrpcCompressionNone{}, opts.ConnectionOptions.GrpcCompression, addr)
		} else {
			assert.Nil(t, opts.ConnectionOptions.GrpcCompression, addr+": the SDK's default, gzip")
		}
	}
}
