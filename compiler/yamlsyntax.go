package compiler

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// yaml.v3 gives a syntax error a line but no column, and no line at all on
// the first line; for errors its parser finds, the line is the one before
// where the enclosing mapping or list starts, not where the problem is.
// locateSyntax finds the problem itself with yaml.v3: the shortest prefix
// of the file that yaml.v3 refuses with the same message ends just after
// the byte that made it fail. Prefixes shorter than that either parse or
// fail for another reason (their end), so a binary search finds it.

// locateBudget bounds the bytes locateSyntax has yaml.v3 read in all,
// so that a syntax error late in a large file costs a few parses of it at
// most: past it, the error keeps yaml.v3's line.
const locateBudget = 64 << 20

// locateSyntax returns the line and column of the problem yaml.v3 reports
// as msg (without "yaml: line N: "), line its line (0 when it gave none);
// ok is false when it cannot be placed within locateBudget.
func locateSyntax(name string, data []byte, msg string, line int) (plan.Pos, bool) {
	// The problem is on line, or after it: yaml.v3's line is where it
	// saw the problem, or where what encloses it starts, or the line
	// before that.
	lo := lineOffset(data, max(line, 1))
	budget := locateBudget
	fails := func(n int) bool {
		budget -= n
		return yamlProblem(data[:n]) == msg
	}
	// Grow the prefix from lo until it fails with msg, then narrow it.
	step, hi := 64, len(data)
	for n := lo + step; n < len(data); n = lo + step {
		if budget < n {
			return plan.Pos{}, false
		}
		if fails(n) {
			hi = n
			break
		}
		lo, step = n, step*2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if budget < mid {
			return plan.Pos{}, false
		}
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if hi == 0 || yamlProblem(data[:hi]) != msg {
		return plan.Pos{}, false
	}
	off := hi - 1
	if strings.HasPrefix(msg, "did not find expected ',' or") {
		// Any prefix ending inside the list or mapping fails so: point
		// at where it opens.
		off = unclosedAt(data, off, msg[len(msg)-2])
	}
	return offsetPos(name, data, off), true
}

// unclosedAt finds the [ (for close ']') or { that is still open at off,
// skipping quoted text; off itself when there is none.
func unclosedAt(data []byte, off int, close byte) int {
	open := byte('[')
	if close == '}' {
		open = '{'
	}
	var stack []int
	for i := 0; i <= off && i < len(data); i++ {
		switch b := data[i]; b {
		case '"', '\'':
			i = quoteEnd(data, i) - 1
		case '[', '{':
			stack = append(stack, i)
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	for j := len(stack) - 1; j >= 0; j-- {
		if data[stack[j]] == open {
			return stack[j]
		}
	}
	return off
}

// yamlProblem is the message of the first syntax error yaml.v3 finds in
// data, every document read, without its "yaml: line N: " prefix; "" when
// there is none.
func yamlProblem(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				return m[2]
			}
			return err.Error()
		}
	}
}

// lineOffset is the byte offset where a line (1-based) starts, len(data)
// past the last.
func lineOffset(data []byte, line int) int {
	off := 0
	for i := 1; i < line; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return len(data)
		}
		off += j + 1
	}
	return off
}

// firstNonBlank is the position of a line's first character that is not
// a space, its first column when there is none.
func firstNonBlank(name string, data []byte, line int) plan.Pos {
	off := lineOffset(data, line)
	end := off + bytes.IndexByte(data[off:], '\n')
	if end < off {
		end = len(data)
	}
	text := data[off:end]
	col := len(text) - len(bytes.TrimLeft(text, " \t")) + 1
	if col > len(text) {
		col = 1
	}
	return plan.Pos{File: name, Line: max(line, 1), Col: col}
}

// syntaxAdvice says what to do about a yaml.v3 syntax error.
func syntaxAdvice(msg string) string {
	switch {
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		return `a second ": " in a plain value starts another key: quote the value ("a: b"), or put the key on its own line`
	case msg == "did not find expected key":
		return "line this key up with the keys of its mapping, or indent it under the key it belongs to"
	case msg == "did not find expected '-' indicator":
		return "line this up with the - entries of its list, or indent it under one of them"
	case msg == "found unexpected end of stream":
		return "close the quote opened here"
	case msg == "did not find expected ',' or ']'":
		return "close the list opened here with ], and separate its items with commas"
	case msg == "did not find expected ',' or '}'":
		return "close the mapping opened here with }, and separate its entries with commas"
	case msg == "did not find expected node content":
		return "write a value here, or close the list or mapping opened here"
	case msg == "found character that cannot start any token":
		return "quote the value: a plain value cannot start with @ or `"
	case msg == "could not find expected ':'":
		return `end the key with ":", or indent the lines of a long value under its key`
	case msg == "found unknown escape character":
		return `write \\ for a backslash in double quotes, or use single quotes`
	}
	return "fix the YAML syntax here"
}
