package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler"
)

func TestCompilerLimitsFromEnvironment(t *testing.T) {
	env := map[string]string{
		"PORCH_MAX_FILE_BYTES": "20971520", "PORCH_MAX_TOTAL_BYTES": "134217728", "PORCH_MAX_STEPS": "50000", "PORCH_MAX_DEPTH": "30",
		"PORCH_MAX_INPUTS": "5000", "PORCH_MAX_PLAN_INPUTS": "1000000", "PORCH_MAX_ALIAS_NODES": "7",
		"PORCH_MAX_YAML_NODES": "3000000",
	}
	l, err := compilerLimits(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, compiler.Limits{MaxFileBytes: 20 << 20, MaxTotalBytes: 128 << 20, MaxSteps: 50000, MaxDepth: 30, MaxInputs: 5000,
		MaxPlanInputs: 1000000, MaxAliasNodes: 7, MaxYAMLNodes: 3000000}, l)

	l, err = compilerLimits(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, compiler.Limits{}, l, "unset: the compiler's defaults")

	for _, bad := range []string{"0", "-1", "ten", "1e6", "10MiB", "99999999999"} {
		_, err := compilerLimits(func(k string) string {
			if k == "PORCH_MAX_STEPS" {
				return bad
			}
			return ""
		})
		assert.EqualError(t, err, `PORCH_MAX_STEPS="`+bad+`": expected a whole number of at least 1 (unset it for the default)`)
	}
}

// TestCompileFileReturnsWhenCanceled: a signal ends the command even while
// the compiler is inside something it cannot interrupt, here a read that
// never returns.
func TestCompileFileReturnsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stuck := make(chan struct{})
	defer close(stuck)
	read := func(string) ([]byte, error) {
		cancel() // the signal arrives
		<-stuck
		return nil, os.ErrNotExist
	}
	p, diags, err := compileFile(ctx, "p.yml", compiler.Options{ReadFile: read})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, p)
	assert.Empty(t, diags)
}

// TestInterruptedWhileCompiling: validate, compile and run stop with exit
// code 130 when interrupted while they compile, printing no diagnostics.
func TestInterruptedWhileCompiling(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	file := filepath.Join(dir, "p.yml")
	require.NoError(t, os.WriteFile(file, []byte("type: pipeline\njobs:\n  a:\n    command: echo hi\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"validate", file}, {"compile", file}, {"run", file}} {
		var stdout, stderr bytes.Buffer
		code := Run(ctx, args, nil, &stdout, &stderr)
		assert.Equal(t, ExitInterrupted, code, "%v: %s", args, stderr.String())
		assert.Equal(t, "porch: interrupted\n", stderr.String(), args)
		assert.Empty(t, stdout.String(), args)
	}
}
