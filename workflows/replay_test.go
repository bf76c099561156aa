package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays every recorded history in testdata/histories against
// the current workflow code, so a change that breaks determinism fails CI.
// Files named bad-*.json are histories the code must refuse. Regenerate the
// fixtures with PORCH_RECORD_HISTORIES=1 go test ./worker -run TestRecordHistories.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no replay fixtures: record them (see the doc comment)")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			err := replay(t, r, f)
			if strings.HasPrefix(filepath.Base(f), "bad-") {
				require.Error(t, err, "a history the code no longer matches must fail to replay")
				return
			}
			require.NoError(t, err)
		})
	}
}

// replay replays a recorded history under its own workflow id, as a worker
// would: the replayer's default id ("ReplayId") is no run's, and a run
// started from Temporal takes its workflow id as its run id.
func replay(t *testing.T, r worker.WorkflowReplayer, file string) error {
	b, err := os.Open(file)
	require.NoError(t, err)
	defer b.Close()
	h, err := client.HistoryFromJSON(b, client.HistoryJSONOptions{})
	require.NoError(t, err)
	id := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	})
}

func TestReplayFixturesCoverEveryWorkflowType(t *testing.T) {
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join("testdata", "histories", "v*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, name := range []string{PipelineName, CommandStepName} {
			if strings.Contains(string(b), `"name": "`+name+`"`) {
				seen[name] = true
			}
		}
	}
	require.True(t, seen[PipelineName] && seen[CommandStepName], "fixtures cover %v", seen)
}
