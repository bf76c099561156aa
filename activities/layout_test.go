package activities

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/porch-pipelines/porch/"

// stepKinds are the packages that hold the activities of one kind of
// step each.
var stepKinds = []string{"command", "parallel", "sweep", "spread"}

// TestStepKindsImportNoSibling keeps the layout one-directional: a step
// kind's package imports the shared step I/O and leaf packages, never
// another kind's, and no package under activities imports the root, the
// workflows, the worker or the CLI.
func TestStepKindsImportNoSibling(t *testing.T) {
	up := []string{module + "activities", module + "workflows", module + "worker", module + "internal/", module + "cmd/"}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == "." {
			return err
		}
		kind := strings.Split(filepath.ToSlash(path), "/")[0]
		for _, imp := range imports(t, path) {
			for _, u := range up {
				if imp == u || (strings.HasSuffix(u, "/") && strings.HasPrefix(imp, u)) {
					assert.Failf(t, "import back up", "%s imports %s", path, imp)
				}
			}
			for _, other := range stepKinds {
				if other != kind && slices.Contains(stepKinds, kind) && (imp == module+"activities/"+other || strings.HasPrefix(imp, module+"activities/"+other+"/")) {
					assert.Failf(t, "sibling step kind", "%s imports %s: move what both need to stepio or a leaf package", path, imp)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// imports are the imports of the Go files in dir, tests included.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []string
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			out = append(out, path)
		}
	}
	return out
}
