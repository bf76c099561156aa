package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// codePipeline writes a pipeline whose command step runs an executable
// script from ./src and whose parallel step's entry script, in ./score,
// imports a module beside it; src's .amlignore leaves out big.bin.
func codePipeline(t *testing.T, dir, store string) string {
	t.Helper()
	files := map[string]string{
		"src/main.sh":     "#!/bin/sh\ntest ! -e big.bin || { echo big.bin was not ignored >&2; exit 3; }\ncat lib/msg.txt > \"$1/msg.txt\"\n",
		"src/lib/msg.txt": "from the snapshot\n",
		"src/.amlignore":  "*.bin\n",
		"src/big.bin":     "never uploaded",
		"score/entry.py":  "import os\nfrom helper import tag\n\ndef init():\n    pass\n\ndef run(mini_batch):\n    return [tag(os.path.basename(p)) for p in mini_batch]\n",
		"score/helper.py": "def tag(name):\n    return 'scored ' + name\n",
		"inputs/a.txt":    "a",
		"inputs/b.txt":    "b",
	}
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "src", "main.sh"), 0o755))
	path := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
name: snap
settings:
  default_datastore: azureml:%[1]s
jobs:
  hello:
    compute: azureml:one
    code: ./src
    command: ./main.sh ${{outputs.out}}
    outputs:
      out:
        type: uri_folder
  score:
    type: parallel
    compute: azureml:one
    inputs:
      data:
        type: uri_folder
        path: azureml://datastores/%[1]s/paths/snapinputs
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    task:
      type: run_function
      code: ./score
      entry_script: entry.py
      append_row_to: ${{outputs.scores}}
`, store)), 0o644))
	return path
}

// TestStepsRunFromCodeSnapshots submits a pipeline whose code is
// snapshotted onto MinIO, removes the code folders, and runs the steps on
// a worker process with a home of its own: the code can only come from the
// snapshots. Submitting the same code again uploads nothing.
func TestStepsRunFromCodeSnapshots(t *testing.T) {
	needPython(t)
	_, _, secret, bucket := s3test.Start(t)
	ctx := context.Background()
	home := t.TempDir()
	w := startWorker(t, home) // workflows only: the steps run on compute one
	t.Cleanup(w.Stop)
	store := registerS3(t, bucket)
	s, err := objectstore.Open(*store)
	require.NoError(t, err)

	dir := t.TempDir()
	path := codePipeline(t, dir, store.Name)
	_, err = s.Upload(ctx, filepath.Join(dir, "inputs"), "snapinputs")
	require.NoError(t, err)

	p := compile(t, path, nil)
	results, err := codesnapshot.SnapshotPlan(ctx, p, *store, home)
	require.NoError(t, err)
	require.Len(t, results, 2)
	for _, r := range results {
		assert.True(t, r.Uploaded, "%s is uploaded on its first submission", r.Source)
		assert.True(t, strings.HasPrefix(r.URI, "azureml://datastores/"+store.Name+"/paths/LocalUpload/"), r.URI)
	}
	assert.Equal(t, results[0].URI, p.Pipeline.Steps[0].Command.Code, "the plan names the snapshot")
	assert.Equal(t, results[1].URI, p.Pipeline.Steps[1].Parallel.Task.Code)
	snapshots, err := s.List(ctx, "LocalUpload")
	require.NoError(t, err)
	for _, o := range snapshots {
		assert.NotContains(t, o.Path, "big.bin", ".amlignore'd files are not uploaded")
	}

	for _, d := range []string{"src", "score"} {
		require.NoError(t, os.Rename(filepath.Join(dir, d), filepath.Join(dir, d+"-moved")))
	}
	workerHome := t.TempDir()
	startWorkerProcess(t, workerHome, "one", "node-one")
	h := &harness{t: t, home: home}
	runID, err := h.run(p)
	require.NoError(t, err)

	get := func(p string) map[string]string {
		dst := filepath.Join(t.TempDir(), "out")
		_, err := s.Download(ctx, p, dst)
		require.NoError(t, err)
		return readTree(t, dst)
	}
	assert.Equal(t, map[string]string{"msg.txt": "from the snapshot\n"}, get("azureml/"+runID+"/hello/out"))
	scores := get("azureml/" + runID + "/score/scores")[plan.AppendRowFileName]
	assert.Contains(t, scores, "scored a.txt")
	assert.Contains(t, scores, "scored b.txt")
	for _, r := range results {
		_, rest, _ := strings.Cut(r.URI, "/paths/")
		hash, name, ok := codesnapshot.ParsePath(strings.TrimSuffix(rest, "/"))
		require.True(t, ok, r.URI)
		assert.DirExists(t, filepath.Join(workerHome, "cache", "code", hash, name), "the worker keeps the fetched snapshot in its cache")
	}

	// The same code again: nothing is uploaded. An object removed from the
	// committed snapshot stays removed, which an upload would have put back.
	for _, d := range []string{"src", "score"} {
		require.NoError(t, os.Rename(filepath.Join(dir, d+"-moved"), filepath.Join(dir, d)))
	}
	_, rest, _ := strings.Cut(results[0].URI, "/paths/")
	removed := rest + "lib/msg.txt"
	require.NoError(t, s.RemoveAll(ctx, removed))
	snapshots = slices.DeleteFunc(snapshots, func(o objectstore.Object) bool { return "LocalUpload/"+o.Path == removed })
	again, err := codesnapshot.SnapshotPlan(ctx, compile(t, path, nil), *store, home)
	require.NoError(t, err)
	require.Len(t, again, 2)
	for i, r := range again {
		assert.False(t, r.Uploaded, "%s is already on the datastore", r.Source)
		assert.Equal(t, results[i].URI, r.URI)
	}
	after, err := s.List(ctx, "LocalUpload")
	require.NoError(t, err)
	assert.Equal(t, snapshots, after, "no object was written again")
	assert.Len(t, after, 4, "main.sh, .amlignore, entry.py and helper.py; lib/msg.txt was removed")
	for _, r := range again {
		_, rest, _ := strings.Cut(r.URI, "/paths/")
		hash, _, _ := codesnapshot.ParsePath(strings.TrimSuffix(rest, "/"))
		committed, err := s.Committed(ctx, codesnapshot.Path(hash))
		require.NoError(t, err)
		assert.True(t, committed)
	}
	assertSecretNowhere(t, secret, runID, home, workerHome)
}
