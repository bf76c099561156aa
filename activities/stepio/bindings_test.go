package stepio

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestBindKeepsOutputsInDatastores: an output path the compiler would have
// refused (absolute, file://, relative, leaving its datastore, plainly or
// percent-encoded) fails the step and creates nothing.
func TestBindKeepsOutputsInDatastores(t *testing.T) {
	home, outside := t.TempDir(), t.TempDir()
	h := &Host{Home: home}
	f := Folders{Work: filepath.Join(home, "work"), Artifacts: filepath.Join(home, "artifacts")}
	escape := "azureml://datastores/workspaceblobstore/paths/"
	cases := []struct{ path, want string }{
		{filepath.Join(outside, "abs"), "is in no datastore"},
		{"file://" + filepath.Join(outside, "uri"), "is in no datastore"},
		{"relative/out", "is in no datastore"},
		{"https://example.com/out", "is in no datastore"},
		{escape + "../../../../" + outside + "/dots", `leaves its datastore with ".."`},
		{escape + "%2e%2e/%2E%2e/%2e%2E/%2E%2E/" + outside + "/encoded", `leaves its datastore with ".."`},
		{escape + "..%2f..%2f..%2f.." + outside + "/slashes", `leaves its datastore with ".."`},
		{"azureml://datastores/../paths/x", `names datastore ".."`},
	}
	for _, c := range cases {
		in := Step{RunID: "r1", StepPath: "s", Outputs: []plan.Output{{Name: "out", Type: "uri_folder", Path: c.path}}}
		_, err := h.Bind(context.Background(), in, f)
		require.Error(t, err, c.path)
		assert.Contains(t, err.Error(), c.want, c.path)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may be created outside the datastores")

	in := Step{RunID: "r1", StepPath: "s", Outputs: []plan.Output{{Name: "out", Type: "uri_folder", Path: escape + "a/b"}}}
	b, err := h.Bind(context.Background(), in, f)
	require.NoError(t, err)
	got, ok := b.Output("out")
	require.True(t, ok)
	assert.Equal(t, filepath.Join(home, "datastores", "workspaceblobstore", "a", "b"), got)
}

// TestBindRefusesAnOutputThroughALinkOutOfItsDatastore: a symbolic link
// inside a local datastore to a folder outside it (`ln -s /tmp/outside
// <datastore>/evil_link`) does not let an output, staged or not, a file
// or a folder, write outside; a link inside the datastore to another of
// its folders, and a datastore folder that is itself a link, still work.
func TestBindRefusesAnOutputThroughALinkOutOfItsDatastore(t *testing.T) {
	home, outside, real := t.TempDir(), t.TempDir(), t.TempDir()
	ds := filepath.Join(home, "datastores", "workspaceblobstore")
	require.NoError(t, os.MkdirAll(filepath.Join(ds, "inside"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(ds, "evil_link")))
	require.NoError(t, os.Symlink(filepath.Join(ds, "inside"), filepath.Join(ds, "good_link")))
	require.NoError(t, os.Symlink(filepath.Join(home, "missing"), filepath.Join(ds, "dangling")))
	// A registered local datastore whose folder is itself a link.
	require.NoError(t, os.Symlink(real, filepath.Join(home, "linked-store")))
	registered := []plan.Datastore{{Name: "linked", Type: plan.DatastoreLocal, Path: filepath.Join(home, "linked-store")}}
	h := &Host{Home: home, Datastores: func(context.Context) ([]plan.Datastore, error) { return registered, nil }}
	h.RefreshDatastores(context.Background(), "azureml://datastores/linked/paths/x")
	f := Folders{Work: filepath.Join(home, "work"), Artifacts: filepath.Join(home, "artifacts")}
	base := "azureml://datastores/workspaceblobstore/paths/"
	for _, attempt := range []string{"", "1"} {
		f.Attempt = attempt
		for _, c := range []struct{ path, typ, want string }{
			{base + "evil_link/sub", "uri_folder", "evil_link is a symbolic link to " + outside + ", outside its datastore's folder"},
			{base + "evil_link", "uri_folder", "evil_link is a symbolic link to " + outside},
			{base + "evil_link/model.pkl", "uri_file", "evil_link is a symbolic link to " + outside},
			{base + "dangling/sub", "uri_folder", "dangling is a symbolic link that leads nowhere"},
		} {
			in := Step{RunID: "r1", StepPath: "s", Outputs: []plan.Output{{Name: "out", Type: c.typ, Path: c.path}}}
			_, err := h.Bind(context.Background(), in, f)
			require.Error(t, err, c.path)
			assert.Contains(t, err.Error(), c.want, c.path)
		}
		for _, path := range []string{base + "good_link/sub", "azureml://datastores/linked/paths/out"} {
			in := Step{RunID: "r1", StepPath: "s", Outputs: []plan.Output{{Name: "out", Type: "uri_folder", Path: path}}}
			_, err := h.Bind(context.Background(), in, f)
			require.NoError(t, err, path)
		}
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may be created outside the datastore")
	_, err = os.Stat(filepath.Join(home, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is created where a dangling link points")
}
