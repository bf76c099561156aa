package parallel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/internal/testpython"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestPython is the interpreter for entry scripts: PORCH_PYTHON, Debian's
// /usr/bin/python3, else python3 on PATH.

// echoScript returns its files' names and notes shutdown() in a file.
const echoScript = `import os, sys

def run(mini_batch):
    return [os.path.basename(p) for p in mini_batch]

def shutdown():
    with open(os.environ["SHUTDOWN_LOG"], "a") as f:
        f.write("%d\n" % os.getpid())
`

// plannedEchoStep plans a parallel step of echoScript over 12 files in
// mini-batches of 2, three processes at once, on a worker whose home is
// home. It returns the worker's activities, the plan and shutdown()'s log.
func plannedEchoStep(t *testing.T, home string) (*Activities, ParallelPlan, string) {
	t.Helper()
	return plannedStep(t, home, echoScript)
}

// plannedStep is plannedEchoStep with script as the entry script.
func plannedStep(t *testing.T, home, script string) (*Activities, ParallelPlan, string) {
	t.Helper()
	return plannedStepIn(t, &stepio.Host{Home: home, Node: "n1"}, nil, script)
}

// plannedStepIn is plannedStep on the worker host, its entry scripts in
// the environment env.
func plannedStepIn(t *testing.T, host *stepio.Host, env *plan.Environment, script string) (*Activities, ParallelPlan, string) {
	t.Helper()
	a, p, log := plannedStepFor(t, host, env, script)
	t.Cleanup(func() { a.Close(context.Background()) })
	return a, p, log
}

// plannedStepFor is plannedStepIn for tests and benchmarks alike; the
// caller closes the activities.
func plannedStepFor(t testing.TB, host *stepio.Host, env *plan.Environment, script string) (*Activities, ParallelPlan, string) {
	t.Helper()
	return plannedStepOf(t, host, env, script, 12)
}

// plannedStepOf is plannedStepFor over files files, two a mini-batch.
func plannedStepOf(t testing.TB, host *stepio.Host, env *plan.Environment, script string, files int) (*Activities, ParallelPlan, string) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(data, 0o755))
	for i := range files {
		require.NoError(t, os.WriteFile(filepath.Join(data, fmt.Sprintf("f%02d.txt", i)), nil, 0o644))
	}
	code := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(code, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "echo.py"), []byte(script), 0o644))
	shutdownLog := filepath.Join(dir, "shutdown.log")

	a := &Activities{Host: host, Python: testpython.Interpreter(t), IdleShutdown: 200 * time.Millisecond}
	in := PlanMiniBatchesInput{
		RunID: "run1", StepPath: "echo", DefaultDatastore: "ws",
		Parallel: plan.Parallel{
			InputData: "data", MiniBatchSize: "2", MaxConcurrencyPerInstance: 3,
			Resources: plan.Resources{InstanceCount: 1},
			Retry:     plan.ParallelRetry{TimeoutSeconds: 30}, TaskOverheadTimeoutSeconds: 30,
			Task:                 plan.ParallelTask{Code: code, EntryScript: "echo.py", AppendRowTo: "out", Env: env},
			EnvironmentVariables: map[string]string{"SHUTDOWN_LOG": shutdownLog},
		},
		Inputs:  []plan.Input{{Name: "data", Type: "uri_folder", Value: plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: "uri_folder", Path: data}}}},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder", Path: plan.DefaultOutputURI("ws", "run1", "echo", "out")}},
	}
	p, err := a.PlanMiniBatches(context.Background(), in)
	require.NoError(t, err)
	return a, p, shutdownLog
}

func TestMiniBatchesShareProcessesAndIdleOnesShutDown(t *testing.T) {
	a, p, shutdownLog := plannedEchoStep(t, t.TempDir())
	require.Equal(t, 6, p.Batches)
	require.Equal(t, 3, p.PerInstance)

	// Six mini-batches from six goroutines at once: they share the one
	// runtime and its three processes.
	var wg sync.WaitGroup
	results := make([]MiniBatchResult, p.Batches)
	for i := range p.Batches {
		wg.Go(func() {
			r, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: i})
			assert.NoError(t, err)
			results[i] = r
		})
	}
	wg.Wait()
	processes := map[string]bool{}
	for i, r := range results {
		assert.Equal(t, 2, r.Returned, "mini-batch %d", i)
		processes[r.Process] = true
	}
	assert.LessOrEqual(t, len(processes), 3)

	again, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: 4})
	require.NoError(t, err)
	assert.True(t, again.Skipped, "a finished mini-batch is not run again")

	// Waits for the reaper to find the step idle and call shutdown() in
	// every process it started.
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(shutdownLog)
		return strings.Count(string(data), "\n") == len(processes)
	}, 10*time.Second, 20*time.Millisecond)

	assert.Equal(t, echoRows(12), finishEchoStep(t, a, p))
}

// finishEchoStep finishes a planned echo step whose six mini-batches
// succeeded and returns what append_row_to holds.
func finishEchoStep(t *testing.T, a *Activities, p ParallelPlan) string {
	t.Helper()
	res, err := a.FinishParallel(context.Background(), FinishParallelInput{
		Progress:  ProgressInput{Ref: p.Ref, Counters: ParallelCounters{Batches: 6, Succeeded: 6}},
		Succeeded: true,
	})
	require.NoError(t, err)
	var out string
	for _, o := range res.Outputs {
		if o.Name == "out" {
			out = o.Path
		}
	}
	got, err := os.ReadFile(filepath.Join(out, plan.AppendRowFileName))
	require.NoError(t, err)
	return string(got)
}

// echoRows is what append_row_to holds once echoScript has run over
// files files: every file's name once, in order.
func echoRows(files int) string {
	var want strings.Builder
	for i := range files {
		fmt.Fprintf(&want, "f%02d.txt\n", i)
	}
	return want.String()
}

// mlflowScript imports mlflow at module level, as Azure's batch-scoring
// examples do, and logs from run().
const mlflowScript = `import os
import mlflow

def run(mini_batch):
    mlflow.log_metric("x", 1)
    return [os.path.basename(p) for p in mini_batch]
`

// TestEntryScriptsGetPorchsMlflow runs an entry script that imports mlflow
// on a Python without one: porch's module is on its PYTHONPATH and what it
// logs lands in the node's metrics file in the step's logs.
func TestEntryScriptsGetPorchsMlflow(t *testing.T) {
	a, p, _ := plannedStep(t, t.TempDir(), mlflowScript)
	if out, err := exec.Command(a.Python, "-c", "import mlflow").CombinedOutput(); err == nil {
		t.Skipf("%s has a real mlflow, which porch leaves in charge: %s", a.Python, out)
	}
	r, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: 0})
	require.NoError(t, err)
	assert.Equal(t, 2, r.Returned)

	f, err := a.parallelFolders(p.Ref)
	require.NoError(t, err)
	recs, _, err := metrics.Read(filepath.Join(f.logs, "user", "metrics", a.NodeName()+".jsonl"), 0, 1<<20)
	require.NoError(t, err)
	var got []metrics.Record
	for _, r := range recs {
		if r.Kind == metrics.KindMetric {
			got = append(got, r)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, "x", got[0].Key)
	assert.Equal(t, 1.0, got[0].Value)
}

// TestAFullDiskDuringTheAppendLeavesNoTemporaryFile makes the append's
// temporary file /dev/full, where every write fails with ENOSPC: the
// failure names the output and the file and may be retried, the temporary
// file is gone rather than holding the space, and the retry writes the
// whole output.
func TestAFullDiskDuringTheAppendLeavesNoTemporaryFile(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this machine")
	}
	home := t.TempDir()
	a, p, _ := plannedEchoStep(t, home)
	for i := range p.Batches {
		_, err := a.RunMiniBatch(context.Background(), MiniBatchInput{Ref: p.Ref, Index: i})
		require.NoError(t, err)
	}
	out, err := stepio.LocalPath(home, plan.DefaultOutputURI("ws", "run1", "echo", "out"))
	require.NoError(t, err)
	target := filepath.Join(out, plan.AppendRowFileName)
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.Symlink("/dev/full", target+".porch-tmp"))
	finish := FinishParallelInput{
		Progress:  ProgressInput{Ref: p.Ref, Counters: ParallelCounters{Batches: 6, Succeeded: 6}},
		Succeeded: true,
	}

	_, err = a.FinishParallel(context.Background(), finish)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `output "out"`)
	assert.Contains(t, err.Error(), target)
	assert.Contains(t, err.Error(), "no space left on device")
	var ae *temporal.ApplicationError
	assert.False(t, errors.As(err, &ae) && ae.NonRetryable(), "a full disk may have room on the next attempt")
	_, err = os.Lstat(target + ".porch-tmp")
	assert.ErrorIs(t, err, os.ErrNotExist, "the temporary file is removed")
	_, err = os.Stat(target)
	assert.ErrorIs(t, err, os.ErrNotExist, "no partial output")

	_, err = a.FinishParallel(context.Background(), finish)
	require.NoError(t, err)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, 12, strings.Count(string(got), "\n"), "the retry writes every row")
}
