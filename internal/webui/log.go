package webui

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Bounds of one answer of the log endpoint: the tail a step's log opens
// with, and how much more one poll reads.
const (
	logTail  = 64 << 10
	logChunk = 256 << 10
)

// logView is a piece of a step's log.
type logView struct {
	Text string `json:"text"`
	// Offset is where the next piece starts: the page passes it back.
	Offset int64 `json:"offset"`
	// Cut says the text starts after the log's start: only its tail.
	Cut bool `json:"cut,omitempty"`
	// Where names the log's file.
	Where string `json:"where,omitempty"`
}

// log answers the piece of a step's log from ?offset=, or without one its
// tail: the page follows a running step's log by asking again from the
// offset it got.
func (s *server) log(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := contextFor(r)
	defer cancel()
	id, path := r.PathValue("run"), r.URL.Query().Get("path")
	offset := int64(-1)
	if o := r.URL.Query().Get("offset"); o != "" {
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("offset %q: expected a byte offset, 0 or more", o))
			return
		}
		offset = n
	}
	g, steps, what, err := s.graphAndSteps(ctx, id)
	if err != nil {
		s.runError(w, id, err, what)
		return
	}
	st, _, ok := s.findStep(ctx, id, g.Graph, steps, path)
	if !ok || logName(st.Type) == "" || s.opts.Files == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("run %s has no step %q with a log", id, path))
		return
	}
	rc, where, err := s.opts.Files.Open(ctx, id, st, logName(st.Type), max(offset, 0))
	if errors.Is(err, fs.ErrNotExist) {
		// Not written yet: the step has not started on its worker.
		writeJSON(w, logView{Offset: max(offset, 0), Where: where})
		return
	}
	if err != nil {
		apiError(w, http.StatusBadGateway, fmt.Sprintf("read the log of step %s: %v", path, err))
		return
	}
	defer rc.Close()
	v, err := readLog(rc, offset)
	if err != nil {
		apiError(w, http.StatusBadGateway, fmt.Sprintf("read the log of step %s (%s): %v", path, where, err))
		return
	}
	v.Where = where
	writeJSON(w, v)
}

// readLog reads from r, opened at offset (negative: at its start, for its
// tail): logChunk bytes at most from an offset, the last logTail bytes
// (from a line's start) for the tail. Text ends on a whole character.
func readLog(r io.Reader, offset int64) (logView, error) {
	if offset >= 0 {
		data, err := io.ReadAll(io.LimitReader(r, logChunk))
		data = data[:wholeRunes(data)]
		return logView{Text: string(data), Offset: offset + int64(len(data))}, err
	}
	var ring []byte
	var total int64
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		total += int64(n)
		ring = append(ring, buf[:n]...)
		if len(ring) > 2*logTail {
			ring = append(ring[:0], ring[len(ring)-logTail:]...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return logView{}, err
		}
	}
	v := logView{Offset: total}
	if len(ring) > logTail {
		ring = ring[len(ring)-logTail:]
		if i := bytes.IndexByte(ring, '\n'); i >= 0 {
			ring = ring[i+1:]
		}
		v.Cut = true
	}
	end := wholeRunes(ring)
	v.Text, v.Offset = string(ring[:end]), total-int64(len(ring)-end)
	return v, nil
}

// wholeRunes is the length of data's longest prefix that does not end
// in the middle of a UTF-8 character.
func wholeRunes(data []byte) int {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return i
			}
			break
		}
	}
	return len(data)
}
