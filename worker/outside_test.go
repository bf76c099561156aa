package worker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/workflows"
)

// TestAStepEndedFromOutsidePorchFailsItsRun cancels, then terminates, a
// running step's workflow from a separate Temporal client (as the web UI
// or `temporal workflow cancel|terminate` would): the run fails, never
// completes; the failure and the steps query name the step and who ended
// it; its dependant is skipped.
func TestAStepEndedFromOutsidePorchFailsItsRun(t *testing.T) {
	ops, err := client.Dial(client.Options{HostPort: serverAddress, Identity: "ops@control-room"})
	require.NoError(t, err)
	defer ops.Close()
	for _, c := range []struct {
		name string
		end  func(id string) error
		want string
	}{
		{"cancel", func(id string) error { return ops.CancelWorkflow(context.Background(), id, "") },
			`step "slow" was canceled from outside porch by ops@control-room`},
		{"terminate", func(id string) error {
			return ops.TerminateWorkflow(context.Background(), id, "", "stuck on a bad node")
		}, `step "slow" was terminated from outside porch by ops@control-room: stuck on a bad node`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			path := filepath.Join(dir, "pipeline.yml")
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
jobs:
  slow:
    command: touch %s; sleep 600
  after:
    command: echo after
    inputs:
      x: ${{parent.jobs.slow.outputs.artifacts}}
`, started)), 0o644))
			run := h.start(compile(t, path, nil))
			require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil },
				time.Minute, 20*time.Millisecond, "the step starts")
			require.NoError(t, c.end(run.GetID()+"/slow"))

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run.Get(ctx, nil)
			require.Error(t, err, "the run does not complete")
			assert.Contains(t, workflows.ErrorMessage(err), c.want)
			st := steps(t, run.GetID())
			assert.Equal(t, c.want, st["slow"].Error)
			assert.Equal(t, workflows.StatusSkipped, st["after"].Status)
			if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
				// Replay fixtures of a run whose step a client ended
				// (PORCH_RECORD_HISTORIES=1).
				recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-step-"+c.name+"-outside", run.GetID())
			}
		})
	}
}

// temporalCLI is the official Temporal CLI, on PATH or in $GOPATH/bin; the
// test skips without it (CI installs it).
func temporalCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		t.Skip("the temporal CLI is not installed: go install github.com/temporalio/cli/cmd/temporal@v1.5.1")
	}
	return p
}

// reset resets a workflow to its first workflow task with the Temporal
// CLI, as a user would.
func reset(t *testing.T, cli, id string) {
	t.Helper()
	out, err := exec.Command(cli, "workflow", "reset", "--address", serverAddress, "--workflow-id", id,
		"--type", "FirstWorkflowTask", "--reason", "test").CombinedOutput()
	require.NoError(t, err, "temporal workflow reset: %s", out)
}

// resetCase is a run whose second step writes files into its output, one
// per tick, until a gate file appears: an attempt's files and log lines
// carry its shell's pid.
type resetCase struct {
	h                  *harness
	dir, log, gate     string
	pids, pipelineFile string
}

func newResetCase(t *testing.T, h *harness) *resetCase {
	dir := t.TempDir()
	c := &resetCase{h: h, dir: dir, log: filepath.Join(dir, "ran.log"), gate: filepath.Join(dir, "gate"), pids: filepath.Join(dir, "pids")}
	c.pipelineFile = filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(c.pipelineFile, []byte(fmt.Sprintf(`type: pipeline
jobs:
  first:
    command: echo first >> %[1]s
  second:
    command: >-
      echo $$ >> %[3]s; echo second >> %[1]s; echo "attempt of $$";
      i=0; while [ ! -e %[2]s ]; do i=$((i+1)); echo "$$ tick $i"; touch ${{outputs.out}}/$$-$i; sleep 0.1; done;
      echo $$ > ${{outputs.out}}/final.txt
    inputs:
      x: ${{parent.jobs.first.outputs.artifacts}}
    outputs:
      out:
        type: uri_folder
`, c.log, c.gate, c.pids)), 0o644))
	return c
}

// started waits for the second step's nth attempt and returns its pid.
func (c *resetCase) started(t *testing.T, n int) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(c.pids)
		f := strings.Fields(string(b))
		if len(f) < n {
			return false
		}
		pid, _ = strconv.Atoi(f[n-1])
		return true
	}, time.Minute, 20*time.Millisecond, "attempt %d of the second step starts", n)
	return pid
}

// consistent checks that the second step's output and log are one
// attempt's, the one of pid, whole: no file or line of another.
func (c *resetCase) consistent(t *testing.T, runID string, pid int) {
	t.Helper()
	out := c.h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/second/out", runID))
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range entries {
		assert.True(t, e.Name() == "final.txt" || strings.HasPrefix(e.Name(), strconv.Itoa(pid)+"-"),
			"%s in the output is not the last attempt's (pid %d)", e.Name(), pid)
	}
	final, err := os.ReadFile(filepath.Join(out, "final.txt"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(pid)+"\n", string(final))
	log, err := os.ReadFile(c.h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/second/artifacts/user_logs/std_log.txt", runID)))
	require.NoError(t, err)
	ticks := 0
	for _, m := range attemptLine.FindAllStringSubmatch(string(log), -1) {
		assert.Equal(t, strconv.Itoa(pid), m[1]+m[2], "a line of another attempt in the step's log: %q", m[0])
		ticks++
	}
	assert.Positive(t, ticks)
	assert.Equal(t, 1, strings.Count(string(log), "\nattempt of "), "one attempt's log")
	assert.Equal(t, 1, strings.Count(string(log), "porch: step \"second\" of run"), "one attempt's header")
	assert.NotContains(t, string(log), "porch: the step was stopped", "the abandoned attempt's last words are not in the new one's log")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(out), ".porch-staging.*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no staging is left")
}

// attemptLine is a line the second step's command prints: "attempt of
// PID" or "PID tick N".
var attemptLine = regexp.MustCompile(`(?m)^(?:attempt of (\d+)|(\d+) tick \d+)$`)

// TestAResetRunOrStepFinishes resets with the official Temporal CLI
// (`temporal workflow reset --type FirstWorkflowTask`):
//   - a running step that writes its output: the abandoned attempt stops,
//     the step's new execution runs the command again, and the run
//     succeeds with one attempt's output and log, the reset not read as a
//     step ended from outside;
//   - that run, finished: it runs its steps again and succeeds;
//   - a running run: the step its earlier execution left running is
//     ended, the new execution runs it again, and succeeds with one
//     attempt's output and log;
//   - a running sweep step: the trial its earlier execution left running
//     is ended and runs again.
func TestAResetRunOrStepFinishes(t *testing.T) {
	cli := temporalCLI(t)
	h := newHarness(t)
	t.Run("running step", func(t *testing.T) {
		c := newResetCase(t, h)
		run := h.start(compile(t, c.pipelineFile, nil))
		abandoned := c.started(t, 1)
		reset(t, cli, run.GetID()+"/second")
		again := c.started(t, 2)
		assertPIDGoneWithin(t, abandoned, 15*time.Second)
		require.NoError(t, os.WriteFile(c.gate, nil, 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, run.Get(ctx, nil), "the run of a reset step succeeds")
		c.consistent(t, run.GetID(), again)

		// The finished run, reset: it runs both steps again and succeeds.
		reset(t, cli, run.GetID())
		require.NoError(t, temporalClient.GetWorkflow(ctx, run.GetID(), "").Get(ctx, nil), "the reset run succeeds")
		b, err := os.ReadFile(c.log)
		require.NoError(t, err)
		assert.Equal(t, "first\nsecond\nsecond\nfirst\nsecond\n", string(b))
		c.consistent(t, run.GetID(), c.started(t, 3))
		for path, s := range steps(t, run.GetID()) {
			assert.Equal(t, workflows.StatusSucceeded, s.Status, path)
		}
	})
	t.Run("running run", func(t *testing.T) {
		c := newResetCase(t, h)
		run := h.start(compile(t, c.pipelineFile, nil))
		abandoned := c.started(t, 1)
		reset(t, cli, run.GetID())
		again := c.started(t, 2)
		assertPIDGoneWithin(t, abandoned, 15*time.Second)
		require.NoError(t, os.WriteFile(c.gate, nil, 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, temporalClient.GetWorkflow(ctx, run.GetID(), "").Get(ctx, nil), "the reset run succeeds")
		c.consistent(t, run.GetID(), again)
		for path, s := range steps(t, run.GetID()) {
			assert.Equal(t, workflows.StatusSucceeded, s.Status, path)
		}
		if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
			// Replay fixtures of a run reset while its step ran, whose
			// new execution ended the step and ran it again
			// (PORCH_RECORD_HISTORIES=1).
			recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-reset-running-run", run.GetID())
		}
	})
	t.Run("running sweep step", func(t *testing.T) {
		needPython(t)
		dir := t.TempDir()
		pids, gate := filepath.Join(dir, "pids"), filepath.Join(dir, "gate")
		path := filepath.Join(dir, "pipeline.yml")
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
jobs:
  tune:
    type: sweep
    trial:
      type: command
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest
      inputs:
        x:
          type: integer
      command: >-
        echo $$ >> %[1]s; while [ ! -e %[2]s ]; do sleep 0.1; done;
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
`, pids, gate)), 0o644))
		c := &resetCase{pids: pids}
		run := h.start(compile(t, path, nil))
		abandoned := c.started(t, 1)
		// The sweep's new execution ends the trial its earlier one left
		// running, and starts it again.
		reset(t, cli, run.GetID()+"/tune")
		c.started(t, 2)
		assertPIDGoneWithin(t, abandoned, 15*time.Second)
		require.NoError(t, os.WriteFile(gate, nil, 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, run.Get(ctx, nil), "the run of a reset sweep step succeeds")
		assert.Equal(t, workflows.StatusSucceeded, steps(t, run.GetID())["tune"].Status)
		if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
			// Replay fixtures of a sweep step reset while its trial ran
			// (PORCH_RECORD_HISTORIES=1).
			recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v2-reset-running-sweep", run.GetID())
		}
	})
}
