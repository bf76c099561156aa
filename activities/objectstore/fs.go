package objectstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// FS returns the datastore as a read-only io/fs.FS. A name is a path inside
// the datastore ("data/in/a.csv", "." for its root); a folder is a key
// prefix that some object has. Listing a folder is one request per 1000
// entries and gives every file's size, so fs.WalkDir costs no request per
// file; opening a file streams its object. Commit markers are not listed:
// they are porch's, not data. A name that is neither an object nor a folder
// fails with an *Error whose NotFound is true (and so fs.ErrNotExist). ctx
// bounds every request made through it.
func (s *Store) FS(ctx context.Context) fs.FS { return &storeFS{ctx: ctx, s: s} }

type storeFS struct {
	ctx context.Context
	s   *Store
}

var (
	_ fs.StatFS    = (*storeFS)(nil)
	_ fs.ReadDirFS = (*storeFS)(nil)
)

func dirPrefix(key string) string {
	if key == "" {
		return ""
	}
	return key + "/"
}

// validName is fs.ValidPath without backslashes, which Azure Blob
// Storage takes for slashes: no path names an object by another name.
func validName(name string) bool { return fs.ValidPath(name) && !strings.Contains(name, `\`) }

func (f *storeFS) Stat(name string) (fs.FileInfo, error) {
	if !validName(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	key := f.s.key(name)
	if name != "." && path.Base(name) != CommitMarker {
		st, err := f.s.b.stat(f.ctx, key)
		if err == nil {
			return fileInfo{name: path.Base(name), size: st.size, mod: st.modTime.Truncate(time.Second)}, nil
		}
		if errors.Is(err, errFolder) {
			return fileInfo{name: path.Base(name), dir: true}, nil
		}
		if !f.s.isNotFound(err) {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: f.s.wrap(err, "read %q", name)}
		}
	}
	for _, err := range f.s.b.list(f.ctx, dirPrefix(key), false, 1) {
		if err != nil {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: f.s.wrap(err, "list folder %q", name)}
		}
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	if name == "." {
		return fileInfo{name: ".", dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: f.s.missing(name)}
}

func (f *storeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !validName(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	prefix := dirPrefix(f.s.key(name))
	var out []fs.DirEntry
	for obj, err := range f.s.b.list(f.ctx, prefix, false, 0) {
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: f.s.wrap(err, "list folder %q", name)}
		}
		rel, dir := strings.CutSuffix(strings.TrimPrefix(obj.key, prefix), "/")
		dir = dir || obj.dir
		switch {
		case rel == "" || rel == CommitMarker: // a folder placeholder, porch's marker
		case rel == "." || rel == "..": // keys S3 allows that no path can name
		case dir:
			out = append(out, fs.FileInfoToDirEntry(fileInfo{name: rel, dir: true}))
		default:
			out = append(out, fs.FileInfoToDirEntry(fileInfo{name: rel, size: obj.size, mod: obj.modTime.Truncate(time.Second)}))
		}
	}
	if len(out) == 0 && name != "." {
		info, err := f.Stat(name)
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
		}
		if !info.IsDir() {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("an object, not a folder")}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (f *storeFS) Open(name string) (fs.File, error) {
	info, err := f.Stat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPath(err)}
	}
	if info.IsDir() {
		return &dirFile{fsys: f, name: name, info: info}, nil
	}
	obj, err := f.s.b.get(f.ctx, f.s.key(name), 0, -1)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: f.s.wrap(err, "read %q", name)}
	}
	return &objectFile{obj: obj, info: info, fsys: f, name: name}, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// objectFile streams one object.
type objectFile struct {
	obj  io.ReadCloser
	info fs.FileInfo
	fsys *storeFS
	name string
}

func (o *objectFile) Stat() (fs.FileInfo, error) { return o.info, nil }
func (o *objectFile) Close() error               { return o.obj.Close() }
func (o *objectFile) Read(p []byte) (int, error) {
	n, err := o.obj.Read(p)
	if err != nil && err != io.EOF {
		err = o.fsys.s.wrap(err, "read %q", o.name)
	}
	return n, err
}

// dirFile is an opened folder.
type dirFile struct {
	fsys    *storeFS
	name    string
	info    fs.FileInfo
	entries []fs.DirEntry
	read    bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: fs.ErrInvalid}
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.fsys.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = entries, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

// fileInfo describes an object or a folder.
type fileInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) ModTime() time.Time { return i.mod }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
