package reuse

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

const testDS = "workspaceblobstore"

// fixture is a home with a datastore, a code folder snapshotted onto it
// and an input folder.
type fixture struct {
	a     *Activities
	home  string
	src   string
	data  string
	code  string
	model string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := t.TempDir()
	f := &fixture{home: home, src: t.TempDir(), data: t.TempDir()}
	f.a = &Activities{Host: &stepio.Host{Home: home}, Hasher: &Hasher{Dir: filepath.Join(home, "cache", "reuse")}}
	writeOld(t, filepath.Join(f.src, "src", "train.py"), "print('v1')\n")
	writeOld(t, filepath.Join(f.src, "README.md"), "notes\n")
	writeOld(t, filepath.Join(f.data, "part-0.csv"), "a,b\n1,2\n")
	f.code = f.snapshot(t)
	f.model = plan.DefaultOutputURI(testDS, "run1", "train", "model")
	return f
}

// snapshot snapshots the code folder as porch run does and returns its URI.
func (f *fixture) snapshot(t *testing.T) string {
	t.Helper()
	tree, err := codesnapshot.Scan(f.src, "")
	require.NoError(t, err)
	_, err = codesnapshot.CopyLocal(tree, filepath.Join(f.home, "datastores", testDS))
	require.NoError(t, err)
	return tree.URI(testDS)
}

func (f *fixture) input(run string) DecideInput {
	return DecideInput{
		Pipeline: "chain", RunID: run, DefaultDatastore: testDS,
		Step: plan.Step{Name: "train", Path: "train", Type: plan.StepCommand,
			Command: &plan.Command{Template: plan.Template{Source: "python src/train.py --data ${{inputs.data}}"}, Code: f.code},
			Outputs: []plan.Output{{Name: "model", Type: "uri_folder"}}},
		Inputs: []plan.Input{
			{Name: "data", Type: "uri_folder", Value: plan.Value{Kind: plan.ValueData, Data: &plan.Data{Type: "uri_folder", Path: f.data}}},
			{Name: "lr", Type: "number", Value: plan.Value{Kind: plan.ValueLiteral, Literal: "0.1"}},
		},
	}
}

// succeed writes the step's output and records it, as a run would.
func (f *fixture) succeed(t *testing.T, d Decision, run string) {
	t.Helper()
	local, err := stepio.LocalPath(f.home, f.model)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(local, 0o755))
	require.NoError(t, f.a.RecordReuse(context.Background(), RecordInput{DefaultDatastore: testDS, Records: []Record{{
		Key: d.Key, Pipeline: "chain", Run: run, Step: "train", Parts: d.Parts,
		Outputs: []Output{{Name: "model", URI: f.model}},
	}}}))
}

func TestDecideReuse(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	first, err := f.a.DecideReuse(ctx, f.input("run1"))
	require.NoError(t, err)
	assert.Nil(t, first.Reused)
	assert.Equal(t, ReasonFirstRun, first.Reason)
	f.succeed(t, first, "run1")

	second, err := f.a.DecideReuse(ctx, f.input("run2"))
	require.NoError(t, err)
	require.NotNil(t, second.Reused, "same spec, code and inputs: %s", second.Reason)
	assert.Equal(t, first.Key, second.Key, "the run id is not in the key")
	assert.Equal(t, "run1", second.Reused.Run)
	require.Len(t, second.Reused.Outputs, 1)
	assert.Equal(t, "model", second.Reused.Outputs[0].Name)
	assert.Equal(t, f.model, second.Reused.Outputs[0].URI)

	t.Run("literal", func(t *testing.T) {
		in := f.input("run3")
		in.Inputs[1].Value.Literal = "0.2"
		d, err := f.a.DecideReuse(ctx, in)
		require.NoError(t, err)
		assert.Nil(t, d.Reused)
		assert.Equal(t, `input "lr" changed (0.1 → 0.2)`, d.Reason)
	})
	t.Run("input content", func(t *testing.T) {
		p := filepath.Join(f.data, "part-0.csv")
		writeOld(t, p, "a,b\n1,3\n")
		defer writeOld(t, p, "a,b\n1,2\n")
		d, err := f.a.DecideReuse(ctx, f.input("run3"))
		require.NoError(t, err)
		assert.Nil(t, d.Reused)
		assert.Regexp(t, `^input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, d.Reason)
	})
	t.Run("code", func(t *testing.T) {
		in := f.input("run3")
		writeOld(t, filepath.Join(f.src, "src", "train.py"), "print('v2')\n")
		defer writeOld(t, filepath.Join(f.src, "src", "train.py"), "print('v1')\n")
		in.Step.Command.Code = f.snapshot(t)
		d, err := f.a.DecideReuse(ctx, in)
		require.NoError(t, err)
		assert.Equal(t, "code changed: src/train.py", d.Reason)
	})
	t.Run("upstream", func(t *testing.T) {
		in := f.input("run3")
		in.Upstream = []Upstream{{Input: "data", Step: "prep", Output: "out", Ran: true}}
		d, err := f.a.DecideReuse(ctx, in)
		require.NoError(t, err)
		assert.Equal(t, `dependency "prep" ran`, d.Reason)
	})
	t.Run("forced", func(t *testing.T) {
		in := f.input("run3")
		in.Force = ReasonForced
		d, err := f.a.DecideReuse(ctx, in)
		require.NoError(t, err)
		assert.Nil(t, d.Reused)
		assert.Equal(t, ReasonForced, d.Reason)
		assert.Equal(t, first.Key, d.Key)
		assert.Equal(t, first.Parts, d.Was, "the latest record's parts, to explain")
	})
	t.Run("outputs gone", func(t *testing.T) {
		local, err := stepio.LocalPath(f.home, f.model)
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(local))
		d, err := f.a.DecideReuse(ctx, f.input("run3"))
		require.NoError(t, err)
		assert.Nil(t, d.Reused)
		assert.Equal(t, `recorded output "model" is gone`, d.Reason)
	})
}

// TestDecideNamesChangedFilesOfLocalCode: code named by its local path
// (the embedded server's runs) is compared file by file too, through the
// files kept under its hash; what .amlignore leaves out does not count.
func TestDecideNamesChangedFilesOfLocalCode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	writeOld(t, filepath.Join(f.src, ".amlignore"), "scratch/\n")
	f.code = f.src
	first, err := f.a.DecideReuse(ctx, f.input("run1"))
	require.NoError(t, err)
	f.succeed(t, first, "run1")

	writeOld(t, filepath.Join(f.src, "scratch", "notes.txt"), "ignored\n")
	same, err := f.a.DecideReuse(ctx, f.input("run2"))
	require.NoError(t, err)
	require.NotNil(t, same.Reused, "an ignored file is not in the key: %s", same.Reason)

	writeOld(t, filepath.Join(f.src, "src", "train.py"), "print('v2')\n")
	d, err := f.a.DecideReuse(ctx, f.input("run2"))
	require.NoError(t, err)
	assert.Equal(t, "code changed: src/train.py", d.Reason)
}

// TestLinkedInputsAndCodeCountByWhatTheyPointTo: an input file reached
// through a symbolic link, an input that is a link to a folder, and code
// reached through a link count by the content of their targets, as Azure
// ML follows links: a changed target makes the step run, even though no
// link's text changed.
func TestLinkedInputsAndCodeCountByWhatTheyPointTo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	outside := t.TempDir()
	writeOld(t, filepath.Join(outside, "real.csv"), "x,y\n1,2\n")
	writeOld(t, filepath.Join(outside, "lib", "util.py"), "X = 1\n")
	require.NoError(t, os.Symlink(filepath.Join(outside, "real.csv"), filepath.Join(f.data, "part-1.csv")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "lib"), filepath.Join(f.src, "lib")))
	linked := filepath.Join(t.TempDir(), "data-link")
	require.NoError(t, os.Symlink(f.data, linked))
	f.code = f.src
	input := func(run string) DecideInput {
		in := f.input(run)
		in.Inputs[0].Value.Data.Path = linked
		return in
	}
	first, err := f.a.DecideReuse(ctx, input("run1"))
	require.NoError(t, err)
	f.succeed(t, first, "run1")
	same, err := f.a.DecideReuse(ctx, input("run2"))
	require.NoError(t, err)
	require.NotNil(t, same.Reused, same.Reason)

	writeOld(t, filepath.Join(outside, "real.csv"), "x,y\n1,3\n")
	d, err := f.a.DecideReuse(ctx, input("run2"))
	require.NoError(t, err)
	assert.Nil(t, d.Reused)
	assert.Regexp(t, `^input "data" changed \(content [0-9a-f]{8}… → [0-9a-f]{8}…\)$`, d.Reason)
	writeOld(t, filepath.Join(outside, "real.csv"), "x,y\n1,2\n")

	writeOld(t, filepath.Join(outside, "lib", "util.py"), "X = 2\n")
	d, err = f.a.DecideReuse(ctx, input("run2"))
	require.NoError(t, err)
	assert.Nil(t, d.Reused)
	assert.Equal(t, "code changed: lib/util.py", d.Reason)
}
