package compiler

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// yaml.v3 reports some errors without a line: bytes that are not YAML text
// (NUL and other control characters, invalid UTF-8), and aliases of anchors
// it does not know. locateYAMLError finds where they are, so every syntax
// error points into the file.

// anchorErrorRE matches yaml.v3's alias errors and captures the anchor.
var anchorErrorRE = regexp.MustCompile(`^(?:unknown anchor '(.*)' referenced|anchor '(.*)' value contains itself)$`)

// locateYAMLError returns the position, summary and detail of a yaml.v3
// error message that has no line, ok false when it cannot place it.
func locateYAMLError(name string, data []byte, text string) (pos plan.Pos, summary, detail string, ok bool) {
	if isEncodingError(text) {
		off, what, found := firstNonText(data)
		if !found {
			return pos, "", "", false
		}
		return offsetPos(name, data, off), "yaml syntax error: the file holds " + what,
			"save the file as UTF-8 text: YAML allows no control characters but tabs and line breaks", true
	}
	if m := anchorErrorRE.FindStringSubmatch(text); m != nil {
		anchor := m[1] + m[2]
		off := aliasOffset(data, anchor)
		if off < 0 {
			return pos, "", "", false
		}
		return offsetPos(name, data, off), "yaml syntax error: " + text,
			fmt.Sprintf("define the anchor with &%s on a value before this alias (and outside it), or write the value here", anchor), true
	}
	return pos, "", "", false
}

// isEncodingError reports whether a yaml.v3 message is one of its reader's:
// the input is not UTF-8 text YAML allows.
func isEncodingError(text string) bool {
	return strings.Contains(text, "control characters are not allowed") || strings.Contains(text, "UTF-8") ||
		strings.Contains(text, "Unicode character")
}

// firstNonText finds the first byte that is not YAML text: invalid UTF-8 or
// a character outside YAML's printable set. It leaves UTF-16 files (a byte
// order mark first) to yaml.v3.
func firstNonText(data []byte) (int, string, bool) {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		return 0, "", false
	}
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return off, fmt.Sprintf("a byte that is not UTF-8 (0x%02x)", data[off]), true
		case r == 0:
			return off, "a NUL byte", true
		case !yamlPrintable(r):
			return off, fmt.Sprintf("the control character %U", r), true
		}
		off += size
	}
	return 0, "", false
}

// yamlPrintable is YAML's set of characters a stream may hold.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7E:
		return true
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// aliasOffset finds the first alias *anchor outside a comment, -1 for none.
func aliasOffset(data []byte, anchor string) int {
	if anchor == "" {
		return -1
	}
	alias := []byte("*" + anchor)
	lineStart := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		for from := 0; from < len(line); {
			i := bytes.Index(line[from:], alias)
			if i < 0 {
				break
			}
			i += from
			end := i + len(alias)
			if inComment(line[:i]) {
				break
			}
			if (i == 0 || isAliasBoundary(line[i-1])) && (end == len(line) || isAliasBoundary(line[end])) {
				return lineStart + i
			}
			from = i + 1
		}
		lineStart += len(line)
	}
	return -1
}

// isAliasBoundary reports whether b may stand next to an alias.
func isAliasBoundary(b byte) bool {
	return strings.IndexByte(" \t\r\n,[]{}:-", b) >= 0
}

// inComment reports whether a line's text so far has opened a comment: a #
// at its start or after a space, outside quotes.
func inComment(prefix []byte) bool {
	var quote byte
	for i, b := range prefix {
		switch {
		case quote != 0:
			if b == quote {
				quote = 0
			}
		case b == '"' || b == '\'':
			quote = b
		case b == '#' && (i == 0 || prefix[i-1] == ' ' || prefix[i-1] == '\t'):
			return true
		}
	}
	return false
}

// offsetPos is the line and column of a byte offset; columns count
// characters, as yaml.v3's do.
func offsetPos(name string, data []byte, off int) plan.Pos {
	off = min(off, len(data))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return plan.Pos{File: name, Line: line, Col: utf8.RuneCount(before[start:]) + 1}
}
