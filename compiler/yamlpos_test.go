package compiler

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestYAMLErrorPositions: the yaml.v3 errors that come without a line (bytes
// that are not text, unknown anchors) are placed in the file.
func TestYAMLErrorPositions(t *testing.T) {
	const head = "type: pipeline\njobs:\n  a:\n"
	cases := []struct{ name, src, want string }{
		{"nul", head + "    command: echo \x00 hi\n",
			"p.yml:4:19: error: yaml syntax error: the file holds a NUL byte\n"},
		{"invalid utf-8", head + "    command: echö \xff hi\n",
			"p.yml:4:19: error: yaml syntax error: the file holds a byte that is not UTF-8 (0xff)\n"},
		{"truncated utf-8", head + "    command: echo \xe2\x82",
			"p.yml:4:19: error: yaml syntax error: the file holds a byte that is not UTF-8 (0xe2)\n"},
		{"control character", head + "    command: \"echo \x07\"\n",
			"p.yml:4:20: error: yaml syntax error: the file holds the control character U+0007\n"},
		{"unknown anchor", head + "    # *nope in a comment\n    command: *nope\n",
			"p.yml:5:14: error: yaml syntax error: unknown anchor 'nope' referenced\n" +
				"\tdefine the anchor with &nope on a value before this alias (and outside it), or write the value here\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Compile("p.yml", Options{ReadFile: memFS(map[string][]byte{"p.yml": []byte(c.src)})})
			if assert.Len(t, diags, 1) {
				got := formatPos(diags[0].Pos) + ": " + diags[0].Severity.String() + ": " + diags[0].Summary + "\n"
				if c.name == "unknown anchor" {
					got += "\t" + diags[0].Detail + "\n"
				}
				assert.Equal(t, c.want, got)
				assert.NotEmpty(t, diags[0].Detail)
			}
		})
	}
}

// TestYAMLSyntaxPositions: every yaml.v3 syntax error gets a line and a
// column, at the character that makes the file invalid, on the first line
// too (where yaml.v3 gives no line) and for errors yaml.v3 places on the
// line before the mapping or list that holds them.
func TestYAMLSyntaxPositions(t *testing.T) {
	cases := []struct{ src, want string }{
		{"type: pipeline: x\n", "p.yml:1:15: error: yaml syntax error: mapping values are not allowed in this context"},
		{"type: `pipeline`\n", "p.yml:1:7: error: yaml syntax error: found character that cannot start any token"},
		{"type: pipeline\njobs:\n  a:\n    command: echo\n   inputs: {}\n",
			"p.yml:5:4: error: yaml syntax error: did not find expected key"},
		{"type: pipeline\njobs:\n  a:\n    command: \"echo\n", "p.yml:4:14: error: yaml syntax error: found unexpected end of stream"},
		{"type: pipeline\ntags: [a, b\njobs: {}\n", "p.yml:2:7: error: yaml syntax error: did not find expected ',' or ']'"},
		{"type: pipeline\ntags: {a: [1, 2], b: 3\n", "p.yml:2:7: error: yaml syntax error: did not find expected ',' or '}'"},
		{"type: pipeline\njobs:\n  - a\n  b: 1\n", "p.yml:4:4: error: yaml syntax error: did not find expected '-' indicator"},
		{"type: pipeline\njobs: {a: {command: \"\\q\"}}\n", "p.yml:2:22: error: yaml syntax error: found unknown escape character"},
		{"type: pipeline\n- jobs\n", "p.yml:2:1: error: yaml syntax error: did not find expected key"},
	}
	for _, c := range cases {
		_, diags := Compile("p.yml", Options{ReadFile: memFS(map[string][]byte{"p.yml": []byte(c.src)})})
		if assert.Len(t, diags, 1, c.src) {
			assert.Equal(t, c.want, formatPos(diags[0].Pos)+": "+diags[0].Severity.String()+": "+diags[0].Summary, c.src)
			assert.NotEmpty(t, diags[0].Detail)
		}
	}
}
