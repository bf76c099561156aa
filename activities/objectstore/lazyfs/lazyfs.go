// Package lazyfs mounts a path of an s3 datastore as a read-only folder
// through FUSE, as Azure ML's ro_mount mounts blob storage with blobfuse:
// nothing is copied up front. A folder is listed (one ListObjects request per
// folder) when it is first looked into, and a file's bytes are fetched with
// ranged GETs, in chunks, when and as far as they are read. So a step that
// reads the first kilobytes of a large file, or one file of a large folder,
// fetches about that much.
//
// Mounting needs /dev/fuse and the right to mount: mount(2) itself as root
// (go-fuse's DirectMount, no helper binary), else the fusermount helper.
// Where neither works, Mount fails and the caller copies the data instead.
package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/porch-pipelines/porch/activities/objectstore"
)

// fsType is the name of porch's mounts: "fuse.porch" in /proc/self/mountinfo.
const fsType = "porch"

// Options tune a mount's reads. Zero values mean the defaults.
type Options struct {
	// ChunkSize is the size of one ranged GET; 0 means 1 MiB. A read of a
	// few bytes fetches one chunk.
	ChunkSize int64
	// CacheChunks is how many chunks a mount keeps in memory (shared by its
	// files, least recently used dropped first); 0 means 16.
	CacheChunks int
}

// Mounted is a mounted datastore path.
type Mounted struct {
	// Dir is the mount point.
	Dir string
	// Path is what the step reads: Dir for a folder, Dir/<name> for a single
	// object (the mount then shows a folder holding just that file).
	Path string

	server *fuse.Server
	cancel context.CancelFunc
}

// Mount mounts the datastore path p (one object or a folder) of s read-only
// at dir, creating dir. It checks p exists first, so a missing input fails
// here with the store's error (NotFound) rather than inside the command.
// The mount lives until Unmount; its fetches outlive ctx.
func Mount(ctx context.Context, s *objectstore.Store, p, dir string, opts Options) (*Mounted, error) {
	root, file, err := rootOf(ctx, s, p)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create mount point: %w", err)
	}
	fetchCtx, cancel := context.WithCancel(context.Background())
	root.fs = &mountFS{store: s, cache: newChunkCache(fetchCtx, s, opts)}
	server, err := fs.Mount(dir, root, mountOptions())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("mount %q at %s: %w", p, dir, err)
	}
	m := &Mounted{Dir: dir, Path: dir, server: server, cancel: cancel}
	if file != "" {
		m.Path = filepath.Join(dir, file)
	}
	return m, nil
}

// rootOf builds the root folder of a mount of p: p itself for a folder
// (listed on first use, as any other), or a folder holding only p for a
// single object (whose name it returns).
func rootOf(ctx context.Context, s *objectstore.Store, p string) (*dirNode, string, error) {
	name, err := s.Name(p)
	if err != nil {
		return nil, "", err
	}
	info, err := iofs.Stat(s.FS(ctx), name)
	if err != nil {
		var perr *iofs.PathError
		if errors.As(err, &perr) {
			err = perr.Err // the store's error names the path already
		}
		return nil, "", err
	}
	if info.IsDir() {
		return &dirNode{path: name}, "", nil
	}
	return &dirNode{listed: true, entries: []entry{{FileInfo: info, path: name}}}, info.Name(), nil
}

// mountOptions are the options of every porch mount: read-only, no device
// files or setuid, and long kernel caching of names and attributes, since
// the data does not change while a step reads it.
func mountOptions() *fs.Options {
	forever := time.Hour
	quiet := log.New(io.Discard, "", 0)
	return &fs.Options{
		MountOptions: fuse.MountOptions{
			// mount(2) directly when allowed (root): no fusermount binary
			// needed; else go-fuse tries fusermount.
			DirectMount:      true,
			DirectMountFlags: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
			FsName:           "porch-s3",
			Name:             fsType,
			DisableXAttrs:    true,
			// Reads of up to a chunk per request, not 128 KiB: fewer trips
			// through the kernel (BenchmarkReadWholeFile).
			MaxWrite:     1 << 20,
			MaxReadAhead: 1 << 20,
			Logger:       quiet,
		},
		EntryTimeout:    &forever,
		AttrTimeout:     &forever,
		NegativeTimeout: &forever,
		Logger:          quiet,
	}
}

// Unmount unmounts the folder and stops its fetches. When a process still
// holds a file in it open, the mount is detached lazily (gone from the
// folder at once, released by the kernel when the last file closes).
func (m *Mounted) Unmount() error {
	defer m.cancel()
	if err := m.server.Unmount(); err != nil {
		if derr := syscall.Unmount(m.Dir, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("unmount %s: %w (and a lazy unmount: %v)", m.Dir, err, derr)
		}
	}
	return nil
}

// child is the datastore path of name in the folder dir.
func child(dir, name string) string { return path.Join(dir, name) }
