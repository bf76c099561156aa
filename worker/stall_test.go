package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// serverProcessEnv makes the test binary a Temporal server process
// (runServerProcess), which a test can stop with SIGSTOP as a stalled
// server: a restart, a long GC pause, a slow database.
const serverProcessEnv = "PORCH_TEST_SERVER_PROCESS"

// runServerProcess runs an embedded Temporal server, prints its frontend
// address and serves until its stdin closes.
func runServerProcess() int {
	srv, err := devserver.Start(context.Background(), devserver.Options{SearchAttributes: workflows.SearchAttributes()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded temporal:", err)
		return 1
	}
	defer srv.Stop()
	fmt.Println(srv.FrontendAddress())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startServerProcess starts a Temporal server in a process of its own and
// returns its frontend address and the process; the test's cleanup
// resumes and stops it.
func startServerProcess(t *testing.T) (string, *os.Process) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverProcessEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the server process prints its address")
	return strings.TrimSpace(line), cmd.Process
}

// stallEntryScript is a parallel step's entry script whose mini-batches
// note their start in the marks folder and wait for the gate file.
const stallEntryScript = `import argparse, os, time

args = None

def init():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--marks", required=True)
    p.add_argument("--gate", required=True)
    args, _ = p.parse_known_args()

def run(mini_batch):
    out = []
    for path in mini_batch:
        name = os.path.basename(path)
        open(os.path.join(args.marks, "par-" + name), "w").close()
        while not os.path.exists(args.gate):
            time.sleep(0.1)
        out.append(name)
    return out
`

// TestAServerStallShorterThanTheHeartbeatTimeoutCostsNothing stops the
// Temporal server process (SIGSTOP) in the middle of a command step, a
// parallel step's mini-batches and a sweep trial, all heartbeating, for
// 3 s and then for the heartbeat timeout (30 s) less 5 s: each time the
// steps keep running and their heartbeats resume; the run succeeds and
// no activity ran a second attempt (the std_log of each step and trial
// says attempt 1).
func TestAServerStallShorterThanTheHeartbeatTimeoutCostsNothing(t *testing.T) {
	needPython(t)
	const heartbeatTimeout = 30 * time.Second // the steps' own, and the parallel step's default
	addr, server := startServerProcess(t)
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	require.NoError(t, err)
	defer c.Close()
	home := t.TempDir()
	w, err := worker.Start(c, worker.Options{Home: home, Computes: []string{""}, Workflows: true})
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	dir := t.TempDir()
	marks, gate := filepath.Join(dir, "marks"), filepath.Join(dir, "gate")
	for _, d := range []string{marks, filepath.Join(dir, "data"), filepath.Join(dir, "src")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", f), []byte(f), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(stallEntryScript), 0o644))
	wait := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done", gate)
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
name: stall
jobs:
  cmd:
    command: touch %[1]s/cmd; %[2]s; echo done > ${{outputs.out}}/done.txt
    outputs:
      out:
        type: uri_folder
  par:
    type: parallel
    inputs:
      data:
        type: uri_folder
        path: ./data
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    max_concurrency_per_instance: 2
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --marks %[1]s --gate %[3]s
      append_row_to: ${{outputs.scores}}
  tune:
    type: sweep
    trial:
      type: command
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest
      inputs:
        x:
          type: integer
      command: >-
        touch %[1]s/trial; %[2]s;
        python3 -c "import mlflow; mlflow.log_metric('score', ${{inputs.x}})"
    search_space:
      x:
        type: choice
        values: [1]
    objective:
      primary_metric: score
      goal: maximize
    limits:
      max_total_trials: 1
`, marks, wait, gate)), 0o644))
	p := compile(t, path, nil)
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	run, err := workflows.Start(context.Background(), c, p, workflows.NewRunID(p), src)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(marks)
		return len(entries) == 4 // cmd, both mini-batches, the trial
	}, 2*time.Minute, 50*time.Millisecond, "the command, both mini-batches and the trial run")

	for _, stall := range []time.Duration{3 * time.Second, heartbeatTimeout - 5*time.Second} {
		// The steps heartbeat before the stall, so that it is measured
		// from a heartbeat at most a beat old.
		waitForHeartbeats(t, c, run.GetID(), time.Now())
		require.NoError(t, server.Signal(syscall.SIGSTOP))
		time.Sleep(stall) // the fault itself, not a wait for an event
		require.NoError(t, server.Signal(syscall.SIGCONT))
		t.Logf("the server was stopped for %s", stall)
		waitForHeartbeats(t, c, run.GetID(), time.Now())
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the run succeeds")

	for _, wf := range workflowsOf(t, c, run.GetID()) {
		it := c.GetWorkflowHistory(ctx, wf.id, wf.runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				assert.Equal(t, int32(1), a.GetAttempt(), "%s: an activity (scheduled at event %d) ran again", wf.id, a.GetScheduledEventId())
			}
		}
	}
	logs := 0
	root := filepath.Join(home, "datastores", "workspaceblobstore", "azureml", run.GetID())
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Name() != "std_log.txt" {
			return err
		}
		logs++
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Contains(t, string(b), ", attempt 1, on host", p)
		assert.NotContains(t, string(b), ", attempt 2, on host", p)
		return nil
	}))
	assert.GreaterOrEqual(t, logs, 2, "the command's and the trial's std_log.txt")
}

// workflowRef is one workflow execution of a run.
type workflowRef struct{ id, runID string }

// workflowsOf lists a run's workflow executions: the run's and, through
// its history, every child's, nested ones included.
func workflowsOf(t *testing.T, c client.Client, runID string) []workflowRef {
	t.Helper()
	out := []workflowRef{{id: runID}}
	for i := 0; i < len(out); i++ {
		it := c.GetWorkflowHistory(context.Background(), out[i].id, out[i].runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if a := e.GetChildWorkflowExecutionStartedEventAttributes(); a != nil {
				out = append(out, workflowRef{id: a.GetWorkflowExecution().GetWorkflowId(), runID: a.GetWorkflowExecution().GetRunId()})
			}
		}
	}
	return out
}

// waitForHeartbeats waits until every started activity of the run's open
// workflows that heartbeats has heartbeated since since.
func waitForHeartbeats(t *testing.T, c client.Client, runID string, since time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, wf := range workflowsOf(t, c, runID) {
			d, err := c.DescribeWorkflowExecution(context.Background(), wf.id, wf.runID)
			if err != nil {
				return false
			}
			for _, pa := range d.GetPendingActivities() {
				if pa.GetState() != enums.PENDING_ACTIVITY_STATE_STARTED || pa.GetHeartbeatDetails() == nil {
					continue
				}
				if pa.GetLastHeartbeatTime().AsTime().Before(since) {
					return false
				}
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "the running activities heartbeat since %s", since.Format(time.TimeOnly))
}
