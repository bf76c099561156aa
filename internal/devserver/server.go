// Package devserver runs a Temporal server, and optionally its web UI, inside
// the porch process: one history shard, SQLite in a scratch file or a kept one, and
// dynamic config tuned for a single machine.
//
// It is modelled on temporalio/cli's internal/devserver and is the only porch
// package that imports go.temporal.io/server.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

const (
	defaultIP        = "127.0.0.1"
	defaultNamespace = "default"
)

// Options configures an embedded server. The zero value is a headless
// scratch server on a free port of 127.0.0.1 serving namespace "default".
type Options struct {
	DBFile    string // SQLite file; "" = a scratch file removed at Stop
	Port      int    // frontend gRPC port; 0 = pick a free one
	UIPort    int    // web UI port; 0 = no UI
	Namespace string // default "default"; created if missing (retention 7 days)
	// IP is where the frontend and the UI listen, default "127.0.0.1". The
	// other services (history, matching, worker) always listen on a
	// loopback address. An IP that is not loopback needs Insecure, or
	// TLS with a ClientCAFile and no UI.
	IP string
	// Insecure allows an IP that is not loopback without mutual TLS. The
	// server then has no authentication, so whoever reaches the frontend or the UI
	// can start, read and cancel workflows, and porch's workers run their
	// steps as the user who started them. Start then logs InsecureWarning
	// and the UI shows it at the top of its pages.
	Insecure bool
	// SearchAttributes are registered (idempotently) on Namespace at start: name -> type.
	SearchAttributes map[string]enumspb.IndexedValueType
	LogWriter        io.Writer // server logs (warn and above by default); nil = discard
	LogLevel         string    // debug, info, warn (default), error or none
	// TLS, when set, makes the frontend serve TLS (and, with a client
	// CA, mutual TLS). The server's own services and the UI then reach
	// it through an internal frontend on a loopback address, without TLS.
	TLS *TLSOptions
	// MetricsAddress is the host:port where the server serves its own
	// Prometheus metrics at /metrics (Global.Metrics in its config);
	// "" serves none.
	MetricsAddress string

	// untuned keeps Temporal's default dynamic config: the baseline for
	// BenchmarkActivityChain.
	untuned bool
}

// TLSOptions are the frontend's TLS files, PEM.
type TLSOptions struct {
	// CertFile and KeyFile are the frontend's certificate and its key.
	CertFile, KeyFile string
	// ClientCAFile, when set, is the CA whose certificates clients must
	// present: mutual TLS.
	ClientCAFile string
}

// ErrNotLoopback is returned by Start for an IP that is not a loopback
// address when Options.Insecure is not set.
var ErrNotLoopback = errors.New("not a loopback address")

// InsecureWarning is what Start logs, and the UI shows, when the server
// listens on ip, which is not loopback.
func InsecureWarning(ip string) string {
	return fmt.Sprintf("INSECURE: the Temporal server and its web UI listen on %s with no TLS and no authentication: "+
		"anyone who can reach them can start, read and cancel workflows, and porch workers run their steps' "+
		"commands as the user who started them", ip)
}

// Server is a running embedded Temporal server.
type Server struct {
	server   temporal.Server
	logger   serverLogger
	ui       *webUI
	ports    ports
	frontend string
	// local is where clients on this machine reach the API without TLS:
	// the internal frontend when the frontend has TLS, else the frontend.
	local string
	uiURL string
	// cleanup removes a scratch database.
	cleanup func()

	stopOnce sync.Once
	stopErr  error
}

// Start starts a server and returns once its frontend answers and the search
// attributes in opts are usable in visibility queries. ctx bounds the start
// only, not the server's life: call Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	logger, err := newServerLogger(opts.LogWriter, opts.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	if opts.Port != 0 {
		if err := checkPortFree(opts.IP, opts.Port); err != nil {
			return nil, fmt.Errorf("embedded temporal: frontend: %w", err)
		}
	}
	if opts.MetricsAddress != "" {
		// The server's metrics listener only logs a failure to listen.
		if err := checkAddressFree(opts.MetricsAddress); err != nil {
			return nil, fmt.Errorf("embedded temporal: metrics: %w", err)
		}
	}
	p, err := allocatePorts(opts.IP, opts.Port, opts.TLS != nil)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	sql, cleanup, err := sqlConfig(opts.DBFile)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	if err := createNamespace(sql, opts); err != nil {
		cleanup()
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	conf := serverConfig(opts, p, sql)
	srv, err := newTemporalServer(conf, opts, p, logger)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	if err := srv.Start(); err != nil {
		_ = srv.Stop()
		cleanup()
		return nil, fmt.Errorf("embedded temporal: start: %w", err)
	}
	s := &Server{server: srv, logger: logger, cleanup: cleanup, ports: p,
		frontend: net.JoinHostPort(opts.IP, strconv.Itoa(p.frontend)), local: p.internalAddress(opts.IP)}
	if err := s.ready(ctx, opts); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	var banner string
	if !isLoopback(opts.IP) && !opts.authenticated() {
		banner = InsecureWarning(opts.IP)
		logger.Warn(banner)
	}
	if opts.UIPort != 0 {
		ui, err := startUI(ctx, opts.IP, opts.UIPort, s.local, banner)
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
		s.ui = ui
		s.uiURL = "http://" + net.JoinHostPort(opts.IP, strconv.Itoa(opts.UIPort))
	}
	return s, nil
}

func withDefaults(opts Options) (Options, error) {
	if opts.IP == "" {
		opts.IP = defaultIP
	}
	if net.ParseIP(opts.IP) == nil {
		return opts, fmt.Errorf("embedded temporal: IP %q is not an IP address", opts.IP)
	}
	if !isLoopback(opts.IP) && !opts.Insecure && !opts.authenticated() {
		return opts, fmt.Errorf("embedded temporal: IP %s is %w: the server has no client authentication; "+
			"listen on 127.0.0.1, require client certificates (TLS with a ClientCAFile, and no UI), "+
			"or set Insecure to serve every client that reaches %s", opts.IP, ErrNotLoopback, opts.IP)
	}
	if opts.Namespace == "" {
		opts.Namespace = defaultNamespace
	}
	for name, port := range map[string]int{"port": opts.Port, "UI port": opts.UIPort} {
		if port < 0 || port > 65535 {
			return opts, fmt.Errorf("embedded temporal: %s %d is out of range 0-65535", name, port)
		}
	}
	if opts.UIPort != 0 && opts.UIPort == opts.Port {
		return opts, fmt.Errorf("embedded temporal: UI port and frontend port are both %d", opts.Port)
	}
	return opts, nil
}

// authenticated says whether every client reaching the server's IP must
// present a certificate: mutual TLS on the frontend and no UI, which has
// no authentication.
func (o Options) authenticated() bool {
	return o.TLS != nil && o.TLS.ClientCAFile != "" && o.UIPort == 0
}

// isLoopback reports whether ip, a valid IP address, is a loopback one.
func isLoopback(ip string) bool {
	return net.ParseIP(ip).IsLoopback()
}

func newTemporalServer(conf *config.Config, opts Options, p ports, logger serverLogger) (temporal.Server, error) {
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("claim mapper: %w", err)
	}
	services := temporal.DefaultServices
	if p.internalFrontend != 0 {
		services = append(slices.Clone(services), string(primitives.InternalFrontendService))
	}
	return temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(services),
		temporal.WithStaticHosts(p.staticHosts(opts.IP)),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig(!opts.untuned)),
	)
}

// ServePages serves h on the web UI's origin under PagesPrefix (h sees
// paths without it), beside the Temporal UI; until it is called, those
// paths answer 503. It does nothing without a UI.
func (s *Server) ServePages(h http.Handler) {
	if s.ui != nil {
		s.ui.front.pages.Store(&h)
	}
}

// FrontendAddress returns the frontend's gRPC address, host:port.
func (s *Server) FrontendAddress() string { return s.frontend }

// LocalAddress returns where clients on this machine reach the server
// without TLS, host:port on a loopback address: the frontend, or with
// TLS an internal frontend that serves the same API.
func (s *Server) LocalAddress() string { return s.local }

// UIAddress returns the web UI's URL, http://host:port, or "" without a UI.
func (s *Server) UIAddress() string { return s.uiURL }

// Stop stops the UI and the server and releases their ports. Calls after the
// first return the first call's result.
//
// Some of the server's resources outlive Stop until the process exits: the
// SQLite plugin keeps every database it opened in a process-wide pool (a
// file stays open, a removed scratch file keeps its space, and a new Start on
// a kept file reuses the connection), and a few idle gRPC client connections,
// the web UI's among them, keep retrying with backoff.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.logger.quietenForShutdown()
		if s.ui != nil {
			s.ui.stop()
		}
		if err := s.server.Stop(); err != nil {
			s.stopErr = errors.Join(s.stopErr, fmt.Errorf("embedded temporal: stop: %w", err))
		}
		s.cleanup()
	})
	return s.stopErr
}
