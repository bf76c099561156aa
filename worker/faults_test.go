package worker_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// parentOf is the parent pid of process pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	return ppid
}

// TestAKilledWorkersCommandStepLeavesOneAttemptsOutput kills (SIGKILL) the
// worker process running a command step that appends to its output: the
// attempt's processes die with their worker, the retry runs on the other
// worker, and the output holds exactly the retry's lines.
func TestAKilledWorkersCommandStepLeavesOneAttemptsOutput(t *testing.T) {
	home := t.TempDir()
	w := startWorker(t, home) // workflows only; the step runs on compute "appender"
	t.Cleanup(w.Stop)
	procs := map[int]bool{}
	for _, node := range []string{"first", "second"} {
		procs[startWorkerProcess(t, home, "appender", node).Process.Pid] = true
	}
	c := newAppendCase(t, "compute: azureml:appender", "0.05")
	h := &harness{t: t, home: home}
	run := h.start(compile(t, c.path, nil))

	// Waits for the first attempt to have appended a few lines, to kill
	// its worker in the middle of the step.
	pid := c.firstAttempt(t, 5)
	victim := parentOf(t, pid)
	require.True(t, procs[victim], "the step's shell is a child of a worker process")
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	// The killed worker's step dies with it.
	assertPIDGoneWithin(t, pid, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the step is retried on the other worker after the heartbeat timeout")
	c.oneAttempt(t, h, run.GetID(), pid)
}

// appendCase is a pipeline of one step, append, that appends 40 numbered
// lines ("<its shell's pid> <n>") to its output and to a progress file;
// its first attempt leaves its shell's pid in a mark folder.
type appendCase struct {
	path, progress, mark string
}

// newAppendCase writes the pipeline; settings are the step's lines before
// its command (its compute), pause the seconds between lines.
func newAppendCase(t *testing.T, settings, pause string) appendCase {
	dir := t.TempDir()
	c := appendCase{path: filepath.Join(dir, "pipeline.yml"), progress: filepath.Join(dir, "progress.log"), mark: filepath.Join(dir, "first-attempt")}
	src := fmt.Sprintf(`type: pipeline
jobs:
  append:
    %[3]s
    outputs:
      out:
        type: uri_folder
    command: >-
      if mkdir %[2]s 2>/dev/null; then echo $$ > %[2]s/pid; fi;
      for i in $(seq 1 40); do echo "$$ $i" >> ${{outputs.out}}/rows.txt; echo "$$ $i" >> %[1]s; sleep %[4]s; done
`, c.progress, c.mark, settings, pause)
	require.NoError(t, os.WriteFile(c.path, []byte(src), 0o644))
	return c
}

// firstAttempt waits for the first attempt to have appended n lines, and
// returns its shell's pid.
func (c appendCase) firstAttempt(t *testing.T, n int) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(c.mark, "pid"))
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		data, _ := os.ReadFile(c.progress)
		return pid > 0 && strings.Count(string(data), "\n") >= n
	}, time.Minute, 10*time.Millisecond, "the first attempt appends")
	return pid
}

// oneAttempt checks that run's output holds one attempt's 40 lines, whole,
// and not those of the attempt whose shell was killed.
func (c appendCase) oneAttempt(t *testing.T, h *harness, runID string, killed int) {
	t.Helper()
	rows := lines(t, h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/append/out/rows.txt", runID)))
	require.Len(t, rows, 40, "one attempt's lines, no more")
	writer := strings.Fields(rows[0])[0]
	assert.NotEqual(t, strconv.Itoa(killed), writer, "the last attempt's lines, not the killed one's")
	for i, r := range rows {
		assert.Equal(t, fmt.Sprintf("%s %d", writer, i+1), r)
	}
}

// TestAKilledWorkersMiniBatchesResumeElsewhereWithinTheHeartbeatTimeout
// kills (SIGKILL) one of two workers in the middle of a parallel step, on
// a plain compute and on an instance type (where mini-batches go to the
// held node's own queue): the mini-batches it had in flight run on the
// other worker within the heartbeat timeout and a few seconds, not after
// a schedule-to-start timeout on the dead worker's queue.
func TestAKilledWorkersMiniBatchesResumeElsewhereWithinTheHeartbeatTimeout(t *testing.T) {
	const heartbeat = 3 * time.Second
	cases := []struct {
		name     string
		settings func(t *testing.T) (string, func(home, node string) *exec.Cmd)
	}{
		{"compute", func(t *testing.T) (string, func(home, node string) *exec.Cmd) {
			return "    compute: azureml:resumer\n    resources:\n      instance_count: 2",
				func(home, node string) *exec.Cmd { return startWorkerProcess(t, home, "resumer", node) }
		}},
		{"instance type", func(t *testing.T) (string, func(home, node string) *exec.Cmd) {
			registerRouting(t, "resumer-it")
			return "    compute: azureml:resumer-it\n    resources:\n      instance_type: resumer-it-a\n      instance_count: 2",
				func(home, node string) *exec.Cmd {
					return startRoutedWorkerProcess(t, home, "resumer-it", node, worker.Options{
						InstanceTypes: []string{"resumer-it-a"}, Labels: []plan.Label{{Key: "zone", Value: "a"}},
						Capacity: plan.ResourceList{MilliCPU: 1000, MemoryBytes: 1 << 30}})
				}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			w := startWorker(t, home) // workflows only
			t.Cleanup(w.Stop)
			settings, start := c.settings(t)
			victim := start(home, "victim")
			start(home, "survivor")
			h := &harness{t: t, home: home}
			files := names("tick", 40)
			path, _ := parallelCase{files: files, settings: settings + `
    mini_batch_size: "1"
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0`, args: fmt.Sprintf("--progress_update_timeout %d", int(heartbeat.Seconds()))}.write(t)
			cat, err := workflows.GetCatalog(context.Background(), temporalClient)
			require.NoError(t, err)
			p, diags := compiler.Compile(path, compiler.Options{Catalog: &cat})
			require.False(t, diags.HasErrors(), diags.Error())
			run := h.start(p)
			logs := h.stepLogs(run.GetID())
			require.Eventually(t, func() bool {
				n := 0
				f, err := os.Open(filepath.Join(logs, "sys", "job_report", "processed_mini-batches.csv"))
				if err != nil {
					return false
				}
				defer f.Close()
				rows, _ := csv.NewReader(f).ReadAll()
				for _, r := range rows {
					if len(r) > 3 && r[3] == "victim" && r[2] == "succeeded" {
						n++
					}
				}
				return n >= 3
			}, time.Minute, 20*time.Millisecond, "the victim scores mini-batches")
			require.NoError(t, victim.Process.Kill())
			killed := time.Now()

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, run.Get(ctx, nil))
			took := time.Since(killed)
			t.Logf("the step ended %s after the kill", took.Round(100*time.Millisecond))
			// What is left after the kill is at most 40 mini-batches of
			// 0.2 s on two processes (4 s); the heartbeat timeout and 5 s
			// of slack on top of that, and the 3 s the step's end may wait
			// for a dead node's resource monitor to stop (on a plain
			// compute the workflow cannot tell it is lost): well under the
			// 60 s a retry on the dead node's queue waits.
			assert.Less(t, took, heartbeat+5*time.Second+10*time.Second+3*time.Second,
				"the killed worker's mini-batches resume elsewhere after the heartbeat timeout")
			var want []string
			for i, f := range files {
				want = append(want, fmt.Sprintf("%s,%d", f, i))
			}
			out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", run.GetID()))
			assert.Equal(t, want, lines(t, out), "every input row once, in order")
			if os.Getenv("PORCH_RECORD_HISTORIES") != "" && c.name == "instance type" {
				// A replay fixture of a step that moved a lost node's
				// mini-batches (PORCH_RECORD_HISTORIES=1).
				recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-parallel-failover", run.GetID())
			}
		})
	}
}

// slowShutdownScript scores each file as its name and index, and takes 3 s
// in shutdown(), which FinishParallel calls: long enough to kill the
// worker finishing the step.
const slowShutdownScript = `import os, sys, time

def init():
    pass

def run(mini_batch):
    return ["%s,%s" % (os.path.basename(p), open(p).read().strip()) for p in mini_batch]

def shutdown():
    time.sleep(3)
`

// TestAWorkerKilledWhileFinishingAParallelStepIsReplacedWithinTheHeartbeatTimeout
// kills (SIGKILL) the worker running FinishParallel: another worker
// finishes the step within the step's heartbeat timeout and a few seconds
// (it waited 5 minutes), and the output holds every row once.
func TestAWorkerKilledWhileFinishingAParallelStepIsReplacedWithinTheHeartbeatTimeout(t *testing.T) {
	const heartbeat = 3 * time.Second
	home := t.TempDir()
	w := startWorker(t, home) // workflows only
	t.Cleanup(w.Stop)
	// One worker runs the mini-batches, so the entry-script processes
	// whose shutdown() FinishParallel waits for are all its own; the
	// other starts once FinishParallel has.
	first := startWorkerProcess(t, home, "finisher", "first")
	h := &harness{t: t, home: home}
	files := names("f", 6)
	path, _ := parallelCase{files: files, settings: `    compute: azureml:finisher
    mini_batch_size: "2"
    mini_batch_error_threshold: 0`, args: fmt.Sprintf("--progress_update_timeout %d", int(heartbeat.Seconds()))}.write(t)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "src", "score.py"), []byte(slowShutdownScript), 0o644))
	run := h.start(compile(t, path, nil))

	// Waits for FinishParallel to have started on the first worker, starts
	// the second and kills the first.
	require.Eventually(t, func() bool {
		desc, err := temporalClient.DescribeWorkflowExecution(context.Background(), run.GetID()+"/score", "")
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == parallel.FinishParallelName && pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
				return pa.GetLastWorkerIdentity() == "first"
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "FinishParallel starts")
	startWorkerProcess(t, home, "finisher", "second")
	require.NoError(t, first.Process.Kill())
	killed := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	took := time.Since(killed)
	t.Logf("the step ended %s after the first worker was killed", took.Round(100*time.Millisecond))
	// The heartbeat timeout, the 3 s the step's end may wait for the dead
	// worker's resource monitor, and 5 s (the second worker has no
	// entry-script process to shut down).
	assert.Less(t, took, heartbeat+3*time.Second+5*time.Second,
		"FinishParallel of a killed worker runs again elsewhere after the step's heartbeat timeout")
	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", run.GetID()))
	assert.Equal(t, want, lines(t, out), "every input row once, in order")
}
