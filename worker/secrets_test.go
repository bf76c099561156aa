package worker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretScript is an entry script that prints the worker's secret and
// fails a mini-batch with it in the error.
const secretScript = `import os, sys
def init():
    pass
def run(mini_batch):
    key = os.environ["AWS_SECRET_ACCESS_KEY"]
    print("stdout has " + key)
    print("stderr has " + key, file=sys.stderr)
    raise ValueError("the key " + key + " is wrong")
`

// filesHolding lists the files under root whose content holds secret.
func filesHolding(t *testing.T, root, secret string) []string {
	t.Helper()
	var hits []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			hits = append(hits, path)
		}
		return nil
	})
	return hits
}

// TestAManagedStepsSecretLeavesNoTrace fails a command step and a parallel
// step that run as identity: managed with the worker's secret in what they
// print and in their errors: the secret is in no history, no file of the
// porch home and not in the server's database.
func TestAManagedStepsSecretLeavesNoTrace(t *testing.T) {
	needPython(t)
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	secret := "porch-secret-" + hex.EncodeToString(b)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	h := newHarness(t)

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(secretScript), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "a.txt"), []byte("a"), 0o644))
	src := `type: pipeline
settings:
  continue_on_step_failure: true
jobs:
  train:
    identity:
      type: managed
    command: echo "log has $AWS_SECRET_ACCESS_KEY"; echo "failed with $AWS_SECRET_ACCESS_KEY" >&2; exit 3
  score:
    type: parallel
    identity:
      type: managed
    inputs:
      data:
        type: uri_folder
        path: ./data
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    retry_settings:
      max_retries: 0
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      append_row_to: ${{outputs.scores}}
`
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	run := h.start(compile(t, path, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run.Get(ctx, nil)
	require.Error(t, err, "both steps fail")
	assert.NotContains(t, err.Error(), secret)

	assertSecretNowhere(t, secret, run.GetID(), h.home)
	dbs, _ := filepath.Glob(filepath.Join("/dev/shm", fmt.Sprintf("porch-temporal-%d-*", os.Getpid())))
	more, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("porch-temporal-%d-*", os.Getpid())))
	for _, db := range append(dbs, more...) {
		assert.Empty(t, filesHolding(t, db, secret), "the server's database %s holds the secret", db)
	}
	var redacted []string
	for _, f := range filesHolding(t, h.home, "<redacted>") {
		redacted = append(redacted, filepath.Base(f))
	}
	assert.Contains(t, redacted, "std_log.txt", "the command step's log shows where the secret was")
	assert.Contains(t, redacted, "process000.txt", "so does the entry script's stdout and stderr")
	assert.Contains(t, redacted, "job_error.txt", "and the parallel step's error report")
}
