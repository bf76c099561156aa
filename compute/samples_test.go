package compute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestSamples reads every file of ../samples/compute: compute files and
// instance-type files (those with kind:) must have no diagnostics, and the
// instance types must fit every sample kubernetes compute.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "samples", "compute", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var computes []plan.Compute
	var types []*InstanceTypes
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(data), "\nkind: ") {
			it, diags := ParseInstanceTypes(f, data)
			require.Empty(t, diags, "%s", diags.Error())
			types = append(types, it)
			continue
		}
		c, diags := ParseCompute(f, data)
		require.Empty(t, diags, "%s", diags.Error())
		computes = append(computes, c)
	}
	require.NotEmpty(t, types)
	for _, it := range types {
		diags := it.CheckSelectors(computes)
		require.Empty(t, diags, "%s", diags.Error())
	}
}

// TestTruncatedSamples parses every prefix of every sample, as both kinds
// of file: no panic, and every diagnostic names the file.
func TestTruncatedSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "samples", "compute", "*.yml"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for i := range len(data) {
			_, d1 := ParseCompute("x.yml", data[:i])
			it, d2 := ParseInstanceTypes("x.yml", data[:i])
			if it != nil {
				d2 = append(d2, it.CheckSelectors([]plan.Compute{{Name: "k", Type: plan.ComputeKubernetes,
					NodeSelector: []plan.Label{{Key: "pool", Value: "ml"}}}})...)
			}
			for _, d := range append(d1, d2...) {
				require.Equal(t, "x.yml", d.Pos.File, "%s[:%d]: %s", f, i, d.Summary)
			}
		}
	}
}
