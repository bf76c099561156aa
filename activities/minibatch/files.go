package minibatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// file is one input file found by a listing.
type file struct {
	path string // absolute
	rel  string // slash-separated, relative to the listing's root
	size int64
}

// listFolder returns every regular file under root, recursively, sorted by
// relative path (byte order of the slash-separated path), keeping those keep
// accepts. Symbolic links to regular files count as files; links to folders
// are not followed.
func listFolder(root string, keep func(rel string) bool) ([]file, error) {
	var files []file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list %q: %w", p, err)
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p) // follows a link to the file it names
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("list %q: %w", p, err)
		}
		rel = filepath.ToSlash(rel)
		if keep == nil || keep(rel) {
			files = append(files, file{path: p, rel: rel, size: info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, nil
}

// planFiles plans a uri_folder or uri_file input: lists of file paths.
func planFiles(in Input, w *writer) error {
	if len(in.PartitionKeys) > 0 {
		return inputErrorf(in.Path, 0, "partition_keys need tabular input: declare input_data as an mltable input, or remove partition_keys")
	}
	count, bytes, err := fileBatchSize(in.Size)
	if err != nil {
		return err
	}
	var files []file
	if in.Type == TypeURIFile {
		files, err = uriFile(in.Path)
	} else {
		files, err = uriFolder(in.Path)
	}
	if err != nil {
		return err
	}
	w.sum.Files = len(files)
	for _, f := range files {
		w.sum.Bytes += f.size
	}
	return batchFiles(files, count, bytes, w)
}

// fileBatchSize reads mini_batch_size for file input: a count of files, or
// (with a unit) a number of bytes.
func fileBatchSize(size string) (count int, bytes int64, err error) {
	if size == "" {
		return DefaultFiles, 0, nil
	}
	n, unit, err := ParseSize(size)
	if err != nil {
		return 0, 0, err
	}
	if n < 1 {
		return 0, 0, inputErrorf("", 0, "mini_batch_size %q is zero: write at least 1 (files) or a size such as 1mb", size)
	}
	if unit {
		return 0, n, nil
	}
	if n > 1<<30 {
		n = 1 << 30 // more files than any folder holds: one batch
	}
	return int(n), 0, nil
}

// batchFiles cuts files into batches of count files or, when count is 0, of
// files adding up to at most maxBytes (at least one file a batch).
func batchFiles(files []file, count int, maxBytes int64, w *writer) error {
	var cur []string
	var curBytes int64
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b := Batch{Items: len(cur), Files: cur}
		cur, curBytes = nil, 0
		return w.add(&b)
	}
	for _, f := range files {
		full := count > 0 && len(cur) == count
		tooBig := count == 0 && len(cur) > 0 && curBytes+f.size > maxBytes
		if full || tooBig {
			if err := flush(); err != nil {
				return err
			}
		}
		cur = append(cur, f.path)
		curBytes += f.size
	}
	return flush()
}

func uriFile(path string) ([]file, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputErrorf(path, 0, "the uri_file input does not exist: check the input's path")
	case err != nil:
		return nil, fmt.Errorf("read input file: %w", err)
	case info.IsDir():
		return nil, inputErrorf(path, 0, "the uri_file input is a folder: declare the input as uri_folder")
	case !info.Mode().IsRegular():
		return nil, inputErrorf(path, 0, "the uri_file input is not a regular file: give a file's path")
	}
	return []file{{path: path, rel: filepath.Base(path), size: info.Size()}}, nil
}

// uriFolder lists every regular file of a uri_folder input, hidden files
// and MLTable files included: a uri_folder's files are all data.
func uriFolder(path string) ([]file, error) {
	if err := checkFolder(path, TypeURIFolder); err != nil {
		return nil, err
	}
	files, err := listFolder(path, nil)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, inputErrorf(path, 0, "the uri_folder input holds no files: check that the step before wrote its output there")
	}
	return files, nil
}

// checkFolder says whether path is an existing folder, as an *InputError
// when it is not.
func checkFolder(path, typ string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return inputErrorf(path, 0, "the %s input does not exist: check the input's path", typ)
	case err != nil:
		return fmt.Errorf("read input folder: %w", err)
	case !info.IsDir():
		return inputErrorf(path, 0, "the %s input is a file, not a folder: declare the input as uri_file, or give its folder", typ)
	}
	return nil
}
