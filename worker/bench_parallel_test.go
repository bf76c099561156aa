package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Both parallel workloads run at concurrency 2 (one instance, two
// entry-script processes), as the issue asks.
const benchConcurrency = 2

// trivialScript returns its mini-batch unchanged.
const trivialScript = `def run(mini_batch):
    return mini_batch
`

// burnScript burns about 50 ms of CPU per mini-batch.
const burnScript = `import time

def run(mini_batch):
    end = time.process_time() + 0.05
    n = 0
    while time.process_time() < end:
        n += 1
    return mini_batch
`

// BenchmarkParallel measures parallel steps on the embedded server, each
// workload beside its baseline in the same run:
//
//   - overhead: 10,000 files in mini-batches of 10 through a trivial run(),
//     against a window of 2 no-op Temporal activities, one per mini-batch;
//   - work: 400 mini-batches whose run() burns 50 ms of CPU, against a plain
//     Go pool feeding the same persistent Python processes, no Temporal.
//
// The figures are ms per mini-batch; the ratio is porch's to the baseline's.
//
//	go test ./worker -run '^$' -bench Parallel -benchtime 1x
func BenchmarkParallel(b *testing.B) {
	b.Run("overhead", func(b *testing.B) {
		benchParallelPair(b, 10000, 10, trivialScript)
	})
	b.Run("work", func(b *testing.B) {
		benchParallelPair(b, 400, 1, burnScript)
	})
}

// benchParallelPair runs porch and its baseline over the same files.
func benchParallelPair(b *testing.B, files, perBatch int, script string) {
	dir := b.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(b, os.MkdirAll(data, 0o755))
	for i := range files {
		require.NoError(b, os.WriteFile(filepath.Join(data, fmt.Sprintf("%05d.txt", i)), []byte("x"), 0o644))
	}
	require.NoError(b, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(script), 0o644))
	yml := fmt.Sprintf(`type: pipeline
jobs:
  score:
    type: parallel
    inputs:
      data:
        type: uri_folder
        path: ./data
    input_data: ${{inputs.data}}
    mini_batch_size: "%d"
    max_concurrency_per_instance: %d
    task:
      type: run_function
      code: ./src
      entry_script: score.py
`, perBatch, benchConcurrency)
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(b, os.WriteFile(path, []byte(yml), 0o644))
	batches := (files + perBatch - 1) / perBatch

	var porch, base time.Duration
	for range b.N {
		porch += timePorchStep(b, path)
		if script == trivialScript {
			base += timeNoopWindow(b, batches)
		} else {
			base += timeGoPool(b, dir, data, perBatch)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*batches) }
	b.ReportMetric(per(porch), "porch-ms/batch")
	b.ReportMetric(per(base), "baseline-ms/batch")
	b.ReportMetric(float64(porch)/float64(base), "porch/baseline")
}

func timePorchStep(b *testing.B, path string) time.Duration {
	h := &harness{home: b.TempDir()}
	w := startWorker(b, h.home)
	defer w.Stop()
	p := compileB(b, path)
	src, _ := os.ReadFile(path)
	start := time.Now()
	run, err := startRun(p, src)
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
	return time.Since(start)
}

// timeNoopWindow runs n no-op activities, 2 at a time, in one workflow.
func timeNoopWindow(b *testing.B, n int) time.Duration {
	w := sdkworker.New(temporalClient, baselineQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(noopWindow, workflow.RegisterOptions{Name: "NoopWindow"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "Noop"})
	require.NoError(b, w.Start())
	defer w.Stop()
	start := time.Now()
	run, err := temporalClient.ExecuteWorkflow(context.Background(),
		client.StartWorkflowOptions{TaskQueue: baselineQueue}, "NoopWindow", n, benchConcurrency)
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
	return time.Since(start)
}

// noopWindow keeps window no-op activities in flight until n have run.
func noopWindow(ctx workflow.Context, n, window int) error {
	ctx = workflow.WithActivityOptions(ctx, baselineActivity)
	sel := workflow.NewSelector(ctx)
	running, next := 0, 0
	var failed error
	for next < n || running > 0 {
		for running < window && next < n {
			next++
			running++
			sel.AddFuture(workflow.ExecuteActivity(ctx, "Noop"), func(f workflow.Future) {
				running--
				if err := f.Get(ctx, nil); err != nil {
					failed = err
				}
			})
		}
		sel.Select(ctx)
	}
	return failed
}

// timeGoPool feeds the same mini-batches to the same persistent Python
// processes from two goroutines, without Temporal.
func timeGoPool(b *testing.B, dir, data string, perBatch int) time.Duration {
	manifest := filepath.Join(b.TempDir(), "manifest")
	_, err := minibatch.Plan(minibatch.Input{Type: "uri_folder", Path: data, Size: fmt.Sprint(perBatch)}, manifest)
	require.NoError(b, err)
	m, err := minibatch.Open(manifest)
	require.NoError(b, err)
	defer m.Close()
	pool := entryscript.NewPool(entryscript.Options{
		Python: os.Getenv("PORCH_PYTHON"), Dir: filepath.Join(dir, "src"), Script: "score.py", LogDir: b.TempDir(),
	}, benchConcurrency)
	defer pool.Close(context.Background())
	start := time.Now()
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range benchConcurrency {
		wg.Go(func() {
			for {
				next.Lock()
				idx := i
				i++
				next.Unlock()
				if idx >= m.Len() {
					return
				}
				batch, err := m.Batch(idx)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := pool.Run(context.Background(), entryscript.Request{Index: idx, Files: batch.Files, RunTimeout: time.Minute, LoadTimeout: time.Minute}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

func compileB(b *testing.B, path string) *plan.Plan {
	b.Helper()
	p, diags := compiler.Compile(path, compiler.Options{})
	require.False(b, diags.HasErrors(), diags.Error())
	return p
}
