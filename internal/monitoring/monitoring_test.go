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
		`porch_steps_started_total{compute="serverless",experiment="exp",service_name="porch",step_type="command"} 1`,
		`porch_steps_failed_total{compute="cpu-cluster",experiment="exp",service_name="porch",step_type="parallel"} 1`,
		`porch_step_duration_seconds_bucket{compute="cpu-cluster",experiment="exp",service_name="porch",status="failed",step_type="parallel",le="120"} 1`,
		`porch_step_duration_seconds_bucket{compute="cpu-cluster",experiment="exp",service_name="porch",status="failed",step_type="parallel",le="60"} 0`,
		`temporal_request_total{service_name="porch"} 2`,
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

// TestMillisecondBuckets checks that porch's timers tell a mini-batch of
// 3 ms from one of 40 ms and from one of 90 ms: every tiny mini-batch and
// quota wait used to fall in the first bucket, 0.1 s, and read 0.095 as a
// quantile.
func TestMillisecondBuckets(t *testing.T) {
	m, err := New()
	require.NoError(t, err)
	h := m.Handler().WithTags(map[string]string{telemetry.LabelCompute: "cpu"})
	for _, took := range []time.Duration{3 * time.Millisecond, 40 * time.Millisecond, 90 * time.Millisecond} {
		telemetry.MiniBatchSucceeded(h, 1, took)
	}
	telemetry.QuotaWaited(m.Handler(), "compute", "cpu", 2*time.Millisecond)
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	buckets := map[string]map[float64]uint64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if hist := s.GetHistogram(); hist != nil {
				buckets[f.GetName()] = map[float64]uint64{}
				for _, b := range hist.GetBucket() {
					buckets[f.GetName()][b.GetUpperBound()] = b.GetCumulativeCount()
				}
			}
		}
	}
	mb := buckets["porch_minibatch_duration_seconds"]
	assert.Equal(t, uint64(1), mb[0.005], "mini-batches of 5 ms or less")
	assert.Equal(t, uint64(1), mb[0.025], "mini-batches of 25 ms or less")
	assert.Equal(t, uint64(2), mb[0.05], "mini-batches of 50 ms or less")
	assert.Equal(t, uint64(3), mb[0.1], "mini-batches of 100 ms or less")
	assert.Equal(t, uint64(1), buckets["porch_quota_wait_seconds"][0.005], "quota waits of 5 ms or less")
}
