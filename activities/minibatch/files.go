package minibatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// file is one input file found by a listing.
type file struct {
	path string // as the manifest names it: absolute, or a datastore URI
	name string // its name in the input's file system
	rel  string // slash-separated, relative to the listing's root
	size int64
}

// source is the file system an input is read from, and how the manifest
// names its files: os.DirFS("/") with absolute paths for a local input, a
// datastore's file system with its URIs for one on object storage.
type source struct {
	fsys fs.FS
	// base is the manifest path of the file system's root: "/" locally.
	base string
}

func (in Input) source() source {
	if in.FS == nil {
		return source{fsys: os.DirFS("/"), base: "/"}
	}
	return source{fsys: in.FS, base: in.Base}
}

// name is the file system's name of a manifest path; ok is false when the
// path is outside the file system.
func (s source) name(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, s.base)
	if !ok && s.base == "/" {
		return "", false
	}
	if !ok {
		rest, ok = strings.CutPrefix(p, strings.TrimSuffix(s.base, "/"))
		if !ok || rest != "" {
			return "", false
		}
	}
	name := strings.Trim(path.Clean("/"+rest), "/")
	if name == "" {
		return ".", true
	}
	return name, fs.ValidPath(name)
}

// path is the manifest path of a name.
func (s source) path(name string) string {
	if name == "." {
		if s.base == "/" {
			return "/"
		}
		return strings.TrimSuffix(s.base, "/")
	}
	return s.base + name
}

// listFolder returns every regular file under root, recursively, sorted by
// relative path (byte order of the slash-separated path), keeping those keep
// accepts. Symbolic links to regular files count as files; links to folders
// are not followed.
func listFolder(src source, root string, keep func(rel string) bool) ([]file, error) {
	var files []file
	err := fs.WalkDir(src.fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list %q: %w", src.path(p), err)
		}
		if d.IsDir() {
			return nil
		}
		var info fs.FileInfo
		if d.Type()&fs.ModeSymlink != 0 {
			info, err = fs.Stat(src.fsys, p) // follows a link to the file it names
		} else {
			info, err = d.Info()
		}
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		rel := relTo(root, p)
		if keep == nil || keep(rel) {
			files = append(files, file{path: src.path(p), name: p, rel: rel, size: info.Size()})
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
	src := in.source()
	name, ok := src.name(in.Path)
	if !ok {
		return inputErrorf(in.Path, 0, "the input's path is not an absolute path: give the input a full path")
	}
	var files []file
	if in.Type == TypeURIFile {
		files, err = uriFile(src, name)
	} else {
		files, err = uriFolder(src, name)
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

func uriFile(src source, name string) ([]file, error) {
	shown := src.path(name)
	info, err := fs.Stat(src.fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputErrorf(shown, 0, "the uri_file input does not exist: check the input's path")
	case err != nil:
		return nil, fmt.Errorf("read input file: %w", err)
	case info.IsDir():
		return nil, inputErrorf(shown, 0, "the uri_file input is a folder: declare the input as uri_folder")
	case !info.Mode().IsRegular():
		return nil, inputErrorf(shown, 0, "the uri_file input is not a regular file: give a file's path")
	}
	return []file{{path: shown, name: name, rel: path.Base(name), size: info.Size()}}, nil
}

// uriFolder lists every regular file of a uri_folder input, hidden files
// and MLTable files included: a uri_folder's files are all data.
func uriFolder(src source, name string) ([]file, error) {
	shown := src.path(name)
	if err := checkFolder(src, name, TypeURIFolder); err != nil {
		return nil, err
	}
	files, err := listFolder(src, name, nil)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, inputErrorf(shown, 0, "the uri_folder input holds no files: check that the step before wrote its output there")
	}
	return files, nil
}

// checkFolder says whether path is an existing folder, as an *InputError
// when it is not.
func checkFolder(src source, name, typ string) error {
	shown := src.path(name)
	info, err := fs.Stat(src.fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return inputErrorf(shown, 0, "the %s input does not exist: check the input's path", typ)
	case err != nil:
		return fmt.Errorf("read input folder: %w", err)
	case !info.IsDir():
		return inputErrorf(shown, 0, "the %s input is a file, not a folder: declare the input as uri_file, or give its folder", typ)
	}
	return nil
}
