package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/worker"
)

// TestAOneSlotWorkerRunsOneStepAtATime runs two independent steps on a
// compute served by one worker with one slot, as a fleet node of porch dev
// is: the first to start ends before the other starts, and the worker's
// status file says idle at the end.
func TestAOneSlotWorkerRunsOneStepAtATime(t *testing.T) {
	const compute = "oneslot"
	h := newHarness(t) // workflows and the default queue
	status := filepath.Join(t.TempDir(), "node.json")
	w, err := worker.Start(temporalClient, worker.Options{Home: h.home, Computes: []string{compute}, Node: "oneslot-1",
		Slots: 1, StatusFile: status})
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	logFile := filepath.Join(t.TempDir(), "steps.log")
	step := func(name string) string {
		return fmt.Sprintf("  %s:\n    compute: azureml:%s\n    command: echo start %s >> %s && sleep 1 && echo end %s >> %s\n",
			name, compute, name, logFile, name, logFile)
	}
	p := compile(t, writePipeline(t, "type: pipeline\njobs:\n"+step("a")+step("b")), nil)
	_, err = h.run(p)
	require.NoError(t, err)

	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 4, "%s", data)
	first, second := strings.TrimPrefix(lines[0], "start "), "b"
	if first == "b" {
		second = "a"
	}
	assert.Equal(t, []string{"start " + first, "end " + first, "start " + second, "end " + second}, lines,
		"one slot: the first step to start ends before the other starts")

	st, err := worker.ReadNodeStatus(status)
	require.NoError(t, err)
	assert.Equal(t, "oneslot-1", st.Node)
	assert.Equal(t, 0, st.Running, "both steps have ended")
	assert.False(t, st.IdleSince.IsZero())
}
