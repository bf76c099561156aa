package minibatch

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// planTable plans an mltable input: by partition key tuple when keys are
// given, else by approximate size, never across file boundaries.
func planTable(in Input, w *writer) error {
	src := in.source()
	name, ok := src.name(in.Path)
	if !ok {
		return inputErrorf(in.Path, 0, "the input's path is not an absolute path: give the input a full path")
	}
	t, err := loadTable(src, name)
	if err != nil {
		return err
	}
	w.sum.Tabular = true
	w.sum.Files = len(t.files)
	w.sum.Notes = t.notes
	for _, f := range t.files {
		w.sum.Bytes += f.size
	}
	if len(in.PartitionKeys) > 0 {
		return planPartitions(src, t, in.PartitionKeys, w)
	}
	limit, err := tableBatchSize(in.Size)
	if err != nil {
		return err
	}
	hs := headers{mode: t.read.Header}
	for _, f := range t.files {
		if err := splitFile(src, f, t.read, limit, &hs, w); err != nil {
			return err
		}
	}
	return nil
}

// tableBatchSize reads mini_batch_size for tabular input: a number of
// bytes, with or without a unit.
func tableBatchSize(size string) (int64, error) {
	if size == "" {
		return DefaultTableBytes, nil
	}
	n, _, err := ParseSize(size)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, inputErrorf("", 0, "mini_batch_size %q is zero: write an approximate size such as 1mb", size)
	}
	return n, nil
}

// records reads a delimited file record by record, knowing the byte offset
// where each record ends. Quoted fields may hold delimiters and line ends.
type records struct {
	f    io.Closer
	r    *csv.Reader
	path string
}

func openRecords(src source, f file, delimiter string) (*records, error) {
	path := f.path
	r, err := src.fsys.Open(f.name)
	if err != nil {
		return nil, fmt.Errorf("read input file: %w", err)
	}
	c := csv.NewReader(r)
	c.Comma, _ = utf8.DecodeRuneInString(delimiter)
	c.FieldsPerRecord = -1 // pandas decides what ragged rows mean
	c.LazyQuotes = true    // a stray quote in an unquoted field is text, as for pandas
	c.ReuseRecord = true
	return &records{f: r, r: c, path: path}, nil
}

// next returns the next record and the offset just past it (its line end
// included), or io.EOF.
func (s *records) next() ([]string, int64, error) {
	rec, err := s.r.Read()
	if err == nil || errors.Is(err, io.EOF) {
		return rec, s.r.InputOffset(), err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, 0, inputErrorf(s.path, pe.StartLine, "cannot read the delimited record (%v): fix the file's quoting, or set read_delimited delimiter", pe.Err)
	}
	return nil, 0, fmt.Errorf("read %q: %w", s.path, err)
}

func (s *records) close() { _ = s.f.Close() }

// headers tracks where each file's header record is: in the file itself,
// in the first file (from_first_file), or nowhere (no_header).
type headers struct {
	mode  string
	first *fileHeader // from_first_file: the first file that has a record
}

// fileHeader is the header record a file's parts are read with.
type fileHeader struct {
	own     bool   // the file starts with its own header record
	path    string // the file holding the header; "" with no_header
	length  int64  // bytes of the header record, line end included
	columns []string
}

// read returns the header of the file s reads, consuming its header record
// when the file has one. ok is false when the file holds no record at all.
func (hs *headers) read(s *records) (h fileHeader, ok bool, err error) {
	switch {
	case hs.mode == HeaderNone:
		return fileHeader{}, true, nil
	case hs.mode == HeaderFromFirst && hs.first != nil:
		return *hs.first, true, nil
	}
	rec, end, err := s.next()
	if errors.Is(err, io.EOF) {
		return fileHeader{}, false, nil
	}
	if err != nil {
		return fileHeader{}, false, err
	}
	cols := append([]string(nil), rec...)
	if len(cols) > 0 {
		cols[0] = strings.TrimPrefix(cols[0], "\ufeff")
	}
	h = fileHeader{own: true, path: s.path, length: end, columns: cols}
	if hs.mode == HeaderFromFirst {
		first := h
		first.own = false
		hs.first = &first
	}
	return h, true, nil
}

// part returns a part of path from start to end with rows rows, telling the
// reader which header to prepend.
func (h fileHeader) part(path string, start, end int64, rows int) Part {
	p := Part{Path: path, Offset: start, Length: end - start, Rows: rows}
	switch {
	case h.path == "": // no_header
	case h.own && start == 0: // the part starts with its own header
	case h.own:
		p.Header, p.HeaderLength = true, h.length
	default: // from_first_file: another file's header
		p.Header, p.HeaderLength, p.HeaderPath = true, h.length, h.path
	}
	return p
}

// splitFile cuts one file into batches of about limit bytes, each ending on
// a record boundary: a batch ends after the record that brings it to limit.
func splitFile(src source, f file, read ReadOptions, limit int64, hs *headers, w *writer) error {
	s, err := openRecords(src, f, read.Delimiter)
	if err != nil {
		return err
	}
	defer s.close()
	h, ok, err := hs.read(s)
	if err != nil || !ok {
		return err
	}
	var start, end int64
	rows := 0
	emit := func() error {
		b := Batch{Items: rows, Table: &Table{Read: read, Parts: []Part{h.part(f.path, start, end, rows)}}}
		start, rows = end, 0
		return w.add(&b)
	}
	for {
		_, e, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rows, end = rows+1, e
		if end-start >= limit {
			if err := emit(); err != nil {
				return err
			}
		}
	}
	if rows > 0 {
		return emit()
	}
	return nil
}
