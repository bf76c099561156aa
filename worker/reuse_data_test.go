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

// scenario is one backend's run of TestReuseNeverReturnsWrongData: a
// two-step chain whose input folder holds a linked file and a plain one.
type scenario struct {
	t         *testing.T
	h         *harness
	files     outputFiles
	datastore string
	dir       string
	outside   string
	pipeline  string
}

func testReuseData(t *testing.T, h *harness, datastore string, files outputFiles) {
	sc := &scenario{t: t, h: h, files: files, datastore: datastore, dir: t.TempDir(), outside: t.TempDir()}
	sc.write()
	first := sc.run(false)
	assert.Equal(t, map[string]string{"s1": "succeeded: first run", "s2": "succeeded: first run"}, reasons(t, first))
	assert.Equal(t, map[string]string{"s1": "reused", "s2": "reused"}, reasons(t, sc.run(false)))
	touched := sc.changeInputs()
	upstream := sc.changeOutputs(touched)
	sc.force(upstream)
	sc.moveDatastore()
	sc.notDeterministicComponent()
}

// write writes the input folder (d.txt a link to a file outside it) and
// the pipeline. s1 stamps its output with the time, so a run of it never
// writes what an earlier run wrote.
func (sc *scenario) write() {
	t := sc.t
	writeAged(t, filepath.Join(sc.outside, "d.txt"), "linked one\n")
	writeAged(t, filepath.Join(sc.dir, "data", "e.txt"), "plain one\n")
	require.NoError(t, os.Symlink(filepath.Join(sc.outside, "d.txt"), filepath.Join(sc.dir, "data", "d.txt")))
	settings := ""
	if sc.datastore != "" {
		settings = "settings:\n  default_datastore: azureml:" + sc.datastore + "\n"
	}
	sc.pipeline = filepath.Join(sc.dir, "p.yml")
	require.NoError(t, os.WriteFile(sc.pipeline, []byte(fmt.Sprintf(`type: pipeline
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
`, settings, filepath.Join(sc.dir, "data"))), 0o644))
}

func (sc *scenario) run(forced bool) string {
	sc.t.Helper()
	p := compileReusable(sc.t, sc.pipeline, nil)
	p.Settings.ForceRerun = forced
	id, err := sc.h.run(p)
	require.NoError(sc.t, err)
	return id
}

// changeInputs changes a linked input's target (its link unchanged), then
// an input's content with its size and modification time put back
// (touch -r); it returns the last run.
func (sc *scenario) changeInputs() string {
	t := sc.t
	writeAged(t, filepath.Join(sc.outside, "d.txt"), "linked two\n")
	got := reasons(t, sc.run(false))
	assert.Regexp(t, `^succeeded: input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, got["s1"], "a linked input counts by its target")
	assert.Equal(t, `succeeded: dependency "s1" ran`, got["s2"])

	e := filepath.Join(sc.dir, "data", "e.txt")
	info, err := os.Stat(e)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(e, []byte("plain two\n"), 0o644))
	require.NoError(t, os.Chtimes(e, info.ModTime(), info.ModTime()))
	touched := sc.run(false)
	assert.Regexp(t, `^succeeded: input "data" changed \(content `, reasons(t, touched)["s1"], "touch -r does not hide a change")
	return touched
}

// changeOutputs empties s2's recorded output, then s1's, in place; it
// returns the last run.
func (sc *scenario) changeOutputs(touched string) string {
	t := sc.t
	sc.files.write(outputURI(t, touched, "s2"), "v.txt", "")
	emptied := sc.run(false)
	got := reasons(t, emptied)
	assert.Equal(t, "reused", got["s1"])
	assert.Regexp(t, `^succeeded: recorded output "out" changed: v\.txt emptied \(\d+ B → 0 B\)$`, got["s2"])
	assert.NotEmpty(t, sc.files.read(outputURI(t, emptied, "s2"), "v.txt"))
	// What Temporal's UI shows of each step says why it ran or whose
	// outputs it reused.
	_, ranDetails := userMetadata(t, emptied+"/s2")
	assert.Contains(t, ranDetails, `**Ran** rather than reuse an earlier run's outputs: recorded output "out" changed: v.txt emptied`)
	_, reusedDetails := userMetadata(t, emptied+"/s1")
	assert.Contains(t, reusedDetails, fmt.Sprintf("**Reused** the outputs of step `s1` of run `%s`", touched))

	// s1 runs again (its output emptied): s2, whose record was computed
	// from the output s1 had, runs too rather than show stale data.
	sc.files.write(outputURI(t, emptied, "s1"), "v.txt", "")
	upstream := sc.run(false)
	got = reasons(t, upstream)
	assert.Regexp(t, `^succeeded: recorded output "out" changed: v\.txt emptied`, got["s1"])
	assert.Equal(t, `succeeded: dependency "s1" ran`, got["s2"], "a dependant is keyed by the output it reads")
	assert.Equal(t, sc.files.read(outputURI(t, upstream, "s1"), "v.txt"), sc.files.read(outputURI(t, upstream, "s2"), "v.txt"))
	return upstream
}

// force runs every step and leaves no record: the next run reuses the
// run before (last).
func (sc *scenario) force(last string) {
	t := sc.t
	forced := sc.run(true)
	assert.Equal(t, map[string]string{"s1": "succeeded: force_rerun", "s2": "succeeded: force_rerun"}, reasons(t, forced))
	if sc.datastore == "" {
		record(t, "v2-reuse-forced", forced)
	}
	st := steps(t, sc.run(false))
	for _, s := range []string{"s1", "s2"} {
		require.Equal(t, workflows.StatusReused, st[s].Status, s)
		assert.Equal(t, last, st[s].Reuse.FromRun, "%s is reused from the run before the forced one", s)
	}
}

// moveDatastore runs with another default datastore, which holds no
// record: the reason names the change.
func (sc *scenario) moveDatastore() {
	t := sc.t
	p := compileReusable(t, sc.pipeline, nil)
	was := p.Settings.DefaultDatastore
	p.Settings.DefaultDatastore = "elsewhere" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	moved, err := sc.h.run(p)
	require.NoError(t, err)
	assert.Equal(t, "succeeded: default_datastore changed ("+was+" → "+p.Settings.DefaultDatastore+")", reasons(t, moved)["s1"])
}

// notDeterministicComponent runs twice a pipeline whose pipeline component
// says is_deterministic: false: its step runs both times, as the step
// beside it is reused.
func (sc *scenario) notDeterministicComponent() {
	t := sc.t
	settings := ""
	if sc.datastore != "" {
		settings = "settings:\n  default_datastore: azureml:" + sc.datastore + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(sc.dir, "draw.yml"), []byte(`type: pipeline
name: draw
is_deterministic: false
jobs:
  roll:
    command: echo $RANDOM > ${{outputs.out}}/r.txt
    outputs:
      out:
`), 0o644))
	f := filepath.Join(sc.dir, "outer.yml")
	require.NoError(t, os.WriteFile(f, []byte(settings+`type: pipeline
name: outer
jobs:
  steady:
    command: echo steady
  sub:
    type: pipeline
    component: ./draw.yml
`), 0o644))
	for i, want := range []string{"succeeded: first run", "reused"} {
		id, err := sc.h.run(compileReusable(t, f, nil))
		require.NoError(t, err)
		assert.Equal(t, want, reasons(t, id)["steady"], "run %d", i+1)
		assert.Equal(t, map[string]string{"sub/roll": "succeeded: is_deterministic: false"}, reasons(t, id+"/sub"), "run %d", i+1)
	}
}
