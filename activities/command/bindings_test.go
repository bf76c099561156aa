package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// nfsWorker is a worker whose registered local datastore "nfs" holds the
// folder in/ (a.txt, run.sh executable, sub/b.txt, link.txt -> a.txt) and
// the file one.csv. It returns the datastore's folder.
func nfsWorker(t *testing.T) (*Activities, string) {
	shared := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(shared, "in", "sub"), 0o755))
	for name, mode := range map[string]os.FileMode{"in/a.txt": 0o644, "in/run.sh": 0o755, "in/sub/b.txt": 0o600, "one.csv": 0o644} {
		require.NoError(t, os.WriteFile(filepath.Join(shared, name), []byte(filepath.Base(name)+"\n"), mode))
		require.NoError(t, os.Chmod(filepath.Join(shared, name), mode))
	}
	require.NoError(t, os.Symlink(filepath.Join(shared, "in", "a.txt"), filepath.Join(shared, "in", "link.txt")))
	a := &Activities{Host: &stepio.Host{Home: t.TempDir(), KillGrace: 2 * time.Second, Datastores: func(context.Context) ([]plan.Datastore, error) {
		return []plan.Datastore{{Name: "nfs", Type: plan.DatastoreLocal, Path: shared}}, nil
	}}}
	return a, shared
}

// changeStep reads the folder in/ and the file one.csv of nfs with the given
// mode, writes the paths it got to out/paths, and then changes what it got:
// it appends to a.txt, link.txt and one.csv and removes sub/b.txt.
func changeStep(step, mode string) RunCommandInput {
	data := func(name, typ, p string) plan.Input {
		return plan.Input{Name: name, Type: typ, Mode: mode, Value: plan.Value{Kind: plan.ValueData,
			Data: &plan.Data{Type: typ, Path: "azureml://datastores/nfs/paths/" + p}}}
	}
	cmd := tmpl(txt("echo "), inRef("data"), txt(" "), inRef("file"), txt(" > "), outRef("out"), txt("/paths && "),
		txt("echo changed >> "), inRef("data"), txt("/a.txt && echo changed >> "), inRef("data"),
		txt("/link.txt && echo changed >> "), inRef("file"), txt(" && rm "), inRef("data"), txt("/sub/b.txt"))
	return RunCommandInput{Step: stepio.Step{RunID: "r1", StepPath: step, Command: plan.Command{Template: cmd},
		Inputs:  []plan.Input{data("data", "uri_folder", "in"), data("file", "uri_file", "one.csv")},
		Outputs: []plan.Output{{Name: "out", Type: "uri_folder"}}}}
}

// A download input on a local datastore is a copy in the working folder:
// the step changes its copy, never the datastore.
func TestDownloadInputsOnALocalDatastoreAreCopies(t *testing.T) {
	for _, mode := range []string{"download", "eval_download"} {
		t.Run(mode, func(t *testing.T) {
			a, shared := nfsWorker(t)
			res, err := a.RunCommand(context.Background(), changeStep("copy", mode))
			require.NoError(t, err)
			// A uri_file keeps its own name, in a folder of its own, as in
			// Azure ML (a reader of data.csv.gz needs the extension).
			data, file := filepath.Join(res.WorkDir, ".porch-inputs", "data"), filepath.Join(res.WorkDir, ".porch-inputs", "file", "one.csv")
			assert.Equal(t, data+" "+file+"\n", readFile(t, filepath.Join(res.Outputs[0].Path, "paths")))

			assert.Equal(t, "a.txt\n", readFile(t, filepath.Join(shared, "in", "a.txt")), "the source is unchanged")
			assert.Equal(t, "one.csv\n", readFile(t, filepath.Join(shared, "one.csv")))
			assert.FileExists(t, filepath.Join(shared, "in", "sub", "b.txt"))
			assert.Equal(t, "a.txt\nchanged\n", readFile(t, filepath.Join(data, "a.txt")))
			assert.Equal(t, "a.txt\nchanged\n", readFile(t, filepath.Join(data, "link.txt")), "a link is copied as the file it names")
			assert.Equal(t, "one.csv\nchanged\n", readFile(t, file), "a uri_file is copied as a file")
			for name, want := range map[string]os.FileMode{"run.sh": 0o755, "a.txt": 0o644} {
				info, err := os.Lstat(filepath.Join(data, name))
				require.NoError(t, err)
				assert.Equal(t, want, info.Mode(), name)
			}
		})
	}
}

// ro_mount (the default) and direct read a local datastore in place.
func TestMountAndDirectInputsOnALocalDatastoreAreReadInPlace(t *testing.T) {
	for _, mode := range []string{"", "ro_mount", "direct"} {
		t.Run(mode, func(t *testing.T) {
			a, shared := nfsWorker(t)
			res, err := a.RunCommand(context.Background(), changeStep("inplace", mode))
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(shared, "in")+" "+filepath.Join(shared, "one.csv")+"\n", readFile(t, filepath.Join(res.Outputs[0].Path, "paths")))
			assert.Equal(t, "a.txt\nchanged\nchanged\n", readFile(t, filepath.Join(shared, "in", "a.txt")), "changed in place, and through the link")
			assert.NoDirExists(t, filepath.Join(res.WorkDir, ".porch-inputs"))
		})
	}
}

// A link to a folder is not followed by a download: the step fails, and
// says what to do.
func TestDownloadRefusesALinkToAFolder(t *testing.T) {
	a, shared := nfsWorker(t)
	require.NoError(t, os.Symlink(filepath.Join(shared, "in", "sub"), filepath.Join(shared, "in", "subs")))
	_, err := a.RunCommand(context.Background(), changeStep("link", "download"))
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, stepio.InvalidStepType, appErr.Type())
	assert.Contains(t, appErr.Message(), `step "link": download input "data": `+filepath.Join(shared, "in", "subs")+" is a symbolic link to a folder")
	assert.Contains(t, appErr.Message(), "read the input in place with mode ro_mount")
}
