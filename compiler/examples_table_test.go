package compiler

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table of what porch makes of azureml-examples cli/jobs/, in
// examplesPage, lies between these markers.
const (
	examplesTableBegin = "<!-- azureml-examples cli/jobs table: TestExamplesTable writes it -->\n"
	examplesTableEnd   = "<!-- end of azureml-examples table -->\n"
)

// examplesPage is the documentation page that holds the table.
var examplesPage = filepath.Join("..", "docs", "azure-examples.md")

// TestExamplesTable checks every pipeline and sweep job under
// azureml-examples cli/jobs/ with no catalogue, as `porch validate` does
// (a pipeline component file on its own, as a step of a pipeline, so its
// inputs need no values), and checks that docs/azure-examples.md's table says what
// came of each: compiled, or refused with the first error. -update
// rewrites the table.
func TestExamplesTable(t *testing.T) {
	jobs := filepath.Join(examplesDir, "cli", "jobs")
	if _, err := os.Stat(jobs); err != nil {
		t.Skipf("azureml-examples not found at %s", examplesDir)
	}
	text, err := os.ReadFile(examplesPage)
	require.NoError(t, err)
	begin := bytes.Index(text, []byte(examplesTableBegin))
	end := bytes.Index(text, []byte(examplesTableEnd))
	require.True(t, begin >= 0 && end > begin, "%s has no %q ... %q markers", examplesPage, examplesTableBegin, examplesTableEnd)
	table := examplesTable(t, jobs)
	start := begin + len(examplesTableBegin)
	if string(text[start:end]) == table {
		return
	}
	if !*update {
		t.Fatalf("%s's azureml-examples table is out of date: run go test ./compiler -run TestExamplesTable -update\nwant:\n%s", examplesPage, table)
	}
	out := append(append(append([]byte{}, text[:start]...), table...), text[end:]...)
	require.NoError(t, os.WriteFile(examplesPage, out, 0o644))
}

// examplesTable is a markdown table with a row per pipeline or sweep job
// under jobs, and a closing line with the counts.
func examplesTable(t *testing.T, jobs string) string {
	var b strings.Builder
	b.WriteString("| File under `cli/jobs/` | porch validate | First error |\n|---|---|---|\n")
	compiled, refused := 0, 0
	for _, f := range pipelineFiles(t, jobs) {
		rel, err := filepath.Rel(jobs, f)
		require.NoError(t, err)
		ok, diags, what := validateLike(t, f)
		if ok {
			compiled++
			fmt.Fprintf(&b, "| `%s` | %s | |\n", filepath.ToSlash(rel), what)
			continue
		}
		refused++
		first := ""
		for _, d := range diags {
			if d.Severity == Error {
				first = firstErrorCell(f, d)
				break
			}
		}
		fmt.Fprintf(&b, "| `%s` | refused | %s |\n", filepath.ToSlash(rel), first)
	}
	fmt.Fprintf(&b, "\n%d files: %d pass, %d refused.\n", compiled+refused, compiled, refused)
	return b.String()
}

// validateLike checks a file as porch validate does: a component file as
// the one step of a pipeline (internal/cli checkComponent), keeping the
// diagnostics of the component's own files; a job as it is. what is the
// table's word for a file that passes.
func validateLike(t *testing.T, file string) (bool, Diagnostics, string) {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	root, _ := DecodeYAML(file, data, "", "")
	typ, _, isComponent := "", "", false
	if root != nil {
		typ, _, isComponent = ComponentFile(root)
	}
	if !isComponent {
		p, diags := Compile(file, Options{})
		return p != nil, diags, "compiles"
	}
	wrapper := filepath.Join(filepath.Dir(file), ".check.yml")
	src := "type: pipeline\njobs:\n  check:\n    component: ./" + filepath.Base(file) + "\n"
	_, all := Compile(wrapper, Options{ReadFile: func(n string) ([]byte, error) {
		if n == wrapper {
			return []byte(src), nil
		}
		return os.ReadFile(n)
	}})
	var diags Diagnostics
	for _, d := range all {
		if d.Pos.File != wrapper {
			diags = append(diags, d)
		}
	}
	return !diags.HasErrors(), diags, "ok (" + typ + " component)"
}

// firstErrorCell is an error's summary as a table cell, after its line
// and, when it is in another file than the row's (a component), that
// file's path relative to the row's folder; pipes are escaped.
func firstErrorCell(row string, d Diagnostic) string {
	where := fmt.Sprintf("line %d", d.Pos.Line)
	if d.Pos.File != row {
		rel, err := filepath.Rel(filepath.Dir(row), d.Pos.File)
		if err != nil {
			rel = d.Pos.File
		}
		where = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), d.Pos.Line)
	}
	// Paths in summaries are as the test sees them: show them from cli/jobs.
	summary := strings.ReplaceAll(d.Summary, filepath.Join(examplesDir, "cli", "jobs")+string(filepath.Separator), "")
	return strings.ReplaceAll(where+": "+summary, "|", `\|`)
}
