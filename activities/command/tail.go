package command

import "bytes"

// tailLines is how many lines of stderr a failure reports.
const tailLines = 20

// maxTailLine caps one kept line, so a process printing one endless line
// cannot grow the buffer.
const maxTailLine = 4 << 10

// tailBuffer keeps the last lines of a stream in a fixed ring. It is fed
// chunks as they come; lines longer than maxLine are cut and marked.
type tailBuffer struct {
	ring    []string
	next    int
	full    bool
	partial []byte
	cut     bool
	maxLine int
}

func newTailBuffer(lines, maxLine int) *tailBuffer {
	return &tailBuffer{ring: make([]string, lines), maxLine: maxLine}
}

// feed adds a chunk of the stream.
func (t *tailBuffer) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if room := t.maxLine - len(t.partial); len(seg) > room {
			seg, t.cut = seg[:room], true
		}
		t.partial = append(t.partial, seg...)
		if i < 0 {
			return
		}
		t.push()
		p = p[i+1:]
	}
}

// Write feeds p; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.feed(p)
	return len(p), nil
}

// flush ends the stream: a last line without a newline still counts.
func (t *tailBuffer) flush() {
	if len(t.partial) > 0 || t.cut {
		t.push()
	}
}

func (t *tailBuffer) push() {
	line := string(bytes.TrimSuffix(t.partial, []byte("\r")))
	if t.cut {
		line += " [line cut]"
	}
	t.ring[t.next] = line
	t.next = (t.next + 1) % len(t.ring)
	if t.next == 0 {
		t.full = true
	}
	t.partial, t.cut = t.partial[:0], false
}

// lines returns the kept lines, oldest first.
func (t *tailBuffer) lines() []string {
	if !t.full {
		return append([]string(nil), t.ring[:t.next]...)
	}
	out := make([]string, 0, len(t.ring))
	out = append(out, t.ring[t.next:]...)
	return append(out, t.ring[:t.next]...)
}
