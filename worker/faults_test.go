package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	dir := t.TempDir()
	progress, mark := filepath.Join(dir, "progress.log"), filepath.Join(dir, "first-attempt")
	src := fmt.Sprintf(`type: pipeline
jobs:
  append:
    compute: azureml:appender
    outputs:
      out:
        type: uri_folder
    command: >-
      if mkdir %[2]s 2>/dev/null; then echo $$ > %[2]s/pid; fi;
      for i in $(seq 1 40); do echo "$$ $i" >> ${{outputs.out}}/rows.txt; echo "$$ $i" >> %[1]s; sleep 0.05; done
`, progress, mark)
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	h := &harness{t: t, home: home}
	run := h.start(compile(t, path, nil))

	// Waits for the first attempt to have appended a few lines, to kill
	// its worker in the middle of the step.
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(mark, "pid"))
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		data, _ := os.ReadFile(progress)
		return pid > 0 && strings.Count(string(data), "\n") >= 5
	}, time.Minute, 20*time.Millisecond, "the first attempt appends")
	victim := parentOf(t, pid)
	require.True(t, procs[victim], "the step's shell is a child of a worker process")
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	// The killed worker's step dies with it.
	assertPIDGoneWithin(t, pid, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil), "the step is retried on the other worker after the heartbeat timeout")
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/append/out/rows.txt", run.GetID()))
	rows := lines(t, out)
	require.Len(t, rows, 40, "one attempt's lines, no more")
	writer := strings.Fields(rows[0])[0]
	assert.NotEqual(t, strconv.Itoa(pid), writer, "the retry's lines, not the killed attempt's")
	for i, r := range rows {
		assert.Equal(t, fmt.Sprintf("%s %d", writer, i+1), r)
	}
}
