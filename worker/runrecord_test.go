package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/runrecord"
	"github.com/porch-pipelines/porch/workflows"
)

// readRunRecord decodes the record of a run's pipeline prefix from a
// datastore's root.
func readRunRecord(t *testing.T, fsys fs.FS, runID, prefix string) workflows.RunRecord {
	t.Helper()
	rel := "azureml/" + runID + "/"
	if prefix != "" {
		rel += prefix + "/"
	}
	data, err := fs.ReadFile(fsys, rel+runrecord.FileName)
	require.NoError(t, err, "the record of %s %q", runID, prefix)
	var rec workflows.RunRecord
	require.NoError(t, json.Unmarshal(data, &rec))
	return rec
}

// recordedStatuses are a record's steps' statuses by path.
func recordedStatuses(rec workflows.RunRecord) map[string]workflows.StepStatus {
	out := map[string]workflows.StepStatus{}
	for _, s := range rec.Steps {
		out[s.Path] = s.Status
	}
	return out
}

// TestRunsLeaveRecords: a run that succeeds and one that fails each leave
// a record in their datastore folder as they end, and so does each nested
// pipeline: statuses, durations, reasons, errors and outputs, as the
// steps query answered at the end.
func TestRunsLeaveRecords(t *testing.T) {
	h := newHarness(t)
	ds := os.DirFS(filepath.Join(h.home, "datastores", "workspaceblobstore"))

	nested, err := h.run(compile(t, filepath.Join("..", "samples", "nested", "pipeline.yml"), nil))
	require.NoError(t, err)
	rec := readRunRecord(t, ds, nested, "")
	assert.Equal(t, workflows.RunRecordVersion, rec.Version)
	assert.Equal(t, nested, rec.Run)
	assert.Equal(t, workflows.RecordCompleted, rec.Status)
	assert.Equal(t, map[string]workflows.StepStatus{"english": workflows.StatusSucceeded, "french": workflows.StatusSucceeded,
		"compare": workflows.StatusSucceeded}, recordedStatuses(rec))
	assert.False(t, rec.Ended.Before(rec.Started))
	require.Len(t, rec.Outputs, 1)
	assert.Equal(t, "comparison", rec.Outputs[0].Name)
	for _, s := range rec.Steps {
		assert.False(t, s.Started.IsZero() || s.Ended.Before(s.Started), "step %s has a duration", s.Path)
	}
	inner := readRunRecord(t, ds, nested, "english")
	assert.Equal(t, "english", inner.Prefix)
	assert.Equal(t, map[string]workflows.StepStatus{"english/split": workflows.StatusSucceeded,
		"english/count": workflows.StatusSucceeded}, recordedStatuses(inner))
	for _, s := range inner.Steps {
		require.NotNil(t, s.Reuse, "step %s has its reuse decision", s.Path)
		assert.NotEmpty(t, s.Reuse.Reason, "step %s says why it ran", s.Path)
	}
	record(t, "v2-run-record-nested", nested)

	f := writePipeline(t, `type: pipeline
name: records
jobs:
  ok:
    command: echo fine
  broken:
    command: echo about to fail && echo boom >&2 && exit 3
    outputs:
      out:
        type: uri_folder
  after:
    command: echo never
    inputs:
      x: ${{parent.jobs.broken.outputs.out}}
  `)
	failed, err := h.run(compile(t, f, nil))
	require.Error(t, err)
	rec = readRunRecord(t, ds, failed, "")
	assert.Equal(t, workflows.RecordFailed, rec.Status)
	assert.Equal(t, "broken", rec.FailedStep)
	assert.Contains(t, rec.Error, "exited with code 3")
	st := recordedStatuses(rec)
	assert.Equal(t, workflows.StatusFailed, st["broken"])
	assert.Equal(t, workflows.StatusSkipped, st["after"])
	for _, s := range rec.Steps {
		if s.Path == "broken" {
			assert.Contains(t, s.Error, "boom", "the step's error keeps its stderr tail")
		}
	}
	record(t, "v2-run-record-failed", failed)
}

// TestACanceledRunLeavesARecord: a run canceled while its step runs
// records itself canceled, the step with it.
func TestACanceledRunLeavesARecord(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	f := writePipeline(t, fmt.Sprintf(`type: pipeline
name: canceled
jobs:
  nap:
    command: touch %s; sleep 300
`, started))
	run := h.start(compile(t, f, nil))
	// Waits for the step's command to run, to cancel the run mid-step.
	require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, time.Minute, 20*time.Millisecond)
	require.NoError(t, temporalClient.CancelWorkflow(context.Background(), run.GetID(), ""))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.Error(t, run.Get(ctx, nil))
	rec := readRunRecord(t, os.DirFS(filepath.Join(h.home, "datastores", "workspaceblobstore")), run.GetID(), "")
	assert.Equal(t, workflows.RecordCanceled, rec.Status)
	assert.Equal(t, workflows.StatusCanceled, recordedStatuses(rec)["nap"])
}

// TestARunOnAnObjectStoreLeavesItsRecordThere: the record of a run whose
// default datastore is s3 is an object of the bucket, written by the
// worker through the same storage as the steps' outputs.
func TestARunOnAnObjectStoreLeavesItsRecordThere(t *testing.T) {
	_, _, _, bucket := s3test.Start(t)
	h := newHarness(t)
	store := registerS3(t, bucket)
	f := writePipeline(t, fmt.Sprintf(`type: pipeline
name: s3record
settings:
  default_datastore: azureml:%s
jobs:
  hello:
    command: echo hi
`, store.Name))
	runID, err := h.run(compile(t, f, nil))
	require.NoError(t, err)
	s, err := objectstore.Open(*store)
	require.NoError(t, err)
	rec := readRunRecord(t, s.FS(context.Background()), runID, "")
	assert.Equal(t, workflows.RecordCompleted, rec.Status)
	assert.Equal(t, store.Name, rec.DefaultDatastore)
	assert.Equal(t, workflows.StatusSucceeded, recordedStatuses(rec)["hello"])
	assert.NoFileExists(t, filepath.Join(h.home, "datastores", store.Name, "azureml", runID, runrecord.FileName))
}
