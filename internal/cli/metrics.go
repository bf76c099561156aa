package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/internal/monitoring"
)

// metricsStopTimeout bounds the shutdown of the metrics endpoint.
const metricsStopTimeout = 5 * time.Second

// metricsEndpoint is a worker's --metrics-address: its Prometheus metrics
// and its health, served before the worker connects, so that /healthz
// answers at once and /readyz says 503 until the worker polls.
type metricsEndpoint struct {
	metrics  *monitoring.Metrics
	endpoint *monitoring.Endpoint
}

// startMetrics serves metrics and health on addr; "" serves nothing and
// returns nil.
func startMetrics(addr string) (*metricsEndpoint, error) {
	if addr == "" {
		return nil, nil
	}
	m, err := monitoring.New()
	if err != nil {
		return nil, err
	}
	e, err := m.Serve(addr)
	if err != nil {
		return nil, err
	}
	return &metricsEndpoint{metrics: m, endpoint: e}, nil
}

// handler is the metrics handler for the worker's client; nil without an
// endpoint.
func (m *metricsEndpoint) handler() client.MetricsHandler {
	if m == nil {
		return nil
	}
	return m.metrics.Handler()
}

// ready makes /readyz answer 200 while c reaches the Temporal server: it
// is called once the worker's pollers started, so a reachable server
// means the worker polls its task queues.
func (m *metricsEndpoint) ready(c client.Client) {
	if m == nil {
		return
	}
	m.endpoint.SetReady(func(ctx context.Context) error {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("the temporal server does not answer: %v", err)
		}
		return nil
	})
}

// stopping makes /readyz answer 503 while the worker stops.
func (m *metricsEndpoint) stopping() {
	if m != nil {
		m.endpoint.SetReady(func(context.Context) error { return fmt.Errorf("stopping") })
	}
}

// close stops the endpoint.
func (m *metricsEndpoint) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsStopTimeout)
	defer cancel()
	m.endpoint.Close(ctx)
}

// addr is where the endpoint listens.
func (m *metricsEndpoint) addr() string { return m.endpoint.Addr() }

// serverMetricsAddress is where porch dev's server serves its metrics:
// given, else with a worker's metrics address the next port on its host
// (a free one when the worker's port is 0), else nowhere.
func serverMetricsAddress(worker, given string) (string, error) {
	if given != "" || worker == "" {
		return given, nil
	}
	host, port, err := net.SplitHostPort(worker)
	if err != nil {
		return "", usageError("--metrics-address %q is not host:port: give one such as 127.0.0.1:9464", worker)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n >= 65535 {
		return "", usageError("--metrics-address %q: port %q is not a number from 0 to 65534", worker, port)
	}
	if n > 0 {
		return net.JoinHostPort(host, strconv.Itoa(n+1)), nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("find a free port for the server's metrics on %q: %v", host, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
