package stepio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestFileErrorSaysWhetherARetryCanHelp(t *testing.T) {
	var app *temporal.ApplicationError
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES, syscall.EPERM} {
		err := FileError("output \"out\": create /d/out", fmt.Errorf("mkdir /d/out: %w", errno))
		require.ErrorAs(t, err, &app, "%v", errno)
		assert.True(t, app.NonRetryable(), "%v cannot succeed on a retry", errno)
		assert.Contains(t, err.Error(), `output "out": create /d/out`)
	}
	err := FileError("write /d/out", fmt.Errorf("write: %w", syscall.ENOSPC))
	assert.False(t, errors.As(err, &app), "a full disk may be freed: retryable")
	assert.Contains(t, err.Error(), "free space on that disk")
}

// TestAnOutputOnAReadOnlyDatastoreFailsForGood binds an output on a
// datastore mounted read-only: the step fails at once, naming the output
// and the folder, and is not retried.
func TestAnOutputOnAReadOnlyDatastoreFailsForGood(t *testing.T) {
	home := t.TempDir()
	ds := filepath.Join(home, "datastores", "frozen")
	require.NoError(t, os.MkdirAll(ds, 0o755))
	if err := syscall.Mount("tmpfs", ds, "tmpfs", syscall.MS_RDONLY, "size=64k"); err != nil {
		t.Skipf("cannot mount a read-only folder here (%v): needs CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(ds, 0) })
	h := &Host{Home: home}
	f := Folders{Work: filepath.Join(home, "work"), Artifacts: filepath.Join(home, "artifacts"), Attempt: "1"}
	in := Step{RunID: "r1", StepPath: "train", Outputs: []plan.Output{{Name: "model", Type: "uri_folder",
		Path: "azureml://datastores/frozen/paths/models/v1"}}}
	_, err := h.Bind(context.Background(), in, f)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.True(t, app.NonRetryable())
	assert.Equal(t, InvalidStepType, app.Type())
	assert.Contains(t, err.Error(), `step "train": output "model"`)
	assert.Contains(t, err.Error(), filepath.Join(ds, "models"))
	assert.Contains(t, err.Error(), "read-only file system")
}
