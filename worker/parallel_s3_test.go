package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// tableScoreScript scores a tabular mini-batch: one row per input row, and
// a file per mini-batch in the folder --out names.
const tableScoreScript = `import argparse, os

args = None

def init():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    args, _ = p.parse_known_args()

def run(mini_batch):
    first = int(mini_batch["id"].iloc[0])
    with open(os.path.join(args.out, "batch-%04d.txt" % first), "w") as f:
        f.write("%d rows from %s\n" % (len(mini_batch), ",".join(sorted(set(mini_batch["Path"])))))
    out = mini_batch[["id", "Path"]].copy()
    out["score"] = mini_batch["x"] * 2
    return out
`

// scoreTable writes an MLTable over two CSV files (the second in a
// subfolder), the entry script, and a pipeline over them whose parallel
// step splits the table by size, so most mini-batches are byte ranges
// that need the file's header.
func scoreTable(t *testing.T, dir, header, input string) string {
	t.Helper()
	table := filepath.Join(dir, "table")
	require.NoError(t, os.MkdirAll(filepath.Join(table, "more"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(table, "MLTable"), []byte(`paths:
  - pattern: ./**/*.csv
transformations:
  - read_delimited:
      include_path_column: true
`), 0o644))
	for f, file := range []string{"a.csv", "more/b.csv"} {
		var b strings.Builder
		b.WriteString("id,x\n")
		for i := range 40 {
			fmt.Fprintf(&b, "%d,%d\n", f*1000+i, i*i)
		}
		require.NoError(t, os.WriteFile(filepath.Join(table, filepath.FromSlash(file)), []byte(b.String()), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(tableScoreScript), 0o644))
	if input == "" {
		input = "./table"
	}
	path := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`type: pipeline
name: lakescore
%s
jobs:
  score:
    type: parallel
    compute: azureml:cpu
    inputs:
      data:
        type: mltable
        path: %s
    outputs:
      scores:
        type: uri_folder
      extra:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "64"
    resources:
      instance_count: 2
    max_concurrency_per_instance: 1
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --out ${{outputs.extra}}
      append_row_to: ${{outputs.scores}}
`, header, input)), 0o644))
	return path
}

// readTree reads every file under root, by slash path.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return out
}

// TestParallelStepOnObjectStorageMatchesALocalRun runs a parallel step
// whose mltable input, outputs and state are on MinIO, on two worker
// processes that share no folder, and checks its outputs are those of the
// same step run by one worker on local folders.
func TestParallelStepOnObjectStorageMatchesALocalRun(t *testing.T) {
	needPython(t)
	_, _, secret, bucket := s3test.Start(t)
	ctx := context.Background()

	// One worker, local folders.
	localHome := t.TempDir()
	w := startWorker(t, localHome, "cpu")
	local := &harness{t: t, home: localHome}
	localRun, err := local.run(compile(t, scoreTable(t, t.TempDir(), "", ""), nil))
	w.Stop()
	require.NoError(t, err)
	outputURI := func(run, name string) string {
		return fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/score/%s", run, name)
	}
	wantScores := readTree(t, local.localPath(outputURI(localRun, "scores")))
	wantExtra := readTree(t, local.localPath(outputURI(localRun, "extra")))
	require.Contains(t, wantScores, plan.AppendRowFileName)
	require.Greater(t, len(wantExtra), 4, "the table is split into several mini-batches")

	// Two workers with homes of their own; everything on MinIO.
	home := t.TempDir()
	w = startWorker(t, home) // workflows only: the step runs on compute cpu
	t.Cleanup(w.Stop)
	store := registerS3(t, bucket)
	s, err := objectstore.Open(*store)
	require.NoError(t, err)
	dir := t.TempDir()
	path := scoreTable(t, dir, "settings:\n  default_datastore: azureml:"+store.Name,
		"azureml://datastores/"+store.Name+"/paths/inputs/table")
	_, err = s.Upload(ctx, filepath.Join(dir, "table"), "inputs/table")
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "table")), "the input is only on the object store")

	homeOne, homeTwo := t.TempDir(), t.TempDir()
	one := startWorkerProcess(t, homeOne, "cpu", "node-one")
	two := startWorkerProcess(t, homeTwo, "cpu", "node-two")
	h := &harness{t: t, home: home}
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)

	get := func(p string) map[string]string {
		dst := filepath.Join(t.TempDir(), "out")
		_, err := s.Download(ctx, p, dst)
		require.NoError(t, err)
		return readTree(t, dst)
	}
	step := "azureml/" + runID + "/score/"
	assert.Equal(t, wantScores, get(step+"scores"), "append_row_to's file is the local run's")
	assert.Equal(t, wantExtra, get(step+"extra"), "the files run() wrote are the local run's")
	for _, out := range []string{"scores", "extra"} {
		committed, err := s.Committed(ctx, step+out)
		require.NoError(t, err)
		assert.True(t, committed, "output %s is committed", out)
	}

	// Both workers ran mini-batches; the done records say where.
	done := doneRecords(t, s, step+"artifacts/porch/done")
	require.Len(t, done, len(wantExtra), "one done record per mini-batch")
	nodes := map[string]int{}
	for _, r := range done {
		nodes[r.Node]++
	}
	assert.Len(t, nodes, 2, "mini-batches ran on both workers: %v", nodes)

	// A worker publishes its logs when its entry-script processes stop:
	// stopping the workers stops them.
	for _, cmd := range []interface{ Signal(os.Signal) error }{one.Process, two.Process} {
		require.NoError(t, cmd.Signal(syscall.SIGTERM))
	}
	_, _ = one.Process.Wait()
	_, _ = two.Process.Wait()
	logs, err := s.List(ctx, step+"artifacts/logs")
	require.NoError(t, err)
	var names []string
	for _, o := range logs {
		names = append(names, o.Path)
	}
	sort.Strings(names)
	for _, want := range []string{"job_result.txt", "readme.txt",
		"sys/job_report/processed_mini-batches.node-one.csv", "sys/job_report/processed_mini-batches.node-two.csv"} {
		assert.Contains(t, names, want)
	}
	for _, node := range []string{"node-one", "node-two"} {
		found := false
		for _, n := range names {
			found = found || strings.HasPrefix(n, "user/entry_script_log/"+node+"/")
		}
		assert.True(t, found, "the entry-script logs of %s are on the store: %v", node, names)
	}
	for home, node := range map[string]string{homeOne: "node-one", homeTwo: "node-two"} {
		entries, err := os.ReadDir(filepath.Join(home, "work", runID, "score", node, ".porch-inputs"))
		require.NoError(t, err, "%s fetched its mini-batches' objects into its own folder", node)
		assert.Empty(t, entries, "%s removed each mini-batch's objects when it ended", node)
	}
	assertSecretNowhere(t, secret, runID, home, homeOne, homeTwo)
}

// doneRecords are the done records of a parallel step on an object store,
// under prefix, by mini-batch: the files of mini-batches run on their own
// (<k>/<i>.json) and the groups' files of JSON lines (groups/*.jsonl).
func doneRecords(t *testing.T, s *objectstore.Store, prefix string) map[int]parallel.MiniBatchResult {
	t.Helper()
	objs, err := s.List(context.Background(), prefix)
	require.NoError(t, err)
	out := map[int]parallel.MiniBatchResult{}
	for _, o := range objs {
		for _, line := range strings.Split(strings.TrimSpace(readObject(t, s, prefix+"/"+o.Path)), "\n") {
			var r parallel.MiniBatchResult
			require.NoError(t, json.Unmarshal([]byte(line), &r), "done record %s", o.Path)
			_, twice := out[r.Index]
			require.False(t, twice, "mini-batch %d has one done record", r.Index)
			out[r.Index] = r
		}
	}
	return out
}
