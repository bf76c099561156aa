package compiler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validParams holds, for each distribution porch draws from, the fields of
// a parameter that compiles.
var validParams = map[string][][2]string{
	"choice":      {{"values", "[1, 2]"}},
	"randint":     {{"upper", "3"}},
	"uniform":     {{"min_value", "0"}, {"max_value", "1"}},
	"loguniform":  {{"min_value", "0"}, {"max_value", "1"}},
	"quniform":    {{"min_value", "0"}, {"max_value", "1"}, {"q", "1"}},
	"qloguniform": {{"min_value", "0"}, {"max_value", "1"}, {"q", "1"}},
	"normal":      {{"mu", "0"}, {"sigma", "1"}},
	"lognormal":   {{"mu", "0"}, {"sigma", "1"}},
	"qnormal":     {{"mu", "0"}, {"sigma", "1"}, {"q", "1"}},
	"qlognormal":  {{"mu", "0"}, {"sigma", "1"}, {"q", "1"}},
}

// searchStep is a pipeline of one sweep step whose search space is the
// parameter x: its type on line 9, then its fields one a line.
func searchStep(kind string, fields [][2]string) string {
	var b strings.Builder
	b.WriteString("type: pipeline\njobs:\n  s:\n    type: sweep\n" +
		"    trial: {command: \"echo ${{inputs.x}}\", environment: {image: python}, inputs: {x: {type: number}}}\n" +
		"    objective: {primary_metric: m, goal: maximize}\n" +
		"    search_space:\n      x:\n")
	b.WriteString("        type: " + kind + "\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "        %s: %s\n", f[0], f[1])
	}
	return b.String()
}

// TestSearchSpaceFieldTypes puts a null, a list, a mapping and a value of
// the wrong type in each field of each distribution: each must be an error
// at the value that says what the field takes and what it found, where a
// null bound used to drop the parameter from the search space silently.
func TestSearchSpaceFieldTypes(t *testing.T) {
	bad := []string{"~", "null", "[1]", "{a: 1}"}
	badValues := []string{"~", "null", "{a: 1}", "abc", "true"}
	badNumbers := append(append([]string{}, bad...), "true", "abc", `""`)
	for kind, fields := range validParams {
		p, diags := Compile("p.yml", Options{ReadFile: memFS(map[string][]byte{"p.yml": []byte(searchStep(kind, fields))})})
		require.False(t, diags.HasErrors(), "%s: %s", kind, diags.Error())
		require.Len(t, p.Pipeline.Steps[0].Sweep.SearchSpace, 1, kind)

		for i, f := range fields {
			values := badNumbers
			if f[0] == "values" {
				values = badValues
			}
			for _, v := range values {
				broken := append([][2]string{}, fields...)
				broken[i][1] = v
				line, col := 10+i, 9+len(f[0])+2
				assertFieldError(t, searchStep(kind, broken), fmt.Sprintf("%s %s: %s", kind, f[0], v), line, col, f[0])
			}
		}
		for _, v := range bad {
			text := strings.Replace(searchStep(kind, fields), "type: "+kind, "type: "+v, 1)
			assertFieldError(t, text, fmt.Sprintf("%s type: %s", kind, v), 9, 15, "type")
		}
	}
}

// assertFieldError compiles text and wants one error, at line:col, that
// names the key, what it must be and what was found.
func assertFieldError(t *testing.T, text, name string, line, col int, key string) {
	t.Helper()
	var p any
	var diags Diagnostics
	require.NotPanics(t, func() {
		pl, d := Compile("p.yml", Options{ReadFile: memFS(map[string][]byte{"p.yml": []byte(text)})})
		p, diags = pl, d
	}, name)
	if !assert.True(t, diags.HasErrors(), "%s: compiled", name) {
		return
	}
	assert.Nil(t, p, name)
	require.Len(t, diags, 1, "%s: %s", name, diags.Error())
	d := diags[0]
	assert.Equal(t, [2]int{line, col}, [2]int{d.Pos.Line, d.Pos.Col}, "%s: %s", name, d.Summary)
	assert.True(t, strings.HasPrefix(d.Summary, key+" of parameter \"x\" must be "), "%s: %s", name, d.Summary)
	assert.Contains(t, d.Summary, ", found ", name)
	assert.NotEmpty(t, d.Detail, name)
}
