// Package minibatch splits a parallel step's input into mini-batches and
// writes them to a manifest on disk, so that a workflow's history carries
// only the manifest's folder and its Summary, never lists of files or rows.
// It does no Temporal work: an activity calls Plan once, and each mini-batch
// activity calls Open and Batch.
//
// # Where the input is read from
//
// Plan reads the local disk, where an input's Path is absolute and so are
// the manifest's paths; or, when Input.FS is set, that file system (a
// datastore's, from objectstore.Store.FS), where Path is Input.Base
// followed by a name in FS and the manifest names every file Base + name.
// Planning reads only what splitting needs: listings, and the files of
// tabular input.
//
// # Splitting
//
// uri_folder: every regular file under the folder, recursively, hidden files
// and files named MLTable included (a uri_folder's files are all data);
// symbolic links to files count, links to folders are not followed. Files
// are sorted by their slash-separated path relative to the folder, in byte
// order. mini_batch_size is a number of files (default 10); with a unit
// (10kb, 1mb, 1gb) it is a number of bytes: files are grouped while their
// total stays within it, at least one file a batch. uri_file: one batch
// holding the file.
//
// mltable: a folder holding an MLTable file, the MLTable file itself, or a
// folder of *.csv files (recursively, hidden ones left out) read with the
// default options. The MLTable's paths (file:, folder:, pattern: with *, ?,
// [a-z] and **) are relative to its folder; folder: and pattern: leave out
// hidden files and files named MLTable. A file named twice is read once,
// where it first appears. mini_batch_size is an approximate number of bytes,
// with or without a unit (default 1mb): a file's records are walked and a
// batch ends after the record that brings it to the size. Batches never
// cross file boundaries and each has one Part. A file with no data rows
// gives no batch; an input with no rows gives a manifest of 0 batches.
//
// With partition_keys, each distinct tuple of the keys' values is one batch,
// whatever the size: its Parts are the whole files holding the tuple, and
// the reader keeps only the rows whose key columns equal PartitionValues.
// Batches are ordered by first appearance (file order, then row order). A
// key is taken from the partition format's columns first, then from the
// file's header. With header no_header the columns are Column1, Column2, ...
//
// # Headers
//
// all_files_same_headers and all_files_different_headers: every file's
// first record is its header. from_first_file: only the first file (in path
// order) that holds a record has a header; the first record of every other
// file is data, and its parts take the first file's header (Part.HeaderPath).
// no_header: no file has a header.
//
// # Reading a tabular batch (the contract for the Python driver)
//
// For each Part, in order: read Length bytes of Path from Offset. When
// Header is true, prepend the first HeaderLength bytes of HeaderPath (Path
// when HeaderPath is empty). Parse the bytes as delimited text with
// Read.Delimiter, Read.Encoding (utf8: utf-8, utf8bom: utf-8-sig, ascii,
// latin1 and iso88591: latin-1, windows1252: cp1252) and a header row unless
// Read.Header is no_header (then name the columns Column1..N). Double quotes
// quote fields, which may hold delimiters and line ends. Then, in order: add
// one column per {name} of Read.PartitionFormat, from the file's
// slash-separated path relative to Read.Root (the value is the text of the
// path); add a "Path" column holding that relative path when
// Read.IncludePathColumn; keep only the rows whose PartitionKeys columns
// equal PartitionValues, compared as text (read them with dtype=str); drop
// Read.DropColumns, then keep only Read.KeepColumns when set. Concatenate the
// parts' frames in order; Part.Rows counts the rows each part contributes.
//
// # Manifest
//
// Plan writes one file, ManifestName, replaced atomically (written to a
// temporary file in the same folder, synced, renamed). It holds one JSON
// line per Batch, then an index of n+1 little-endian uint64 offsets (each
// batch's line, then the end of the last), then the Summary as JSON, then a
// 32-byte trailer: "PORCHMB1" and the index offset, summary offset and
// summary length as little-endian uint64. Open reads the trailer and the
// summary; Batch(i) reads 16 bytes of index and one line. Summary.Digest is
// the sha256 of the batch lines: the same input and settings give the same
// digest, so a resumed step can tell whether its manifest still holds.
package minibatch
