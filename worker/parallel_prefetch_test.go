package worker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/activities/parallel"
)

// TestParallelKeepsAMiniBatchWaitingForEachProcess runs a step of two
// entry-script processes and reads its history: its first window schedules
// four mini-batches, one running and one waiting for each process, so a
// process that finishes one does not idle for the round trip through the
// server. Every mini-batch ran once.
func TestParallelKeepsAMiniBatchWaitingForEachProcess(t *testing.T) {
	h := newHarness(t)
	path, _ := parallelCase{files: names("tick", 8), settings: `    mini_batch_size: "1"
    max_concurrency_per_instance: 2`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	it := temporalClient.GetWorkflowHistory(context.Background(), runID+"/score", "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var first []int64 // the workflow task that scheduled each mini-batch
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == parallel.RunMiniBatchName {
			first = append(first, a.GetWorkflowTaskCompletedEventId())
		}
	}
	require.Len(t, first, 8, "each mini-batch was scheduled once")
	inFirst := 0
	for _, id := range first {
		if id == first[0] {
			inFirst++
		}
	}
	require.Equal(t, 4, inFirst, "the first window holds two mini-batches per process")
	assertCleanHistory(t, runID+"/score")
	record(t, "v2-parallel-prefetch", runID)
}
