package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
)

// commandFailure finds the CommandFailed error in a run's error chain.
func commandFailure(t *testing.T, err error) (*temporal.ApplicationError, command.CommandFailure) {
	t.Helper()
	var cf command.CommandFailure
	for e := err; e != nil; e = errors.Unwrap(e) {
		var app *temporal.ApplicationError
		if errors.As(e, &app) && app.Type() == command.CommandFailedType {
			require.NoError(t, app.Details(&cf))
			return app, cf
		}
	}
	t.Fatalf("no %s error in %v", command.CommandFailedType, err)
	return nil, cf
}

// TestStepLogsReachTheObjectStore runs steps on a worker process with a
// porch home of its own, on a pipeline whose default datastore is s3: the
// logs of the step that succeeds and of the one that fails are in the
// bucket, and the failure still carries its stderr tail.
func TestStepLogsReachTheObjectStore(t *testing.T) {
	_, _, _, bucket := s3test.Start(t)
	home := t.TempDir()
	w := startWorker(t, home) // and the default compute: the steps run on compute "far"
	t.Cleanup(w.Stop)
	store := registerS3(t, bucket)
	startWorkerProcess(t, t.TempDir(), "far", "node-far")

	f := writePipeline(t, fmt.Sprintf(`type: pipeline
name: logs
settings:
  default_datastore: azureml:%s
  continue_on_step_failure: true
jobs:
  ok:
    compute: azureml:far
    command: echo all is well && echo a warning >&2
  broken:
    compute: azureml:far
    command: echo about to fail && echo boom >&2 && exit 3
`, store.Name))
	h := &harness{t: t, home: home}
	runID, err := h.run(compile(t, f, nil))
	require.Error(t, err)
	app, cf := commandFailure(t, err)
	assert.Equal(t, []string{"boom"}, cf.StderrTail, "the tail travels in the error")
	assert.Contains(t, app.Message(), "exited with code 3")

	s, err := objectstore.Open(*store)
	require.NoError(t, err)
	read := func(p string) string {
		t.Helper()
		r, err := s.ReadFrom(context.Background(), p, 0)
		require.NoError(t, err, p)
		defer r.Close()
		data, err := io.ReadAll(r)
		require.NoError(t, err)
		return string(data)
	}
	okLog := read("azureml/" + runID + "/ok/artifacts/user_logs/std_log.txt")
	assert.Contains(t, okLog, "all is well\n")
	assert.Contains(t, okLog, "a warning\n")
	assert.Contains(t, okLog, `on host`, "the header porch writes is there too")
	brokenLog := read("azureml/" + runID + "/broken/artifacts/user_logs/std_log.txt")
	assert.Contains(t, brokenLog, "about to fail\nboom\n")
	assert.Contains(t, brokenLog, "porch: command exited with code 3")
	for _, step := range []string{"ok", "broken"} {
		for _, dir := range []string{"logs", "user_logs"} {
			committed, err := s.Committed(context.Background(), "azureml/"+runID+"/"+step+"/artifacts/"+dir)
			require.NoError(t, err)
			assert.True(t, committed, "%s/%s is committed", step, dir)
		}
	}
	assert.NoFileExists(t, filepath.Join(home, "datastores", store.Name, "azureml", runID, "ok", "artifacts", "user_logs", "std_log.txt"),
		"the workflow worker's home never held the logs")
}

// TestAFailedLogUploadKeepsTheStepsOutcome: when the logs cannot be copied
// (the datastore's bucket does not exist), a step that succeeds still
// succeeds and a step that fails still fails with its own error.
func TestAFailedLogUploadKeepsTheStepsOutcome(t *testing.T) {
	h := newHarness(t)
	store := registerS3(t, "no-such-bucket")
	ok := writePipeline(t, fmt.Sprintf(`type: pipeline
name: nobucket
settings:
  default_datastore: azureml:%s
jobs:
  ok:
    command: echo fine
`, store.Name))
	_, err := h.run(compile(t, ok, nil))
	require.NoError(t, err, "the step succeeds although its logs could not be copied")

	broken := writePipeline(t, fmt.Sprintf(`type: pipeline
name: nobucket
settings:
  default_datastore: azureml:%s
jobs:
  broken:
    command: echo boom >&2 && exit 5
`, store.Name))
	_, err = h.run(compile(t, broken, nil))
	require.Error(t, err)
	_, cf := commandFailure(t, err)
	assert.Equal(t, 5, cf.ExitCode, "the step's own failure, not the upload's")
	assert.Equal(t, []string{"boom"}, cf.StderrTail)
}
