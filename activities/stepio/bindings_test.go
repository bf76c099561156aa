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
