package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/workflows"
)

// groupedFiles are 120 files whose 21st (index 20) is special: the first
// mini-batches run one to an activity while the step learns how long
// run() takes, the next ones in groups, and index 20 falls in one.
func groupedFiles(special string) []string {
	return append(append(names("a", 20), special), names("g", 99)...)
}

// batchActivities reads which mini-batches the step's activities ran, in
// the order they were scheduled: a RunMiniBatch as one index (with its
// prior attempts), a RunMiniBatches as its group.
type batchActivity struct {
	group   bool
	indexes []int
	prior   int32
}

func batchActivities(t *testing.T, stepWorkflow string) []batchActivity {
	t.Helper()
	it := temporalClient.GetWorkflowHistory(context.Background(), stepWorkflow, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	var out []batchActivity
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		a := e.GetActivityTaskScheduledEventAttributes()
		switch {
		case a == nil:
		case a.GetActivityType().GetName() == parallel.RunMiniBatchName:
			var in parallel.MiniBatchInput
			require.NoError(t, dc.FromPayloads(a.GetInput(), &in))
			out = append(out, batchActivity{indexes: []int{in.Index}, prior: in.PriorAttempts})
		case a.GetActivityType().GetName() == parallel.RunMiniBatchesName:
			var in parallel.MiniBatchesInput
			require.NoError(t, dc.FromPayloads(a.GetInput(), &in))
			out = append(out, batchActivity{group: true, indexes: in.Indexes})
		}
	}
	return out
}

// inGroup says whether mini-batch i ran in a group.
func inGroup(acts []batchActivity, i int) bool {
	for _, a := range acts {
		if a.group && slices.Contains(a.indexes, i) {
			return true
		}
	}
	return false
}

// TestShortMiniBatchesRunSeveralToAnActivity runs 120 mini-batches of a
// run() that takes no time: after the first window, they run in groups, so
// the step schedules far fewer activities than mini-batches; every result
// is appended once in order; the mini-batch whose first attempt fails in
// a group runs again on its own as its attempt 2 (RunMiniBatch with one
// prior attempt), within max_retries.
func TestShortMiniBatchesRunSeveralToAnActivity(t *testing.T) {
	h := newHarness(t)
	files := groupedFiles("flaky1.txt")
	path, _ := parallelCase{files: files, settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 1
      timeout: 30`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	acts := batchActivities(t, runID+"/score")
	require.True(t, inGroup(acts, 20), "mini-batch 20 ran in a group: %v", acts)
	assert.Less(t, len(acts), len(files)/2, "%d mini-batches in far fewer activities: %v", len(files), acts)
	ran := map[int]int{}
	for _, a := range acts {
		for _, i := range a.indexes {
			ran[i]++
		}
	}
	for i := range files {
		want := 1
		if i == 20 {
			want = 2
		}
		assert.Equal(t, want, ran[i], "mini-batch %d's activities", i)
	}
	last := acts[len(acts)-1]
	for _, a := range acts {
		if !a.group && a.indexes[0] == 20 {
			last = a
		}
	}
	assert.Equal(t, batchActivity{indexes: []int{20}, prior: 1}, last, "the failed mini-batch runs again on its own, as its second attempt")

	attempts := map[string][]string{}
	for _, r := range processed(t, h.stepLogs(runID)) {
		attempts[r[0]] = append(attempts[r[0]], r[1]+":"+r[2])
	}
	assert.Equal(t, []string{"1:failed", "2:succeeded"}, attempts["20"])
	assert.Equal(t, []string{"1:succeeded"}, attempts["21"])
	assert.Len(t, attempts, len(files))

	var want []string
	for i, f := range files {
		want = append(want, fmt.Sprintf("%s,%d", f, i))
	}
	out := h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/scores/parallel_run_step.txt", runID))
	assert.Equal(t, want, lines(t, out), "every result once, in mini-batch order")
	assertCleanHistory(t, runID+"/score")
	record(t, "v3-parallel-groups", runID)
}

// TestAMiniBatchFailingInAGroupCountsAgainstTheThresholds: with no
// retries, a mini-batch that fails in a group is a failed mini-batch: the
// step fails on mini_batch_error_threshold with its error.
func TestAMiniBatchFailingInAGroupCountsAgainstTheThresholds(t *testing.T) {
	h := newHarness(t)
	path, _ := parallelCase{files: groupedFiles("fail1.txt"), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0
    retry_settings:
      max_retries: 0`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.Error(t, err)
	require.True(t, inGroup(batchActivities(t, runID+"/score"), 20), "mini-batch 20 ran in a group")
	msg := workflows.ErrorMessage(err)
	assert.Contains(t, msg, "mini_batch_error_threshold crossed: 1 mini-batch failed, more than the 0 allowed")
	assert.Contains(t, msg, "mini-batch 20 (attempt 1")
	assert.Contains(t, msg, "cannot score fail1.txt")
	result, rerr := os.ReadFile(filepath.Join(h.stepLogs(runID), "job_result.txt"))
	require.NoError(t, rerr)
	assert.Contains(t, string(result), "mini_batch_error_threshold crossed")
	var rows []string
	for _, r := range processed(t, h.stepLogs(runID)) {
		if r[0] == "20" {
			rows = append(rows, r[1]+":"+r[2])
		}
	}
	assert.Equal(t, []string{"1:failed"}, rows, "one attempt, no retry")
}
