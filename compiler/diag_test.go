package compiler

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestDiagnostics")

// TestDiagnostics compiles every testdata/TestDiagnostics/*.yml and compares
// the formatted diagnostics with <case>.golden. Files referenced by the
// cases live in components/.
func TestDiagnostics(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "TestDiagnostics", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".yml")
		t.Run(name, func(t *testing.T) {
			p, diags := Compile(file, Options{})
			require.NotEmpty(t, diags, "the case must produce diagnostics")
			if name == "warnings" {
				assert.NotNil(t, p, "warnings alone must not stop compilation")
				assert.False(t, diags.HasErrors())
			} else {
				assert.Nil(t, p, "a plan despite errors")
				assert.True(t, diags.HasErrors())
			}
			assertGolden(t, file, diags, "TestDiagnostics")
		})
	}
}

// assertGolden compares diagnostics' text with the .golden file beside the
// case file, or writes it with -update.
func assertGolden(t *testing.T, file string, diags Diagnostics, test string) {
	t.Helper()
	var got bytes.Buffer
	diags.Format(&got)
	golden.Assert(t, file, got.Bytes(), *update, "run go test ./compiler -run "+test+" -update")
}

func TestFormat(t *testing.T) {
	d := Diagnostics{
		{Pos: plan.Pos{File: "a.yml", Line: 3, Col: 5}, Severity: Error, Summary: "bad thing", Detail: "fix it"},
		{Pos: plan.Pos{File: "a.yml", Line: 4}, Severity: Warning, Summary: "odd thing"},
		{Pos: plan.Pos{File: "a.yml"}, Severity: Error, Summary: "whole file"},
	}
	want := "a.yml:3:5: error: bad thing\n\tfix it\na.yml:4: warning: odd thing\na.yml: error: whole file\n"
	var b bytes.Buffer
	d.Format(&b)
	assert.Equal(t, want, b.String())
	assert.Equal(t, strings.TrimSuffix(want, "\n"), d.Error())
	assert.True(t, d.HasErrors())
	assert.False(t, d[1:2].HasErrors())
}

func TestSuggest(t *testing.T) {
	assert.Equal(t, `did you mean "environment"?`, suggest("enviroment", stepKeys))
	assert.Equal(t, "", suggest("zzzzzzzz", stepKeys))
	assert.Equal(t, 3, levenshtein("kitten", "sitting"))
}
