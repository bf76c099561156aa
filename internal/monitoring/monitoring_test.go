package monitoring

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/telemetry"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestEndpoint checks the three paths over real HTTP: /healthz at once,
// /readyz 503 until SetReady and while its check fails, /metrics with
// what the handler recorded under Prometheus names.
func TestEndpoint(t *testing.T) {
	m, err := New()
	require.NoError(t, err)
	e, err := m.Serve("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(context.Background()) })
	base := "http://" + e.Addr()

	code, _ := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body := get(t, base+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "not connected to the temporal server yet")

	e.SetReady(func(context.Context) error { return errors.New("the temporal server does not answer") })
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "does not answer")
	e.SetReady(func(context.Context) error { return nil })
	code, _ = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code)

	telemetry.StepStarted(m.Handler(), "", "command", "exp")
	telemetry.StepEnded(m.Handler(), "cpu-cluster", "parallel", "exp", "failed", 90*time.Second)
	m.Handler().Counter("temporal_request").Inc(2)
	code, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`porch_steps_started_total{compute="serverless",experiment="exp",step_type="command"} 1`,
		`porch_steps_failed_total{compute="cpu-cluster",experiment="exp",step_type="parallel"} 1`,
		`porch_step_duration_seconds_bucket{compute="cpu-cluster",experiment="exp",status="failed",step_type="parallel",le="120"} 1`,
		`porch_step_duration_seconds_bucket{compute="cpu-cluster",experiment="exp",status="failed",step_type="parallel",le="60"} 0`,
		`temporal_request_total 2`,
		`go_goroutines `,
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "otel_scope_name")
	assert.False(t, strings.Contains(body, "target_info"), "no target_info series")

	require.NoError(t, e.Close(context.Background()))
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "closed endpoint still answers")
}

// TestServeBusyAddress checks the message for an address in use.
func TestServeBusyAddress(t *testing.T) {
	m, err := New()
	require.NoError(t, err)
	e, err := m.Serve("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(context.Background()) })
	_, err = m.Serve(e.Addr())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--metrics-address "+e.Addr()+": ")
	assert.Contains(t, err.Error(), "give a free host:port such as :9464")
}
