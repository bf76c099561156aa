// Package golden compares a test's output with a .golden file beside its
// case file, for the tests that pin diagnostics' exact text.
package golden

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Assert compares got with case.golden, beside the case file case.yml, or
// writes it when update is set (the test's -update flag). rerun is the
// command that updates it, named when the golden file is missing.
func Assert(t *testing.T, caseFile string, got []byte, update bool, rerun string) {
	t.Helper()
	golden := strings.TrimSuffix(caseFile, ".yml") + ".golden"
	if update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, rerun)
	assert.Equal(t, string(want), string(got))
}
