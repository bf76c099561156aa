package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Read reads the complete lines of the metrics file at path from byte
// offset on, at most maxBytes of them (DefaultMaxBytes when maxBytes <= 0),
// and returns their records and the offset to read from next. A partial
// last line is left for the next read. Malformed lines are skipped (a
// Reader counts them). A missing file is no records yet. A file shorter
// than offset was replaced (a new attempt of the step): it is read from the
// start, and the returned offset is then below the one given.
func Read(path string, offset int64, maxBytes int) ([]Record, int64, error) {
	recs, next, _, err := read(path, offset, maxBytes)
	return recs, next, err
}

func read(path string, offset int64, maxBytes int) (recs []Record, next int64, malformed int, err error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, 0, nil
	}
	if err != nil {
		return nil, offset, 0, fmt.Errorf("read metrics file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, offset, 0, fmt.Errorf("read metrics file: %w", err)
	}
	if info.Size() < offset {
		offset = 0
	}
	if info.Size() == offset {
		return nil, offset, 0, nil
	}
	// The window ends at the size seen, so a poll of a small file allocates
	// little; a line growing meanwhile is read next time.
	buf := make([]byte, min(int64(maxBytes), info.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, 0, fmt.Errorf("read metrics file: %w", err)
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if n < maxBytes {
			// A partial last line: wait for its end.
			return nil, offset, 0, nil
		}
		// One line longer than maxBytes: skip past it, when it has ended.
		skip, err := lineEnd(f, offset+int64(n))
		if err != nil || skip < 0 {
			return nil, offset, 0, err
		}
		return nil, skip, 1, nil
	}
	recs, malformed = parseLines(buf[:end+1])
	return recs, offset + int64(end) + 1, malformed, nil
}

// Parse parses the complete lines of a metrics file's bytes (a copy read
// from a datastore), skipping blank ones and counting malformed ones.
func Parse(buf []byte) (recs []Record, malformed int) { return parseLines(buf) }

// parseLines parses complete lines, skipping blank ones and counting
// malformed ones.
func parseLines(buf []byte) (recs []Record, malformed int) {
	for b := range bytes.Lines(buf) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if r, ok := parse(b); ok {
			recs = append(recs, r)
		} else {
			malformed++
		}
	}
	return recs, malformed
}

// lineEnd is the offset just past the first newline at or after from, or -1
// when the file has none yet.
func lineEnd(f *os.File, from int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, from)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return from + int64(i) + 1, nil
		}
		from += int64(n)
		if errors.Is(err, io.EOF) {
			return -1, nil
		}
		if err != nil {
			return -1, fmt.Errorf("read metrics file: %w", err)
		}
	}
}

// Reader reads a metrics file as it grows. The zero value with Path set
// reads from the start. It is not safe for concurrent use.
type Reader struct {
	// Path is the metrics file.
	Path string
	// Offset is where the next Next reads from.
	Offset int64
	// Malformed counts the lines skipped so far.
	Malformed int
	// Restarts counts the times the file was found replaced and read again
	// from the start.
	Restarts int
}

// Next returns the records of the complete lines written since the last
// call, reading at most maxBytes (see Read).
func (r *Reader) Next(maxBytes int) ([]Record, error) {
	recs, next, bad, err := read(r.Path, r.Offset, maxBytes)
	if err != nil {
		return nil, err
	}
	if next < r.Offset {
		r.Restarts++
	}
	r.Offset, r.Malformed = next, r.Malformed+bad
	return recs, nil
}
