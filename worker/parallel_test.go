package worker_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/workflows"
)

// scoreScript is an entry script whose behaviour each input file's name
// picks: fail* raises, short* is left out of the results, flaky* fails its
// first attempt, slow* sleeps past any test's timeout, tick* takes 0.2 s;
// any file the state folder holds a poison-<name> file for raises.
const scoreScript = `import argparse, os, time

args = None

def init():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--state", required=True)
    args, _ = p.parse_known_args()
    with open(os.path.join(args.state, "init.log"), "a") as f:
        f.write("%d\n" % os.getpid())

def run(mini_batch):
    out = []
    for path in mini_batch:
        name = os.path.basename(path)
        if os.path.exists(os.path.join(args.state, "poison-" + name)):
            raise ValueError("poisoned " + name)
        if name.startswith("fail"):
            raise ValueError("cannot score " + name)
        if name.startswith("flaky"):
            marker = os.path.join(args.state, name + ".seen")
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("first attempt of " + name)
        if name.startswith("slow"):
            with open(os.path.join(args.state, "slow.pid"), "w") as f:
                f.write("%d" % os.getpid())
            time.sleep(600)
        if name.startswith("short"):
            continue
        if name.startswith("tick"):
            time.sleep(0.2)
        with open(path) as f:
            out.append("%s,%s" % (name, f.read().strip()))
    return out
`

// parallelCase is a pipeline with one parallel step over a folder of files.
type parallelCase struct {
	files    []string
	settings string // extra YAML under the step, indented by 4
	args     string // extra program_arguments
}

// write lays the case out in a fresh folder and returns the pipeline file
// and the script's state folder.
func (c parallelCase) write(t *testing.T) (string, string) {
	t.Helper()
	needPython(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{"data", "src", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for i, name := range c.files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", name), []byte(fmt.Sprint(i)), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(scoreScript), 0o644))
	yml := fmt.Sprintf(`type: pipeline
jobs:
  score:
    type: parallel
    inputs:
      data:
        type: uri_folder
        path: ./data
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
%s
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %s %s
      append_row_to: ${{outputs.scores}}
`, c.settings, state, c.args)
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))
	return path, state
}

// needPython skips a test of entry scripts on a machine without Python
// (CI installs it: .ci/run).
func needPython(t *testing.T) {
	t.Helper()
	if os.Getenv("PORCH_PYTHON") != "" {
		return
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("parallel steps run Python entry scripts: install python3 or set PORCH_PYTHON")
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d.txt", prefix, i)
	}
	return out
}

// stepLogs is the parallel step's log folder.
func (h *harness) stepLogs(runID string) string {
	return filepath.Join(h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/artifacts/", runID)), "logs")
}

// processed reads processed_mini-batches.csv.
func processed(t *testing.T, logs string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(logs, "sys", "job_report", "processed_mini-batches.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows[1:]
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out
}

func TestParallelFileListAppendsEveryResultOnceInOrder(t *testing.T) {
	h := newHarness(t)
	files := names("f", 20)
	path, state := parallelCase{files: files, settings: `    mini_batch_size: "3"
    max_concurrency_per_instance: 2`, args: "--copy_logs_to_parent True"}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", runID))
	assert.Equal(t, want, lines(t, out), "every result once, in mini-batch order")

	logs := h.stepLogs(runID)
	rows := processed(t, logs)
	require.Len(t, rows, 7, "7 mini-batches of at most 3 files, one attempt each")
	processes := map[string]bool{}
	for _, r := range rows {
		assert.Equal(t, "succeeded", r[2])
		processes[r[3]+"/"+r[4]] = true
	}
	pids := lines(t, filepath.Join(state, "init.log"))
	assert.LessOrEqual(t, len(processes), 2, "at most max_concurrency_per_instance processes")
	assert.Len(t, pids, len(processes), "init() runs once per process, not per mini-batch")
	copied := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/artifacts/logs/score/job_result.txt", runID))
	assert.FileExists(t, copied, "--copy_logs_to_parent True copies the step's result to the run's logs")
	result, err := os.ReadFile(filepath.Join(logs, "job_result.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(result), "succeeded: 7 of 7 mini-batches processed")
	node := rows[0][3]
	assert.FileExists(t, filepath.Join(logs, "user", "entry_script_log", node, rows[0][4]+".log.txt"))
	assert.FileExists(t, filepath.Join(logs, "readme.txt"))
}

func TestParallelRetriesAFlakyMiniBatch(t *testing.T) {
	h := newHarness(t)
	files := append(names("f", 3), "flaky1.txt", "flaky2.txt")
	path, _ := parallelCase{files: files, settings: `    mini_batch_size: "1"
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 2
      timeout: 30`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	attempts := map[string][]string{}
	for _, r := range processed(t, h.stepLogs(runID)) {
		attempts[r[0]] = append(attempts[r[0]], r[1]+":"+r[2])
	}
	// The folder's files sort as f000, f001, f002, flaky1, flaky2.
	assert.Equal(t, []string{"1:failed", "2:succeeded"}, attempts["3"])
	assert.Equal(t, []string{"1:failed", "2:succeeded"}, attempts["4"])
	assert.Equal(t, []string{"1:succeeded"}, attempts["0"])
}

func TestParallelThresholds(t *testing.T) {
	cases := map[string]struct {
		files    []string
		settings string
		args     string
		want     string
	}{
		"mini_batch_error_threshold": {
			files:    append(names("fail", 3), names("f", 5)...),
			settings: "    mini_batch_size: \"1\"\n    mini_batch_error_threshold: 1\n    retry_settings:\n      max_retries: 0",
			want:     "mini_batch_error_threshold crossed: 2 mini-batches failed, more than the 1 allowed",
		},
		"error_threshold": {
			files:    append(names("f", 2), names("short", 4)...),
			settings: "    mini_batch_size: \"2\"\n    error_threshold: 2\n    retry_settings:\n      max_retries: 0",
			want:     "error_threshold crossed: 4 items failed, more than the 2 allowed",
		},
		"allowed_failed_percent": {
			files:    append(names("fail", 2), names("g", 8)...),
			settings: "    mini_batch_size: \"1\"\n    retry_settings:\n      max_retries: 0",
			args:     "--allowed_failed_percent 10",
			want:     "allowed_failed_percent crossed: 2 of 10 mini-batches failed (20.0%), more than the 10% allowed",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			path, _ := parallelCase{files: c.files, settings: c.settings, args: c.args}.write(t)
			runID, err := h.run(compile(t, path, nil))
			require.Error(t, err)
			assert.Contains(t, workflows.ErrorMessage(err), c.want)
			result, rerr := os.ReadFile(filepath.Join(h.stepLogs(runID), "job_result.txt"))
			require.NoError(t, rerr)
			assert.Contains(t, string(result), c.want)
		})
	}
}

// TestAShortReturnUnderErrorThresholdMinusOneIsNoFailure: with
// error_threshold: -1 (Azure ML's "do not check failed items", on which
// the real 1a_oj_sales_prediction example relies), a run() that returns
// fewer results than items succeeds, its rows are kept, and the step's
// counts say how many items returned nothing.
func TestAShortReturnUnderErrorThresholdMinusOneIsNoFailure(t *testing.T) {
	h := newHarness(t)
	files := append(names("f", 2), names("short", 4)...)
	path, _ := parallelCase{files: files, settings: `    mini_batch_size: "2"
    error_threshold: -1
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", runID))
	assert.Equal(t, []string{"f000.txt,0", "f001.txt,1"}, lines(t, out))
	result, err := os.ReadFile(filepath.Join(h.stepLogs(runID), "job_result.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(result), "succeeded: 3 of 3 mini-batches processed (3 succeeded, 0 failed); 6 items, 0 failed, 4 returned nothing (error_threshold: -1)")
}

func TestParallelRunTimeoutStopsTheMiniBatch(t *testing.T) {
	h := newHarness(t)
	path, state := parallelCase{files: []string{"a.txt", "slow.txt"}, settings: `    mini_batch_size: "1"
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0
      timeout: 2`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.Error(t, err)
	assert.Contains(t, workflows.ErrorMessage(err), "retry_settings.timeout")
	errs, rerr := os.ReadFile(filepath.Join(h.stepLogs(runID), "job_error.txt"))
	require.NoError(t, rerr)
	assert.Contains(t, string(errs), "mini-batch 1 (attempt 1)")
	assertKilled(t, state)
}

func TestParallelHungScriptHitsTheProgressTimeout(t *testing.T) {
	h := newHarness(t)
	path, state := parallelCase{files: []string{"slow.txt"}, settings: `    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0
      timeout: 120`, args: "--progress_update_timeout 3"}.write(t)
	_, err := h.run(compile(t, path, nil))
	require.Error(t, err)
	assert.Contains(t, workflows.ErrorMessage(err), "progress_update_timeout")
	assertKilled(t, state)
}

// assertKilled checks the process that ran the slow mini-batch is gone.
func assertKilled(t *testing.T, state string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "slow.pid"))
	require.NoError(t, err)
	assertPIDGone(t, string(data))
}

// assertPIDGone checks the process whose pid is text has ended within 10 s.
func assertPIDGone(t *testing.T, text string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(text))
	require.NoError(t, err)
	assertPIDGoneWithin(t, pid, 10*time.Second)
}

// assertPIDGoneWithin checks process pid ends within limit. It waits for
// the kill to land (a step's end waits for it; a zombie may linger until
// reaped).
func assertPIDGoneWithin(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(stat), ") Z ")
	}, limit, 20*time.Millisecond, "process %d still runs", pid)
}

func TestParallelAppendRowToIsExactAfterAWorkerIsKilled(t *testing.T) {
	home := t.TempDir()
	w := startWorker(t, home) // workflows only; the step runs on compute "batch"
	t.Cleanup(w.Stop)
	h := &harness{t: t, home: home}
	victim := startWorkerProcess(t, home, "batch", "victim")
	startWorkerProcess(t, home, "batch", "survivor")

	files := names("tick", 60)
	path, _ := parallelCase{files: files, settings: `    compute: azureml:batch
    mini_batch_size: "2"
    resources:
      instance_count: 2
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0`, args: "--progress_update_timeout 3"}.write(t)
	run := h.start(compile(t, path, nil))
	logs := h.stepLogs(run.GetID())

	// Waits until the victim has finished a few mini-batches, so it is
	// surely in the middle of others when it dies.
	require.Eventually(t, func() bool {
		f, err := os.Open(filepath.Join(logs, "sys", "job_report", "processed_mini-batches.csv"))
		if err != nil {
			return false
		}
		defer f.Close()
		rows, _ := csv.NewReader(f).ReadAll()
		n := 0
		for _, r := range rows {
			if len(r) > 3 && r[3] == "victim" && r[2] == "succeeded" {
				n++
			}
		}
		return n >= 3
	}, time.Minute, 20*time.Millisecond)
	require.NoError(t, victim.Process.Kill())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", run.GetID()))
	assert.Equal(t, want, lines(t, out), "every input row once, in order, after the kill")
	survivor := 0
	for _, r := range processed(t, logs) {
		if r[3] == "survivor" && r[2] == "succeeded" {
			survivor++
		}
	}
	assert.Positive(t, survivor, "the second worker finished the step")
}

func TestParallelResumeRunsOnlyWhatDidNotSucceed(t *testing.T) {
	h := newHarness(t)
	files := names("f", 10)
	c := parallelCase{files: files, settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 1
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0`}
	path, state := c.write(t)
	// A command step before the parallel one, to see it is not run again.
	yml, err := os.ReadFile(path)
	require.NoError(t, err)
	prep := fmt.Sprintf("  prep:\n    command: echo ran >> %s/prep.log\n", state)
	yml = []byte(strings.Replace(string(yml), "jobs:\n", "jobs:\n"+prep, 1))
	require.NoError(t, os.WriteFile(path, yml, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(state, "poison-f005.txt"), nil, 0o644))

	runID, err := h.run(compile(t, path, nil))
	require.Error(t, err)
	assert.Contains(t, workflows.ErrorMessage(err), "mini_batch_error_threshold crossed")
	first := len(processed(t, h.stepLogs(runID)))

	require.NoError(t, os.Remove(filepath.Join(state, "poison-f005.txt")))
	run, reused, err := workflows.Resume(context.Background(), temporalClient, runID)
	require.NoError(t, err)
	assert.Equal(t, []string{"prep"}, reused)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	assert.Equal(t, []string{"ran"}, lines(t, filepath.Join(state, "prep.log")), "the succeeded command step is reused")
	rows := processed(t, h.stepLogs(runID))
	// The first run stopped at f005's failure; mini-batches already taken
	// by a process (one runs, one waits) may have succeeded beside it.
	// Exactly the others run again, once each.
	succeeded := map[string]bool{}
	for _, r := range rows[:first] {
		if r[2] == "succeeded" {
			succeeded[r[0]] = true
		}
	}
	require.False(t, succeeded["5"], "the poisoned mini-batch failed the first run")
	var rerun, again []string
	for i := range files {
		if !succeeded[strconv.Itoa(i)] {
			rerun = append(rerun, strconv.Itoa(i)+":succeeded")
		}
	}
	for _, r := range rows[first:] {
		again = append(again, r[0]+":"+r[2])
	}
	slices.Sort(again)
	assert.Equal(t, rerun, again, "only the mini-batches that did not succeed run again, once each")
	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", runID))
	assert.Equal(t, want, lines(t, out))

	summary, details := userMetadata(t, runID)
	assert.Equal(t, "pipeline "+compile(t, path, nil).Name+": 2 steps", summary, "the resumed run keeps its label")
	assert.Contains(t, details, "- `score` · parallel on default")
	assert.Contains(t, details, "**Resumed**, reusing 1 step: `prep`")
}

func TestParallelResourceMonitorSamplesTheNodeAndTheEntryScripts(t *testing.T) {
	h := newHarness(t)
	path, _ := parallelCase{files: names("tick", 30), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 2`, args: "--resource_monitor_interval 1"}.write(t)
	run := h.start(compile(t, path, nil))
	stepID := run.GetID() + "/score"

	// Waits for the monitor's first heartbeat with the entry-script
	// processes in it, read the way porch job show reads it.
	var usage parallel.NodeUsage
	require.Eventually(t, func() bool {
		desc, err := temporalClient.DescribeWorkflowExecution(context.Background(), stepID, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() != parallel.MonitorResourcesName || pa.GetHeartbeatDetails() == nil {
				continue
			}
			var u parallel.NodeUsage
			if converter.GetDefaultDataConverter().FromPayload(pa.GetHeartbeatDetails().GetPayloads()[0], &u) == nil && u.Sample.Processes > 0 {
				usage = u
				return true
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond)
	assert.Positive(t, usage.Sample.TreeRSSBytes)
	assert.Positive(t, usage.Sample.MemTotalBytes)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	rows := lines(t, filepath.Join(h.stepLogs(run.GetID()), "sys", "perf", usage.Node, "node_resource_usage.csv"))
	assert.GreaterOrEqual(t, len(rows), 3, "a header and a sample a second over the step's 3 s")
	desc, err := temporalClient.DescribeWorkflowExecution(context.Background(), stepID, "")
	require.NoError(t, err)
	for _, pa := range desc.GetPendingActivities() {
		assert.Equal(t, enums.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED, pa.GetState(), "the monitor ends with the step")
	}
}
