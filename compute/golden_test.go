package compute

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// forCases runs parse on every testdata/<test>/*.yml and compares the
// formatted diagnostics with <case>.golden (rewritten with -update). Every
// case must produce an error.
func forCases(t *testing.T, test string, parse func(file string, data []byte) compiler.Diagnostics) {
	cases, err := filepath.Glob(filepath.Join("testdata", test, "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, file := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			diags := parse(file, data)
			require.True(t, diags.HasErrors(), "the case must produce an error")
			var got bytes.Buffer
			diags.Format(&got)
			golden.Assert(t, file, got.Bytes(), *update, "run go test ./compute -run "+test+" -update")
		})
	}
}
