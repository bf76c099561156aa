package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// TestASpotStepPreemptedThreeTimesFinishesOnADedicatedWorker runs a spot
// step on preemptible worker processes, each SIGTERMed (a reclaimed spot
// VM) while the step runs: the worker kills the step's processes and
// reports nothing, so the step fails over by heartbeat timeout. After the
// third preemption the step runs on the dedicated worker of its compute,
// as attempt 4, and its log says why.
//
// With PORCH_RECORD_HISTORIES=1 it also records the run's histories as the
// replay fixtures workflows/testdata/histories/v1-spot-*.json.
func TestASpotStepPreemptedThreeTimesFinishesOnADedicatedWorker(t *testing.T) {
	const compute = "spotc"
	home := t.TempDir()
	w := startWorker(t, home) // workflows; the step runs on compute's workers
	t.Cleanup(w.Stop)
	spot, dedicated := true, false
	dedicatedHome := t.TempDir()
	startRoutedWorkerProcess(t, dedicatedHome, compute, "dedicated", worker.Options{Preemptible: &dedicated})

	dir := t.TempDir()
	logFile := filepath.Join(dir, "steps.log")
	src := fmt.Sprintf(`type: pipeline
jobs:
  train:
    compute: azureml:%s
    queue_settings:
      job_tier: Spot
    command: >-
      echo "start $$ $(pwd)" >> %s &&
      case "$(pwd)" in %s/*) echo "end $(pwd)" >> %s ;; *) sleep 600 ;; esac
`, compute, logFile, dedicatedHome, logFile)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(src), 0o644))
	h := &harness{t: t, home: home}
	run := h.start(compile(t, filepath.Join(dir, "p.yml"), nil))

	for i := range 3 {
		spotHome := t.TempDir()
		proc := startRoutedWorkerProcess(t, spotHome, compute, fmt.Sprintf("spot-%d", i), worker.Options{Preemptible: &spot})
		var pid int
		// Waits for attempt i+1 to run on this preemptible worker.
		require.Eventually(t, func() bool {
			lines := readLines(logFile)
			if len(lines) <= i {
				return false
			}
			f := strings.Fields(lines[i])
			if len(f) != 3 || !strings.HasPrefix(f[2], spotHome) {
				return false
			}
			pid, _ = strconv.Atoi(f[1])
			return true
		}, time.Minute, 20*time.Millisecond, "attempt %d starts on preemptible worker %d", i+1, i)
		require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
		require.Eventually(t, func() bool { return processGone(pid) }, 30*time.Second, 20*time.Millisecond,
			"the preempted worker kills its step's processes")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the step finishes on the dedicated worker")
	lines := readLines(logFile)
	require.Len(t, lines, 5, "three preempted attempts, then the dedicated one\n%s", strings.Join(lines, "\n"))
	assert.Contains(t, lines[3], "start ", "%s", lines)
	assert.Contains(t, lines[3], dedicatedHome)
	assert.Contains(t, lines[4], "end "+dedicatedHome)
	st := steps(t, run.GetID())["train"]
	assert.Equal(t, int32(4), st.Attempt)
	assert.True(t, st.Spot)
	v, err := temporalClient.QueryWorkflow(ctx, st.WorkflowID, "", workflows.SpotQuery)
	require.NoError(t, err)
	var spotState workflows.SpotState
	require.NoError(t, v.Get(&spotState))
	assert.Equal(t, workflows.SpotState{Preemptions: 3, Dedicated: true}, spotState, "what porch run's progress shows")

	stepLog := findFile(t, dedicatedHome, "std_log.txt")
	assert.Contains(t, stepLog, "porch: preempted 3 times: moving to dedicated workers")
	assert.Contains(t, stepLog, "attempt 4")
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		recordRun(t, filepath.Join("..", "workflows", "testdata", "histories"), "v1-spot", run.GetID())
	}
}

func readLines(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// processGone says whether pid has exited (a zombie left to its new
// parent counts as exited).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// findFile returns the content of the one file called name under root.
func findFile(t *testing.T, root, name string) string {
	t.Helper()
	var found []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, p)
		}
		return err
	}))
	require.Len(t, found, 1, "%s under %s", name, root)
	b, err := os.ReadFile(found[0])
	require.NoError(t, err)
	return string(b)
}
