package command

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTailBufferKeepsLastLines(t *testing.T) {
	tb := newTailBuffer(3, 100)
	var all strings.Builder
	for i := 1; i <= 7; i++ {
		all.WriteString("line " + strconv.Itoa(i) + "\r\n")
	}
	// Chunks split lines anywhere, as pipe reads do.
	s := all.String()
	for len(s) > 0 {
		n := min(4, len(s))
		tb.feed([]byte(s[:n]))
		s = s[n:]
	}
	tb.flush()
	assert.Equal(t, []string{"line 5", "line 6", "line 7"}, tb.lines())
}

func TestTailBufferFewLinesAndPartialLast(t *testing.T) {
	tb := newTailBuffer(20, 100)
	tb.feed([]byte("one\ntwo"))
	tb.flush()
	assert.Equal(t, []string{"one", "two"}, tb.lines())
	assert.Empty(t, newTailBuffer(20, 100).lines())
}

func TestTailBufferCutsLongLines(t *testing.T) {
	tb := newTailBuffer(2, 5)
	tb.feed([]byte(strings.Repeat("x", 1000)))
	tb.feed([]byte(strings.Repeat("y", 1000) + "\nshort\n"))
	tb.flush()
	assert.Equal(t, []string{"xxxxx [line cut]", "short"}, tb.lines())
}
