package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// outputFiles reads and writes the files of step outputs where a run's
// default datastore keeps them: the worker's porch home, or MinIO.
type outputFiles struct {
	t     *testing.T
	home  string
	store *objectstore.Store
}

func (o outputFiles) path(uri, name string) string {
	_, p, ok := plan.SplitDatastoreURI(uri)
	require.True(o.t, ok, uri)
	return strings.TrimSuffix(p, "/") + "/" + name
}

func (o outputFiles) write(uri, name, content string) {
	o.t.Helper()
	if o.store != nil {
		require.NoError(o.t, o.store.Put(context.Background(), o.path(uri, name), bytes.NewReader([]byte(content)), int64(len(content))))
		return
	}
	local, err := stepio.LocalPath(o.home, uri)
	require.NoError(o.t, err)
	require.NoError(o.t, os.WriteFile(filepath.Join(local, name), []byte(content), 0o644))
}

func (o outputFiles) read(uri, name string) string {
	o.t.Helper()
	if o.store != nil {
		data, err := fs.ReadFile(o.store.FS(context.Background()), o.path(uri, name))
		require.NoError(o.t, err)
		return string(data)
	}
	local, err := stepio.LocalPath(o.home, uri)
	require.NoError(o.t, err)
	data, err := os.ReadFile(filepath.Join(local, name))
	require.NoError(o.t, err)
	return string(data)
}

// outputURI is the URI of a step's output "out" in a run.
func outputURI(t *testing.T, runID, step string) string {
	t.Helper()
	for _, o := range steps(t, runID)[step].Outputs {
		if o.Name == "out" {
			return o.URI
		}
	}
	t.Fatalf("step %s of run %s has no output out", step, runID)
	return ""
}

// TestReuseNeverReturnsWrongData is issue 22's reuse acceptance, on the
// embedded server with the outputs in the porch home and on MinIO: a
// changed target of a linked input, content changed with size and
// modification time put back (touch -r), a recorded output emptied, an
// upstream step that ran again, a forced run and a changed
// default_datastore each make the steps they touch run and say why; a
// forced run's steps are not reused by later runs.
func TestReuseNeverReturnsWrongData(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		h := newHarness(t)
		testReuseData(t, h, "", outputFiles{t: t, home: h.home})
	})
	t.Run("minio", func(t *testing.T) {
		_, _, _, bucket := s3test.Start(t)
		h := newHarness(t)
		store := registerS3(t, bucket)
		s, err := objectstore.Open(*store)
		require.NoError(t, err)
		testReuseData(t, h, store.Name, outputFiles{t: t, store: s})
	})
}

func testReuseData(t *testing.T, h *harness, datastore string, files outputFiles) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeAged(t, filepath.Join(outside, "d.txt"), "linked one\n")
	writeAged(t, filepath.Join(dir, "data", "e.txt"), "plain one\n")
	require.NoError(t, os.Symlink(filepath.Join(outside, "d.txt"), filepath.Join(dir, "data", "d.txt")))
	settings := ""
	if datastore != "" {
		settings = "settings:\n  default_datastore: azureml:" + datastore + "\n"
	}
	f := filepath.Join(dir, "p.yml")
	// s1 stamps its output with the time, so a run of it never writes
	// what an earlier run wrote.
	require.NoError(t, os.WriteFile(f, []byte(fmt.Sprintf(`type: pipeline
name: wrong-data
%sinputs:
  data:
    type: uri_folder
    path: %s
jobs:
  s1:
    command: cat ${{inputs.data}}/d.txt ${{inputs.data}}/e.txt > ${{outputs.out}}/v.txt && date +%%s%%N >> ${{outputs.out}}/v.txt
    inputs:
      data: ${{parent.inputs.data}}
    outputs:
      out:
  s2:
    command: cat ${{inputs.prev}}/v.txt > ${{outputs.out}}/v.txt
    inputs:
      prev: ${{parent.jobs.s1.outputs.out}}
    outputs:
      out:
`, settings, filepath.Join(dir, "data"))), 0o644))
	run := func(forced bool) string {
		t.Helper()
		p := compileReusable(t, f, nil)
		p.Settings.ForceRerun = forced
		id, err := h.run(p)
		require.NoError(t, err)
		return id
	}
	first := run(false)
	assert.Equal(t, map[string]string{"s1": "succeeded: first run", "s2": "succeeded: first run"}, reasons(t, first))
	assert.Equal(t, map[string]string{"s1": "reused", "s2": "reused"}, reasons(t, run(false)))

	// A linked input's target changed; its link did not.
	writeAged(t, filepath.Join(outside, "d.txt"), "linked two\n")
	got := reasons(t, run(false))
	assert.Regexp(t, `^succeeded: input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, got["s1"], "a linked input counts by its target")
	assert.Equal(t, `succeeded: dependency "s1" ran`, got["s2"])

	// touch -r: new content, the same size and modification time.
	info, err := os.Stat(filepath.Join(dir, "data", "e.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "e.txt"), []byte("plain two\n"), 0o644))
	require.NoError(t, os.Chtimes(filepath.Join(dir, "data", "e.txt"), info.ModTime(), info.ModTime()))
	touched := run(false)
	got = reasons(t, touched)
	assert.Regexp(t, `^succeeded: input "data" changed \(content `, got["s1"], "touch -r does not hide a change")

	// s2's recorded output emptied, its folder left.
	files.write(outputURI(t, touched, "s2"), "v.txt", "")
	emptied := run(false)
	got = reasons(t, emptied)
	assert.Equal(t, "reused", got["s1"])
	assert.Regexp(t, `^succeeded: recorded output "out" changed: v\.txt emptied \(\d+ B → 0 B\)$`, got["s2"])
	assert.NotEmpty(t, files.read(outputURI(t, emptied, "s2"), "v.txt"))
	// What Temporal's UI shows of each step says why it ran or whose
	// outputs it reused.
	_, ranDetails := userMetadata(t, emptied+"/s2")
	assert.Contains(t, ranDetails, `**Ran** rather than reuse an earlier run's outputs: recorded output "out" changed: v.txt emptied`)
	_, reusedDetails := userMetadata(t, emptied+"/s1")
	assert.Contains(t, reusedDetails, fmt.Sprintf("**Reused** the outputs of step `s1` of run `%s`", touched))

	// s1 runs again (its output emptied): s2, whose record was computed
	// from the output s1 had, runs too rather than show stale data.
	files.write(outputURI(t, emptied, "s1"), "v.txt", "")
	upstream := run(false)
	got = reasons(t, upstream)
	assert.Regexp(t, `^succeeded: recorded output "out" changed: v\.txt emptied`, got["s1"])
	assert.Equal(t, `succeeded: dependency "s1" ran`, got["s2"], "a dependant is keyed by the output it reads")
	s1Out := files.read(outputURI(t, upstream, "s1"), "v.txt")
	assert.Equal(t, s1Out, files.read(outputURI(t, upstream, "s2"), "v.txt"))

	// A forced run runs every step and leaves no record: the next run
	// reuses the run before it.
	forced := run(true)
	assert.Equal(t, map[string]string{"s1": "succeeded: force_rerun", "s2": "succeeded: force_rerun"}, reasons(t, forced))
	if datastore == "" {
		record(t, "v2-reuse-forced", forced)
	}
	after := run(false)
	st := steps(t, after)
	for _, s := range []string{"s1", "s2"} {
		require.Equal(t, workflows.StatusReused, st[s].Status, s)
		assert.Equal(t, upstream, st[s].Reuse.FromRun, "%s is reused from the run before the forced one", s)
	}

	// Another default datastore holds no record: the reason names the
	// change.
	p := compileReusable(t, f, nil)
	was := p.Settings.DefaultDatastore
	p.Settings.DefaultDatastore = "elsewhere" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	moved, err := h.run(p)
	require.NoError(t, err)
	assert.Equal(t, "succeeded: default_datastore changed ("+was+" → "+p.Settings.DefaultDatastore+")", reasons(t, moved)["s1"])
}
