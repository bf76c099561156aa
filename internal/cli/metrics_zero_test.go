package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/workflows"
)

// gatedPipeline is one command step that waits until the file put in
// place of %s exists, then fails.
const gatedPipeline = `type: pipeline
name: gated
experiment_name: zero-test
jobs:
  wait:
    command: while [ ! -e %s ]; do sleep 0.1; done; exit 3
`

// TestCountersStartAtZero checks that porch's counters exist at 0 before
// their first increment, so that Prometheus's rate() shows a worker's
// first failure: a worker's mini-batch counters for each compute it
// serves as soon as it polls, a run's step counters for the compute and
// type of each of its steps as soon as it starts. The first failure then
// raises the same series from 0 to 1.
func TestCountersStartAtZero(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	gate := filepath.Join(dir, "gate")
	file := filepath.Join(dir, "gated.yml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(gatedPipeline, "%s", gate, 1)), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{Namespace: defaultNamespace, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	defer srv.Stop()
	metricsAddr := freeAddress(t)
	var wout, werr syncBuffer
	workerDone := make(chan int, 1)
	go func() {
		workerDone <- Run(ctx, []string{"worker", "--address", srv.FrontendAddress(), "--compute", "", "--compute", "cpu-cluster",
			"--workflows", "--metrics-address", metricsAddr}, strings.NewReader(""), &wout, &werr)
	}()
	base := "http://" + metricsAddr
	// Waits for the worker to have started its pollers (SetReady).
	require.Eventually(t, func() bool { return status(base+"/readyz") == http.StatusOK }, 60*time.Second, 100*time.Millisecond,
		"readyz never 200; worker stdout:\n%s\nstderr:\n%s", &wout, &werr)

	families := scrape(t, base+"/metrics")
	for _, compute := range []string{"serverless", "cpu-cluster"} {
		for _, name := range []string{"porch_minibatches_processed_total", "porch_minibatches_failed_total",
			"porch_items_processed_total", "porch_items_failed_total"} {
			assert.Equal(t, []float64{0}, values(families, name, map[string]string{"compute": compute}), "%s{compute=%q} before any mini-batch", name, compute)
		}
	}

	var out, errOut syncBuffer
	code := Run(ctx, []string{"run", "--detach", "--address", srv.FrontendAddress(), file}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", &out, &errOut)
	step := map[string]string{"compute": "serverless", "step_type": "command", "experiment": "zero-test"}
	// Waits for the run's first workflow task, which starts the step.
	require.Eventually(t, func() bool {
		return sample(scrape(t, base+"/metrics"), "porch_steps_started_total", step) == 1
	}, 60*time.Second, 100*time.Millisecond, "the step never started; worker stderr:\n%s", &werr)
	families = scrape(t, base+"/metrics")
	for _, name := range []string{"porch_steps_succeeded_total", "porch_steps_failed_total", "porch_steps_canceled_total", "porch_steps_reused_total"} {
		assert.Equal(t, []float64{0}, values(families, name, step), "%s while the run's only step runs", name)
	}

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	// Waits for the step to fail once the gate is open.
	require.Eventually(t, func() bool {
		return sample(scrape(t, base+"/metrics"), "porch_steps_failed_total", step) == 1
	}, 60*time.Second, 100*time.Millisecond, "the step never failed; worker stderr:\n%s", &werr)
	assert.Equal(t, []float64{1}, values(scrape(t, base+"/metrics"), "porch_steps_failed_total", step),
		"the failure raises the series that was at 0, not a new one")
	cancel()
	select {
	case <-workerDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not stop")
	}
}

// values are the values of the series of counter family name whose labels
// include want, one per series; nil when there is none.
func values(families map[string]*dto.MetricFamily, name string, want map[string]string) []float64 {
	var out []float64
	for _, m := range families[name].GetMetric() {
		if hasLabels(m, want) {
			out = append(out, m.GetCounter().GetValue())
		}
	}
	return out
}
