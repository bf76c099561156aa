package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
)

// metricsPipeline is a command step and a parallel step of 3 mini-batches,
// one of which fails (and is allowed to: mini_batch_error_threshold -1).
const metricsPipeline = `type: pipeline
name: metered
experiment_name: metrics-test
jobs:
  prep:
    command: echo prepared
  score:
    type: parallel
    inputs:
      data:
        type: uri_folder
        path: ./data
    input_data: ${{inputs.data}}
    mini_batch_size: "2"
    max_concurrency_per_instance: 1
    mini_batch_error_threshold: -1
    retry_settings:
      max_retries: 0
      timeout: 30
    task:
      type: run_function
      code: ./src
      entry_script: score.py
`

const scoreScript = `import os

def run(mini_batch):
    for path in mini_batch:
        if os.path.basename(path).startswith("fail"):
            raise ValueError("cannot score " + os.path.basename(path))
    return mini_batch
`

// TestWorkerMetrics runs `porch worker --metrics-address` against a real
// embedded server, runs a pipeline on it, and reads /metrics as
// Prometheus would: porch's step and mini-batch counters with their
// labels, and the Temporal SDK's own metrics. /readyz is 200 while the
// worker polls and 503 once the server is gone.
func TestWorkerMetrics(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("parallel steps need python3 on PATH")
	}
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	file := writeMetricsPipeline(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{Namespace: defaultNamespace, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			srv.Stop()
		}
	}()
	metricsAddr := freeAddress(t)
	var wout, werr syncBuffer
	workerDone := make(chan int, 1)
	go func() {
		workerDone <- Run(ctx, []string{"worker", "--address", srv.FrontendAddress(), "--metrics-address", metricsAddr},
			strings.NewReader(""), &wout, &werr)
	}()
	base := "http://" + metricsAddr
	// Waits for the worker to have started its pollers (SetReady).
	require.Eventually(t, func() bool { return status(base+"/readyz") == http.StatusOK }, 60*time.Second, 100*time.Millisecond,
		"readyz never 200; worker stdout:\n%s\nstderr:\n%s", &wout, &werr)
	assert.Equal(t, http.StatusOK, status(base+"/healthz"))
	assert.Contains(t, wout.String(), "porch worker: metrics at http://"+metricsAddr+"/metrics, health at /healthz and /readyz\n")

	var out, errOut syncBuffer
	code := Run(ctx, []string{"run", "--address", srv.FrontendAddress(), file}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", &out, &errOut)

	families := scrape(t, base+"/metrics")
	steps := map[string]string{"compute": "serverless", "experiment": "metrics-test"}
	assert.Equal(t, 1.0, sample(families, "porch_steps_started_total", with(steps, "step_type", "command")))
	assert.Equal(t, 1.0, sample(families, "porch_steps_succeeded_total", with(steps, "step_type", "command")))
	assert.Equal(t, 1.0, sample(families, "porch_steps_started_total", with(steps, "step_type", "parallel")))
	assert.Equal(t, 1.0, sample(families, "porch_steps_succeeded_total", with(steps, "step_type", "parallel")))
	assert.Equal(t, 1.0, sample(families, "porch_step_duration_seconds", with(with(steps, "step_type", "parallel"), "status", "succeeded")))
	// One series each: the one the worker made at 0 as it started.
	mb := map[string]string{"compute": "serverless"}
	assert.Equal(t, []float64{2}, values(families, "porch_minibatches_processed_total", mb))
	assert.Equal(t, []float64{4}, values(families, "porch_items_processed_total", mb))
	assert.Equal(t, []float64{1}, values(families, "porch_minibatches_failed_total", mb))
	assert.Equal(t, []float64{1}, values(families, "porch_items_failed_total", mb))
	assert.Equal(t, 3.0, sample(families, "porch_minibatch_duration_seconds", with(mb, "service_name", "porch")))
	assert.Equal(t, 1.0, sample(families, "porch_worker_computes", map[string]string{"compute": "serverless", "tier": "dedicated"}))
	// The SDK's own: a Pipeline workflow completed, requests made.
	assert.GreaterOrEqual(t, sample(families, "temporal_workflow_completed_total", map[string]string{"workflow_type": "Pipeline"}), 1.0)
	assert.Greater(t, sample(families, "temporal_request_total", nil), 0.0)

	require.NoError(t, srv.Stop())
	stopped = true
	require.Eventually(t, func() bool { return status(base+"/readyz") == http.StatusServiceUnavailable }, 30*time.Second, 100*time.Millisecond,
		"readyz still 200 with the server stopped")
	assert.Equal(t, http.StatusOK, status(base+"/healthz"))
	cancel()
	select {
	case code := <-workerDone:
		assert.Equal(t, 0, code, "worker stderr:\n%s", &werr)
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not stop")
	}
}

func writeMetricsPipeline(t *testing.T, dir string) string {
	t.Helper()
	files := map[string]string{
		"metered.yml": metricsPipeline, "src/score.py": scoreScript,
		"data/a.txt": "a", "data/b.txt": "b", "data/c.txt": "c", "data/d.txt": "d", "data/fail.txt": "boom",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return filepath.Join(dir, "metered.yml")
}

// freeAddress is a loopback host:port nothing listens on now.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// status is the HTTP status of GET url, 0 when it cannot be reached.
func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// scrape reads url's Prometheus text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// sample sums the series of family name whose labels include want: a
// counter's or gauge's value, a histogram's count. A missing family is -1.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// with is labels plus name=value.
func with(labels map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// TestServerMetricsAddress checks where porch dev's server serves its
// metrics: given, the next port, a free one for port 0, or none.
func TestServerMetricsAddress(t *testing.T) {
	for _, c := range []struct{ worker, given, want, err string }{
		{"127.0.0.1:9464", "", "127.0.0.1:9465", ""},
		{":9464", "", ":9465", ""},
		{"127.0.0.1:9464", "127.0.0.1:9999", "127.0.0.1:9999", ""},
		{"", "", "", ""},
		{"9464", "", "", `--metrics-address "9464" is not host:port`},
		{"host:x", "", "", `port "x" is not a number`},
	} {
		got, err := serverMetricsAddress(c.worker, c.given)
		if c.err != "" {
			require.Error(t, err, c.worker)
			assert.Contains(t, err.Error(), c.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, got, c.worker)
	}
	got, err := serverMetricsAddress("127.0.0.1:0", "")
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(got)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port)
}
