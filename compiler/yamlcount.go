package compiler

import "bytes"

// yaml.v3 builds a file's whole node tree before it hands any of it back,
// some 200 bytes a node: a dense 10 MiB file (x: [0,0,0,...]) is five
// million nodes and over a gigabyte. countNodes bounds that before yaml.v3
// sees the file, in one pass over its bytes that allocates nothing.
//
// It counts what can become a node: each document and its root, every
// scalar (plain, quoted or block), alias and flow collection, and every
// "- ", "? " and line-ending ":" (each stands for a block collection or a
// value left empty). The count is close to the nodes yaml.v3 builds: a
// list of "- x" lines counts two a line for one node each, and an empty
// value in a flow mapping ({a, b}) is not counted, so on any input it is
// within a factor of two of them.

// nodeCounter is countNodes' state as it walks the bytes.
type nodeCounter struct {
	data  []byte
	max   int
	count int
	// flow is the depth of [ and { at the current byte; indent is the
	// current line's indentation.
	flow, indent int
	// blockIndent is the indentation of the line that started a block
	// scalar (| or >) whose lines are being skipped, -1 for none.
	blockIndent int
	started     bool
}

// countNodes counts the nodes of data, stopping where the count passes
// max: it returns the count and that byte offset, or -1 when data holds
// max nodes or fewer.
func countNodes(data []byte, max int) (int, int) {
	c := &nodeCounter{data: data, max: max, blockIndent: -1}
	for i := 0; i < len(data); {
		var over bool
		if i, over = c.lineStart(i); over {
			return c.count, i
		}
		if i, over = c.tokens(i); over {
			return c.count, i
		}
	}
	return c.count, -1
}

// add counts n nodes and says whether the count is past max.
func (c *nodeCounter) add(n int) bool {
	c.count += n
	return c.count > c.max
}

// lineStart handles the start of the line at i: a block scalar's
// continuation, directives, document markers and the first document's
// start. It returns where the line's tokens start (or the next line).
func (c *nodeCounter) lineStart(i int) (int, bool) {
	d := c.data
	j := i
	for j < len(d) && (d[j] == ' ' || d[j] == '\t') {
		j++
	}
	end := lineEnd(d, j)
	blank := j == end || d[j] == '\r' || d[j] == '#'
	if c.blockIndent >= 0 {
		if j == end || d[j] == '\r' || j-i > c.blockIndent {
			return end + 1, false
		}
		c.blockIndent = -1
	}
	c.indent = j - i
	if c.flow == 0 && j == i {
		switch {
		case hasMarker(d[j:end], "---"):
			c.started = true
			return j + 3, c.add(2)
		case hasMarker(d[j:end], "...") || (j < end && d[j] == '%'):
			return end + 1, false
		}
	}
	if !c.started && !blank {
		c.started = true
		return j, c.add(2)
	}
	return j, false
}

// tokens counts the tokens from i to the end of their line (or further,
// through a quoted scalar's line breaks), returning where the next line
// starts, or the offset where the count passed max.
func (c *nodeCounter) tokens(i int) (int, bool) {
	d := c.data
	for i < len(d) {
		b := d[i]
		next, n := i+1, 0
		switch {
		case b == '\n':
			return i + 1, false
		case b == ' ' || b == '\t' || b == '\r' || b == ',':
		case b == '#' && (i == 0 || d[i-1] == ' ' || d[i-1] == '\t' || d[i-1] == '\n'):
			next = lineEnd(d, i)
		case b == '"' || b == '\'':
			next, n = quoteEnd(d, i), 1
		case b == '[' || b == '{':
			c.flow++
			n = 1
		case b == ']' || b == '}':
			c.flow = max(c.flow-1, 0)
		case (b == '-' || b == '?') && blankAt(d, i+1):
			n = 1
		case b == ':' && (blankAt(d, i+1) || c.flow > 0):
			if restBlank(d, i+1) {
				n = 1
			}
		case b == '&' || b == '!':
			next = tokenEnd(d, i)
		case b == '*':
			next, n = tokenEnd(d, i), 1
		case (b == '|' || b == '>') && c.flow == 0:
			c.blockIndent = c.indent
			next, n = lineEnd(d, i), 1
		default:
			next, n = c.plainEnd(i), 1
		}
		if n > 0 && c.add(n) {
			return i, true
		}
		i = next
	}
	return i, false
}

// lineEnd is the offset of the '\n' ending the line holding i, len(d)
// for the last line.
func lineEnd(d []byte, i int) int {
	if j := bytes.IndexByte(d[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(d)
}

// hasMarker reports whether a line starts with a document marker (---
// or ...) standing alone or followed by a space.
func hasMarker(line []byte, m string) bool {
	return bytes.HasPrefix(line, []byte(m)) && blankAt(line, len(m))
}

// blankAt reports whether i is past the end, or at a space or line break:
// what must follow an indicator (- ? :).
func blankAt(d []byte, i int) bool {
	return i >= len(d) || d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n'
}

// restBlank reports whether nothing but spaces and a comment follow i on
// its line.
func restBlank(d []byte, i int) bool {
	for ; i < len(d); i++ {
		switch d[i] {
		case ' ', '\t', '\r':
		case '\n', '#':
			return true
		default:
			return false
		}
	}
	return true
}

// tokenEnd is the end of the anchor, alias or tag starting at i.
func tokenEnd(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case ' ', '\t', '\r', '\n', ',', '[', ']', '{', '}':
			return i
		}
	}
	return i
}

// quoteEnd is the offset just after the quoted scalar starting at i,
// through line breaks if need be (len(d) when it never closes).
func quoteEnd(d []byte, i int) int {
	q := d[i]
	for j := i + 1; j < len(d); j++ {
		switch {
		case q == '"' && d[j] == '\\':
			j++
		case q == '\'' && d[j] == q && j+1 < len(d) && d[j+1] == q:
			j++
		case d[j] == q:
			return j + 1
		}
	}
	return len(d)
}

// plainEnd is the end of the plain scalar starting at i: at ": ", " #"
// or the line's end, and in a flow collection at , [ ] { } and ":".
func (c *nodeCounter) plainEnd(i int) int {
	d := c.data
	for j := i + 1; j < len(d); j++ {
		switch b := d[j]; {
		case b == '\n':
			return j
		case b == ':' && (blankAt(d, j+1) || c.flow > 0):
			return j
		case b == '#' && (d[j-1] == ' ' || d[j-1] == '\t'):
			return j
		case c.flow > 0 && (b == ',' || b == '[' || b == ']' || b == '{' || b == '}'):
			return j
		}
	}
	return len(d)
}
