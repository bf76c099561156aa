package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
)

// labelsPipeline has one step of each kind that labels its work: a
// command, a parallel step over 3 files in mini-batches of 2, and a grid
// sweep of 2 trials.
const labelsPipeline = `type: pipeline
name: labels
display_name: Labels demo
jobs:
  prep:
    command: echo ready
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
    mini_batch_size: "2"
    max_concurrency_per_instance: 2
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %[1]s
      append_row_to: ${{outputs.scores}}
  tune:
    type: sweep
    trial:
      type: command
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu:1
      code: ./src
      inputs:
        quality:
          type: string
      outputs:
        model:
          type: uri_folder
      command: >-
        python3 trial.py --quality ${{inputs.quality}} --steps 1 --sleep 0
        --state %[1]s --model ${{outputs.model}}
    search_space:
      quality:
        type: choice
        values: [good, bad]
    objective:
      primary_metric: score
      goal: maximize
    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 2
`

// TestUserMetadataNamesTheRunStepsTrialsAndMiniBatches reads what
// Temporal's UI shows (a workflow's summary and details, an activity's
// summary in history, a workflow's current details) for a run with a
// command, a parallel and a sweep step.
func TestUserMetadataNamesTheRunStepsTrialsAndMiniBatches(t *testing.T) {
	needPython(t)
	h := newHarness(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{"data", "src", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for i, name := range []string{"a.txt", "b.txt", "c.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "data", name), []byte(fmt.Sprint(i)), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(scoreScript), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "trial.py"), []byte(trialScript), 0o644))
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(labelsPipeline, state)), 0o644))
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	summary, details := userMetadata(t, runID)
	assert.Equal(t, "pipeline Labels demo: 3 steps", summary)
	assert.Contains(t, details, "`"+runID+"` of `"+path+"`")
	assert.Contains(t, details, "- `prep` · command on default")
	assert.Contains(t, details, "- `score` · parallel on default")
	assert.Contains(t, details, "- `tune` · sweep on default")
	assert.Contains(t, details, "porch job logs "+runID+" STEP")
	assert.Equal(t, "3/3 steps succeeded", currentDetails(t, runID))
	// Independent steps start in the order their reuse decisions end.
	assert.ElementsMatch(t, []string{"prep · command on default", "score · parallel on default", "tune · sweep on default"},
		summaries(t, runID, enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, ""),
		"the run's Timeline labels its steps")

	summary, details = userMetadata(t, runID+"/prep")
	assert.Equal(t, "prep · command on default", summary)
	assert.Contains(t, details, "```sh\necho ready\n```")
	assert.Contains(t, details, "azureml/"+runID+"/prep/artifacts/")
	// A short command runs in a local activity, labelled as its activity would be.
	assert.Equal(t, []string{"run prep: echo ready"}, summaries(t, runID+"/prep", enums.EVENT_TYPE_MARKER_RECORDED, ""))
	assert.Equal(t, "succeeded", currentDetails(t, runID+"/prep"))

	summary, details = userMetadata(t, runID+"/score")
	assert.Equal(t, "score · parallel on default", summary)
	assert.Contains(t, details, "entry script `score.py` over input `data`; mini-batches: 2")
	assert.ElementsMatch(t, []string{"mini-batch 0 of 2 (2 files)", "mini-batch 1 of 2 (1 file)"},
		summaries(t, runID+"/score", enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "RunMiniBatch"))
	assert.Equal(t, []string{"plan mini-batches"}, summaries(t, runID+"/score", enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "PlanMiniBatches"))
	assert.Equal(t, []string{"finish"}, summaries(t, runID+"/score", enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "FinishParallel"))
	assert.Equal(t, "2 mini-batches: 2 succeeded, 0 failed", currentDetails(t, runID+"/score"))

	summary, _ = userMetadata(t, runID+"/tune")
	assert.Equal(t, "tune · sweep on default", summary)
	p := sweepTrials(t, runID)
	require.Len(t, p.Trials, 2)
	var trials []string
	for _, tr := range p.Trials {
		trials = append(trials, fmt.Sprintf("trial %d: quality=%s", tr.Trial, tr.Params[0].Text))
		summary, details = userMetadata(t, tr.WorkflowID)
		assert.Equal(t, trials[len(trials)-1], summary)
		assert.Contains(t, details, fmt.Sprintf("- `quality` (string): `%s`", tr.Params[0].Text), "the trial's details bind its parameter")
	}
	assert.Equal(t, trials, summaries(t, runID+"/tune", enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, ""),
		"the sweep's Timeline labels its trials")
	assert.Contains(t, summaries(t, runID+"/tune", enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "ReadTrialMetrics"), "metrics poll: trial 0")
	best, _ := p.Best()
	assert.Contains(t, currentDetails(t, runID+"/tune"), fmt.Sprintf("2/2 trials: 2 completed; best trial %d: score", best))
}

// userMetadata is a workflow's static summary and details, as `temporal
// workflow describe` shows them.
func userMetadata(t *testing.T, workflowID string) (string, string) {
	t.Helper()
	d, err := temporalClient.DescribeWorkflowExecution(context.Background(), workflowID, "")
	require.NoError(t, err)
	md := d.GetExecutionConfig().GetUserMetadata()
	return decodeString(t, md.GetSummary()), decodeString(t, md.GetDetails())
}

// summaries are the labels of a workflow's events of one type in history
// order; for activities, only those of the activity type named.
func summaries(t *testing.T, workflowID string, typ enums.EventType, activity string) []string {
	t.Helper()
	var out []string
	it := temporalClient.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetEventType() != typ {
			continue
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() != activity {
			continue
		}
		out = append(out, decodeString(t, ev.GetUserMetadata().GetSummary()))
	}
	return out
}

// workflowMetadataQuery is the query every Temporal workflow answers with
// its sdk.v1.WorkflowMetadata (the SDK does not export its name).
const workflowMetadataQuery = "__temporal_workflow_metadata"

// currentDetails is what the workflow last set with SetCurrentDetails,
// read through the metadata query the UI uses.
func currentDetails(t *testing.T, workflowID string) string {
	t.Helper()
	v, err := temporalClient.QueryWorkflow(context.Background(), workflowID, "", workflowMetadataQuery)
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}

func decodeString(t *testing.T, p *commonpb.Payload) string {
	t.Helper()
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &s))
	return s
}
