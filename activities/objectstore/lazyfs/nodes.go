package lazyfs

import (
	"context"
	"errors"
	iofs "io/fs"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/porch-pipelines/porch/activities/objectstore"
)

// mountFS is what every node of one mount shares.
type mountFS struct {
	store *objectstore.Store
	cache *chunkCache
}

// entry is a file or folder of a listing, with its name in the store's FS.
type entry struct {
	iofs.FileInfo
	path string
}

func entriesOf(dir string, list []iofs.DirEntry) []entry {
	out := make([]entry, 0, len(list))
	for _, e := range list {
		info, err := e.Info() // the listing's: no request
		if err != nil {
			continue
		}
		out = append(out, entry{FileInfo: info, path: child(dir, e.Name())})
	}
	return out
}

// dirNode is a folder. It lists its datastore folder once, on first use; a
// failed listing is tried again on the next use.
type dirNode struct {
	fs.Inode
	fs   *mountFS
	path string

	mu      sync.Mutex
	listed  bool
	entries []entry
}

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
)

func (d *dirNode) list(ctx context.Context) ([]entry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listed {
		return d.entries, 0
	}
	list, err := iofs.ReadDir(d.fs.store.FS(ctx), d.path)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		list = nil // emptied since its parent was listed
	case err != nil:
		return nil, errnoOf(ctx, err)
	}
	d.entries, d.listed = entriesOf(d.path, list), true
	return d.entries, 0
}

// Lookup finds name in the folder's listing.
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	entries, errno := d.list(ctx)
	if errno != 0 {
		return nil, errno
	}
	for _, e := range entries {
		if e.Name() != name {
			continue
		}
		if e.IsDir() {
			dirAttr(&out.Attr)
			return d.NewInode(ctx, &dirNode{fs: d.fs, path: e.path}, fs.StableAttr{Mode: fuse.S_IFDIR}), 0
		}
		f := &fileNode{fs: d.fs, entry: e}
		f.attr(&out.Attr)
		return d.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG}), 0
	}
	return nil, syscall.ENOENT
}

// Readdir lists the folder.
func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, errno := d.list(ctx)
	if errno != 0 {
		return nil, errno
	}
	list := make([]fuse.DirEntry, len(entries))
	for i, e := range entries {
		mode := uint32(fuse.S_IFREG)
		if e.IsDir() {
			mode = fuse.S_IFDIR
		}
		list[i] = fuse.DirEntry{Name: e.Name(), Mode: mode}
	}
	return fs.NewListDirStream(list), 0
}

// Getattr describes the folder: read-only for everyone.
func (d *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr)
	return 0
}

func dirAttr(a *fuse.Attr) {
	a.Mode = fuse.S_IFDIR | 0o555
	a.Nlink = 2
}

// fileNode is one object, read on demand.
type fileNode struct {
	fs.Inode
	fs *mountFS
	entry
}

var (
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
)

func (f *fileNode) attr(a *fuse.Attr) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(f.Size())
	a.Blocks = (a.Size + 511) / 512
	mod := f.ModTime()
	a.SetTimes(nil, &mod, &mod)
}

// Getattr describes the file: its size and time, read-only for everyone.
func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	return 0
}

// Open refuses writing and lets the kernel keep what it read of the file
// across opens (the object does not change while it is mounted).
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return &handle{file: f}, fuse.FOPEN_KEEP_CACHE, 0
}

// handle is one open of a file. It notices sequential reading, to fetch the
// next chunk before it is asked for.
type handle struct {
	file *fileNode

	mu   sync.Mutex
	next int64 // where the last read ended
}

var _ fs.FileReader = (*handle)(nil)

// Read serves a read from the mount's chunks.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.Lock()
	sequential := off == h.next && off > 0
	h.next = off + int64(len(dest))
	h.mu.Unlock()
	n, err := h.file.fs.cache.readAt(ctx, h.file.path, h.file.Size(), dest, off)
	if err != nil {
		return nil, errnoOf(ctx, err)
	}
	if sequential {
		h.file.fs.cache.prefetch(h.file.path, h.file.Size(), off+int64(n))
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// errnoOf is what a reader of the mount sees when the store fails: EINTR
// when the read was interrupted, else EIO (the command's own error message
// then names the file).
func errnoOf(ctx context.Context, err error) syscall.Errno {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	return syscall.EIO
}
