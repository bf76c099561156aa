package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

const (
	// dialTimeout bounds connecting to a Temporal server.
	dialTimeout = 10 * time.Second
	// tlsReplyWait bounds the wait for the server's first bytes after
	// the TLS handshake, where a server refusing the client's certificate
	// says so.
	tlsReplyWait = 3 * time.Second
)

// dialClient connects to the server s names, with its TLS and API key,
// except at the local address of this home's porch dev, which has
// neither (its fleet's workers, or a Temporal profile that applies unasked,
// would otherwise bring them).
func dialClient(ctx context.Context, s settings, logger sdklog.Logger) (client.Client, error) {
	if st, ok := loadDevState(s.Home); ok && st.Address == s.Address {
		s = s.local(s.Address, s.AddressFrom)
	}
	opts, err := clientOptions(s)
	if err != nil {
		return nil, err
	}
	opts.Logger = logger
	opts.MetricsHandler = s.Metrics
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if opts.ConnectionOptions.TLS != nil {
		if err := checkTLS(ctx, s, opts.ConnectionOptions.TLS); err != nil {
			return nil, err
		}
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, &unreachableError{err: err, msg: fmt.Sprintf("cannot reach the temporal server at %s (from %s): %v: check the address%s, "+
			"or start a server with `porch dev`", s.Address, s.AddressFrom, err, plainHint(s, err))}
	}
	return c, nil
}

// unreachableError is a server that did not answer, as opposed to one
// that refused the connection's settings.
type unreachableError struct {
	err error
	msg string
}

func (e *unreachableError) Error() string { return e.msg }
func (e *unreachableError) Unwrap() error { return e.err }

// notAnsweringYet tells whether err is a server that may answer later: one
// not listening, not reachable or not yet ready. A refused certificate or
// API key is not: waiting does not fix it.
func notAnsweringYet(err error) bool {
	var u *unreachableError
	if !errors.As(err, &u) {
		return false
	}
	switch grpcstatus.Code(u.err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var ne net.Error
	return errors.As(u.err, &unavailable) || errors.As(u.err, &deadline) ||
		errors.Is(u.err, context.DeadlineExceeded) || errors.As(u.err, &ne)
}

// plainHint suggests TLS when a connection without it was cut short, as
// a server with TLS does to a client without.
func plainHint(s settings, err error) string {
	if s.conn.TLS != nil && !s.conn.TLS.Disabled || s.conn.APIKey != "" {
		return ""
	}
	if msg := err.Error(); strings.Contains(msg, "server preface") || strings.Contains(msg, "connection reset") {
		return " (a server with TLS needs --tls or a profile with tls settings)"
	}
	return ""
}

// clientOptions turns s into the SDK's options through envconfig, after
// checking the files it names, so that a bad one is reported with the
// setting that named it.
func clientOptions(s settings) (client.Options, error) {
	p := s.conn
	p.Address, p.Namespace = s.Address, s.Namespace
	if p.TLS != nil && !p.TLS.Disabled {
		if err := checkTLSFiles(p.TLS, s.from); err != nil {
			return client.Options{}, err
		}
	}
	opts, err := p.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("connection settings for %s: %v", s.Address, err)
	}
	if isLoopbackAddress(s.Address) {
		// Compressing what never leaves the host costs CPU on both ends
		// and saves nothing: about 3% of a trivial step's CPU on the
		// embedded server.
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	return opts, nil
}

// named is a setting as a message names it: where it came from, else
// its flag.
func (o origins) named(s setting) string {
	if from := o.of(s); from != "" {
		return from
	}
	return s.flag
}

// checkTLSFiles loads the client certificate and the CA certificate t
// names by path.
func checkTLSFiles(t *envconfig.ClientConfigTLS, from origins) error {
	switch {
	case t.ClientCertPath != "" && t.ClientKeyPath == "" && len(t.ClientKeyData) == 0:
		return fmt.Errorf("client certificate %s (%s) has no key: give it with %s", t.ClientCertPath, from.named(setCert), setKey.flag)
	case t.ClientKeyPath != "" && t.ClientCertPath == "" && len(t.ClientCertData) == 0:
		return fmt.Errorf("client key %s (%s) has no certificate: give it with %s", t.ClientKeyPath, from.named(setKey), setCert.flag)
	case t.ClientCertPath != "" && t.ClientKeyPath != "":
		if _, err := tls.LoadX509KeyPair(t.ClientCertPath, t.ClientKeyPath); err != nil {
			return fmt.Errorf("client certificate %s (%s) and key %s (%s): %v: give a PEM certificate and its private key",
				t.ClientCertPath, from.named(setCert), t.ClientKeyPath, from.named(setKey), err)
		}
	}
	if t.ServerCACertPath != "" {
		data, err := os.ReadFile(t.ServerCACertPath)
		if err != nil {
			return fmt.Errorf("server CA certificate (%s): %v", from.named(setCA), err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return fmt.Errorf("server CA certificate %s (%s) holds no PEM certificate", t.ServerCACertPath, from.named(setCA))
		}
	}
	return nil
}

// checkTLS shakes hands with the server as the client will. gRPC retries
// a failed handshake until the dial timeout and reports only the last
// error; this fails at once, naming the setting to fix.
func checkTLS(ctx context.Context, s settings, conf *tls.Config) error {
	host, _, err := net.SplitHostPort(s.Address)
	if err != nil {
		return nil // the SDK reports a bad address
	}
	conf = conf.Clone()
	if conf.ServerName == "" {
		conf.ServerName = host
	}
	conf.NextProtos = []string{"h2"}
	d := tls.Dialer{Config: conf}
	conn, err := d.DialContext(ctx, "tcp", s.Address)
	var tlsErr bool
	if err == nil {
		// With TLS 1.3 a server refuses the client's certificate after
		// the handshake; an HTTP/2 server speaks first (its settings), so
		// one byte read tells.
		conn.SetReadDeadline(time.Now().Add(tlsReplyWait))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		tlsErr = true
	}
	if msg := tlsProblem(s, conf.ServerName, err); msg != "" {
		return fmt.Errorf("cannot connect to the temporal server at %s (from %s): %s", s.Address, s.AddressFrom, msg)
	}
	if !tlsErr {
		return &unreachableError{err: err, msg: fmt.Sprintf("cannot reach the temporal server at %s (from %s): %v: check the address", s.Address, s.AddressFrom, err)}
	}
	return fmt.Errorf("cannot connect to the temporal server at %s (from %s) with TLS: %v", s.Address, s.AddressFrom, err)
}

// tlsProblem explains a failed handshake in terms of the settings that
// fix it; "" when err is none it knows.
func tlsProblem(s settings, serverName string, err error) string {
	t, from := s.conn.TLS, s.from
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	var notTLS tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.As(err, &unknownCA) && (t.ServerCACertPath != "" || len(t.ServerCACertData) > 0):
		return fmt.Sprintf("%v: the server's certificate is not signed by the CA of %s: give the CA that signed it", err, from.named(setCA))
	case errors.As(err, &unknownCA):
		return fmt.Sprintf("%v: this machine does not trust the CA that signed the server's certificate: give it with %s "+
			"(tls.server_ca_cert_path in a profile)", err, setCA.flag)
	case errors.As(err, &badName):
		nameFrom := "the address's host"
		if t.ServerName != "" {
			nameFrom = from.named(setServerName)
		}
		return fmt.Sprintf("%v: the server's certificate does not hold the name %q (%s): give one it holds with %s",
			err, serverName, nameFrom, setServerName.flag)
	case errors.As(err, &notTLS):
		return fmt.Sprintf("it does not speak TLS, which is on (%s): check the address, or turn TLS off with --tls=false", tlsFrom(s))
	case errors.As(err, &op) && op.Op == "remote error" && strings.Contains(err.Error(), "certificate"):
		if t.ClientCertPath == "" && len(t.ClientCertData) == 0 {
			return fmt.Sprintf("%v: the server wants a client certificate: give one with %s and %s "+
				"(tls.client_cert_path and tls.client_key_path in a profile)", err, setCert.flag, setKey.flag)
		}
		return fmt.Sprintf("%v: the server refused the client certificate of %s: give one signed by a CA the server trusts "+
			"for clients", err, from.named(setCert))
	}
	return ""
}

// tlsFrom names the setting that turned TLS on.
func tlsFrom(s settings) string {
	for _, set := range []setting{setTLS, setCert, setCA, setServerName, setAPIKey} {
		if from := s.from.of(set); from != "" {
			return from
		}
	}
	return setTLS.flag
}
