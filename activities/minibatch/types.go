package minibatch

import (
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Input types a parallel step can split.
const (
	TypeURIFolder = "uri_folder"
	TypeURIFile   = "uri_file"
	TypeMLTable   = "mltable"
)

// Defaults of mini_batch_size.
const (
	// DefaultFiles is the number of files per mini-batch of a uri_folder
	// input when mini_batch_size is not set.
	DefaultFiles = 10
	// DefaultTableBytes is the approximate size of a tabular mini-batch
	// when mini_batch_size is not set (1mb).
	DefaultTableBytes = 1 << 20
)

// Input is the data a parallel step splits.
type Input struct {
	// Type is "uri_folder", "uri_file" or "mltable".
	Type string
	// Path is an absolute local path, or Base followed by a name in FS: a
	// folder (uri_folder, mltable) or a file (uri_file, or an MLTable
	// file).
	Path string
	// FS, when set, is the file system the input is read from (a
	// datastore's), and Base is the prefix the manifest gives its names
	// (the datastore's URI, "azureml://datastores/<name>/paths/"), so the
	// manifest's paths are Base + name. Nil FS means the local disk, with
	// absolute paths.
	FS   fs.FS
	Base string
	// Size is mini_batch_size as written ("", "10", "10kb", "1mb", "1gb");
	// "" is the default: 10 files, or 1mb for tabular input. For tabular
	// input a bare number is a number of bytes.
	Size string
	// PartitionKeys, when set, make each distinct tuple of these columns'
	// values one mini-batch (tabular input only); they win over Size.
	PartitionKeys []string
}

// Summary is what planning found.
type Summary struct {
	// Batches is the number of mini-batches.
	Batches int `json:"batches"`
	// Items is the number of files (file input) or data rows (tabular
	// input) over all mini-batches.
	Items int64 `json:"items"`
	// Files is the number of input files.
	Files int `json:"files"`
	// Bytes is the total size of the input files.
	Bytes int64 `json:"bytes"`
	// Tabular is true for mltable input: batches carry a Table, not Files.
	Tabular bool `json:"tabular"`
	// Digest is the hex sha256 of the manifest's batches: the same input
	// and settings give the same digest (used to resume).
	Digest string `json:"digest"`
	// Notes are things a user should know that are not errors, such as
	// MLTable settings porch ignores.
	Notes []string `json:"notes,omitempty"`
}

// Batch is one mini-batch, JSON-serialisable (it is sent as JSON to the
// Python driver).
type Batch struct {
	// Index is the batch's position in the manifest, from 0.
	Index int `json:"index"`
	// Items is the number of files, or of data rows.
	Items int `json:"items"`
	// Files are the paths of a file input's batch, in sorted order:
	// absolute, or URIs for an input read through Input.FS.
	Files []string `json:"files,omitempty"`
	// Table is a tabular batch: which bytes of which files to read, and how.
	Table *Table `json:"table,omitempty"`
}

// Table is a tabular mini-batch. Its rows are the rows of its Parts, in
// order, read with Read; when PartitionKeys are set, only the rows whose key
// columns hold PartitionValues belong to the batch.
type Table struct {
	// Read says how to parse the parts' bytes.
	Read ReadOptions `json:"read"`
	// Parts are the byte ranges to read, in order.
	Parts []Part `json:"parts"`
	// PartitionKeys are the columns (from the CSV, or from the path via
	// Read.PartitionFormat) that select this batch's rows.
	PartitionKeys []string `json:"partition_keys,omitempty"`
	// PartitionValues are the key columns' values, in PartitionKeys order,
	// as the text appears in the CSV (or the path): compare them as text.
	PartitionValues []string `json:"partition_values,omitempty"`
}

// Part is a byte range of one delimited text file that ends on a record
// boundary.
type Part struct {
	// Path is the file's absolute path (a URI for an input read through
	// Input.FS).
	Path string `json:"path"`
	// Offset is the byte offset of the part's first record (0 when the part
	// starts with the file's header record).
	Offset int64 `json:"offset"`
	// Length is the part's size in bytes; the part ends on a record
	// boundary.
	Length int64 `json:"length"`
	// Header is true when the part does not start with its header record,
	// so the reader must prepend the header: the first HeaderLength bytes
	// of HeaderPath (or of Path when HeaderPath is empty).
	Header bool `json:"header"`
	// HeaderLength is the size in bytes of the header record, line end
	// included, when Header is true.
	HeaderLength int64 `json:"header_length,omitempty"`
	// HeaderPath is the file holding the header record when it is not
	// Path: with header from_first_file, every file but the first takes
	// the first file's header.
	HeaderPath string `json:"header_path,omitempty"`
	// Rows is the number of data rows of the part that belong to the
	// batch: all of them, or with partition keys only those of the batch's
	// key tuple.
	Rows int `json:"rows"`
}

// Header modes of read_delimited.
const (
	HeaderAllSame      = "all_files_same_headers"
	HeaderFromFirst    = "from_first_file"
	HeaderAllDifferent = "all_files_different_headers"
	HeaderNone         = "no_header"
)

// ReadOptions say how to parse a tabular batch's bytes (MLTable's
// read_delimited and the column transformations).
type ReadOptions struct {
	// Delimiter is one character; default ",".
	Delimiter string `json:"delimiter"`
	// Encoding is as MLTable says (utf8, utf8bom, ascii, latin1, iso88591,
	// windows1252); default utf8.
	Encoding string `json:"encoding"`
	// Header is all_files_same_headers (default), from_first_file,
	// all_files_different_headers or no_header.
	Header string `json:"header"`
	// IncludePathColumn adds a "Path" column holding the file's path
	// relative to Root.
	IncludePathColumn bool `json:"include_path_column,omitempty"`
	// PartitionFormat (e.g. "{Store}/{Brand}/{file_name}.csv") adds one
	// column per {name}, taken from the file's path relative to Root.
	PartitionFormat string `json:"partition_format,omitempty"`
	// Root is the folder paths are relative to for PartitionFormat and the
	// Path column: the MLTable file's folder, or the input folder.
	Root string `json:"root"`
	// DropColumns are removed after reading.
	DropColumns []string `json:"drop_columns,omitempty"`
	// KeepColumns, when set, are the only columns kept after reading.
	KeepColumns []string `json:"keep_columns,omitempty"`
}

// InputError is a user's mistake (a bad MLTable file, no files, a malformed
// size, an unknown partition key): its message names the file, the line
// where there is one, and what to fix.
type InputError struct {
	// Path is the file or folder at fault; "" when none is (a malformed
	// mini_batch_size).
	Path string
	// Line is the 1-based line in Path, 0 when unknown.
	Line int
	// Msg says what is wrong and what to do.
	Msg string
}

// Error returns "path:line: msg", leaving out what is unknown.
func (e *InputError) Error() string {
	switch {
	case e.Path == "":
		return e.Msg
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

func inputErrorf(path string, line int, format string, args ...any) *InputError {
	return &InputError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var sizePattern = regexp.MustCompile(`^(\d+)([kKmMgG][bB])?$`)

// ParseSize parses mini_batch_size: "10" is 10 with unit false; "10kb" is
// 10240 with unit true (powers of 1024: kb, mb, gb in any case). Anything
// not matching ^\d+([kKmMgG][bB])?$, or too large, is an *InputError.
func ParseSize(s string) (n int64, unit bool, err error) {
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, false, inputErrorf("", 0, "mini_batch_size %q is malformed: write a number of files (10) or a size (10kb, 1mb, 1gb)", s)
	}
	n, err = strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false, inputErrorf("", 0, "mini_batch_size %q is too large: write at most %d", s, int64(math.MaxInt64))
	}
	if m[2] == "" {
		return n, false, nil
	}
	shift := map[byte]uint{'k': 10, 'm': 20, 'g': 30}[strings.ToLower(m[2])[0]]
	if n > math.MaxInt64>>shift {
		return 0, false, inputErrorf("", 0, "mini_batch_size %q is too large: write at most 8589934591gb", s)
	}
	return n << shift, true, nil
}
