package compiler

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParallelOddInput compiles malformed parallel steps: each must come
// back as positioned errors, never a panic or a plan.
func TestParallelOddInput(t *testing.T) {
	head := "type: pipeline\njobs:\n  p:\n    type: parallel\n    inputs:\n      d: {type: uri_folder, path: .}\n    input_data: ${{inputs.d}}\n"
	for name, body := range map[string]string{
		"task list":        "    task: []\n",
		"task null":        "    task:\n",
		"nested keys":      "    partition_keys: [[a]]\n    task: {entry_script: s.py}\n",
		"resources scalar": "    resources: 5\n    retry_settings: x\n    task: {entry_script: s.py}\n",
		"flag at end":      "    task: {entry_script: s.py, program_arguments: --error_threshold}\n",
		"open group":       "    task: {entry_script: s.py, program_arguments: \"$[[ --e 1\"}\n",
		"open ref":         "    task: {entry_script: s.py, program_arguments: \"--e ${{inputs.d\"}\n",
		"input_data list":  "    input_data: [a]\n    task: {entry_script: s.py}\n",
		"no task":          "",
	} {
		read := memFS(map[string][]byte{"p.yml": []byte(head + body), "s.py": []byte("def run(b):\n    return b\n")})
		p, diags := Compile("p.yml", Options{ReadFile: read})
		assert.Nil(t, p, name)
		if assert.True(t, diags.HasErrors(), name) {
			for _, d := range diags {
				assert.NotZero(t, d.Pos.Line, "%s: %s", name, d.Summary)
			}
		}
	}
}
