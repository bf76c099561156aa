package command

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
)

func TestRunCommandCopiesCodeFromASnapshotOnALocalDatastore(t *testing.T) {
	env, a := newEnv(t)
	code := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.MkdirAll(code, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(code, "main.sh"), []byte("echo from-snapshot > outputs/o.txt\n"), 0o755))
	tree, err := codesnapshot.Scan(code, "")
	require.NoError(t, err)
	_, err = codesnapshot.CopyLocal(tree, filepath.Join(a.Home, "datastores", "workspaceblobstore"))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(code), "the step must not need the submitter's folder")

	in := stepInput(tmpl(txt("./main.sh")))
	in.Command.Code = tree.URI("workspaceblobstore")
	_, err = runStep(env, in)
	require.NoError(t, err)
	assert.Equal(t, "from-snapshot\n", readFile(t, filepath.Join(artifactsDir(a, in), "outputs", "o.txt")))

	in.Command.Code = codesnapshot.Path("0000000000000000000000000000000000000000000000000000000000000000")
	in.Command.Code = "azureml://datastores/workspaceblobstore/paths/" + in.Command.Code + "/src/"
	_, err = runStep(env, in)
	appErr := appError(t, err)
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "is not at")
	assert.Contains(t, appErr.Message(), "submit the run again")
}
