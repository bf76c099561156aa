// Package monitoring serves a porch process's Prometheus metrics and its
// health: one Prometheus registry per process, fed by the Temporal SDK's
// metrics (through its OpenTelemetry contrib and OpenTelemetry's
// Prometheus exporter), porch's own (package telemetry, recorded through
// the same SDK metrics handler) and the Go runtime's, served over HTTP at
// /metrics, with /healthz (the process is up) and /readyz (it does its
// work: see Endpoint.SetReady).
package monitoring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// sdkBuckets are the histogram buckets, in seconds, of the SDK's timers:
// request and task latencies, milliseconds to a minute.
var sdkBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// porchBuckets are the buckets of porch's own timers: steps, mini-batches
// and quota waits last from a few milliseconds (a mini-batch of a tiny
// run(), a quota granted at once) to a day.
var porchBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
	1800, 3600, 7200, 14400, 43200, 86400}

// ServiceLabel and ServiceName label every series of porch's and the
// Temporal SDK's metrics a porch process exports, as the Temporal server
// labels its own by service (frontend, history, matching, worker). The
// server's system worker exports SDK metrics under the same names
// (temporal_worker_task_slots_used, ...): a query filtered on
// service_name="porch" sees porch's workers only.
const (
	ServiceLabel = "service_name"
	ServiceName  = "porch"
)

// Metrics is a process's Prometheus registry and the Temporal metrics
// handler that records into it.
type Metrics struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  client.MetricsHandler
}

// New builds a registry with the Go runtime's and the process's
// collectors and a Temporal metrics handler over it, for client.Options:
// what it records carries service_name="porch".
func New() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Without scope and target info: every series would carry
	// otel_scope_name and a target_info series would describe the
	// OpenTelemetry resource, neither of which a porch user filters by.
	exp, err := otelprom.New(otelprom.WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{ServiceLabel: ServiceName}, reg)),
		otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("create the prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "porch_*", Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: porchBuckets}})),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "temporal_*", Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: sdkBuckets}})))
	handler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("porch"),
		// The SDK's counters only grow: monotonic, they show as
		// Prometheus counters (with _total), not gauges.
		UseMonotonicCounters: true,
		// The default panics; a metric that cannot be recorded must not
		// stop a step.
		OnError: func(err error) { slog.Warn("porch: record a metric", "error", err) },
	})
	return &Metrics{registry: reg, provider: provider, handler: handler}, nil
}

// Handler is the Temporal metrics handler to give client.Options: the
// SDK's metrics and porch's own go through it.
func (m *Metrics) Handler() client.MetricsHandler { return m.handler }

// Registry is the Prometheus registry behind /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Endpoint is the HTTP server of /metrics, /healthz and /readyz.
type Endpoint struct {
	server *http.Server
	addr   string
	done   chan struct{}

	mu    sync.Mutex
	ready func(ctx context.Context) error
}

// readyTimeout bounds one readiness check (a round trip to the server).
const readyTimeout = 3 * time.Second

// errStarting is /readyz's answer before SetReady.
var errStarting = errors.New("starting: not connected to the temporal server yet")

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// m's metrics and health until Close.
func (m *Metrics) Serve(addr string) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-address %s: %v: give a free host:port such as :9464", addr, err)
	}
	e := &Endpoint{addr: ln.Addr().String(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", e.serveReady)
	e.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(e.done)
		if err := e.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("porch: metrics endpoint stopped", "address", e.addr, "error", err)
		}
	}()
	return e, nil
}

// Addr is the address the endpoint listens on, with the port it got.
func (e *Endpoint) Addr() string { return e.addr }

// SetReady makes /readyz answer 200 while check returns nil, and 503
// with check's error otherwise; nil makes it 503 again (stopping).
func (e *Endpoint) SetReady(check func(ctx context.Context) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready = check
}

func (e *Endpoint) serveReady(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	check := e.ready
	e.mu.Unlock()
	err := errStarting
	if check != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		err = check(ctx)
	}
	if err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// Close stops the endpoint.
func (e *Endpoint) Close(ctx context.Context) error {
	err := e.server.Shutdown(ctx)
	<-e.done
	return err
}
