package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Download copies the object p, or every object under the folder p/, into
// dst (a file path for a single object, a folder otherwise: the layout under
// p/ is kept). Streams: never holds a whole object in memory. It reports
// whether p was a single object.
func (s *Store) Download(ctx context.Context, p, dst string) (single bool, err error) {
	key, err := s.Key(p)
	if err != nil {
		return false, err
	}
	_, err = s.b.stat(ctx, key)
	if err == nil {
		return true, s.getFile(ctx, key, dst)
	}
	if !s.isNotFound(err) {
		return false, s.wrap(err, "read %q", p)
	}
	return false, s.downloadFolder(ctx, p, key, dst, errors.Is(err, errFolder))
}

// downloadFolder copies every object under key/ into the folder dst,
// transferWidth objects at a time. folder says the store keeps key as a
// folder, which may be empty.
func (s *Store) downloadFolder(ctx context.Context, p, key, dst string, folder bool) error {
	found := folder
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := newTransfers(ctx)
	// fail stops the transfers under way: err is the cause.
	fail := func(err error) error {
		cancel()
		_ = t.wait()
		return err
	}
	for obj, err := range s.b.list(ctx, key+"/", true, 0) {
		if err != nil {
			return fail(s.wrap(err, "list folder %q", p))
		}
		found = true
		rel := strings.TrimPrefix(obj.key, key+"/")
		if rel == CommitMarker || rel == "" {
			continue
		}
		local := filepath.FromSlash(strings.TrimSuffix(rel, "/"))
		if !filepath.IsLocal(local) {
			return fail(s.wrap(fmt.Errorf("object key %q is not a plain path below the folder", obj.key), "download folder %q", p))
		}
		if obj.dir || strings.HasSuffix(rel, "/") { // a folder placeholder some tools write
			if err := os.MkdirAll(filepath.Join(dst, local), 0o755); err != nil {
				return fail(err)
			}
			continue
		}
		if !t.start(func(ctx context.Context) error { return s.getFile(ctx, obj.key, filepath.Join(dst, local)) }) {
			break
		}
	}
	if err := t.wait(); err != nil {
		return err
	}
	if !found {
		return s.missing(p)
	}
	return os.MkdirAll(dst, 0o755)
}

// getFile streams the object key into the file dst, through a temporary file
// beside it, so dst is either absent or whole.
func (s *Store) getFile(ctx context.Context, key, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	obj, err := s.b.get(ctx, key, 0, -1)
	if err != nil {
		return s.wrap(err, "download %q", key)
	}
	defer obj.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".porch-download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, obj); err != nil {
		tmp.Close()
		if _, local := err.(*fs.PathError); local {
			return fmt.Errorf("download %q into %q: %w", key, dst, err)
		}
		return s.wrap(err, "download %q", key)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("download %q into %q: %w", key, dst, err)
	}
	return os.Rename(tmp.Name(), dst)
}

// Upload copies the local file or folder src to p (a folder uploads every
// file under it, keys p/<rel>, transferWidth files at a time), then writes
// the commit marker p/.porch-committed (for a folder) last. Objects under
// p/ from an earlier attempt are deleted, so p/ ends holding exactly src.
// Streams: one request with the file's size, blocks or multipart for big
// files. Returns the bytes uploaded.
func (s *Store) Upload(ctx context.Context, src, p string) (int64, error) {
	key, err := s.Key(p)
	if err != nil {
		return 0, err
	}
	info, err := os.Stat(src)
	if err != nil {
		return 0, fmt.Errorf("upload %q to %s: %w", src, s.where(), err)
	}
	if !info.IsDir() {
		// A folder an earlier attempt wrote at the same path goes first.
		if err := s.removeUnder(ctx, key, nil); err != nil {
			return 0, s.wrap(err, "remove the earlier folder %q", p)
		}
		return s.putFile(ctx, src, key)
	}
	return s.uploadFolder(ctx, src, p, key)
}

// uploadFolder uploads every file under src to key/ and commits it.
func (s *Store) uploadFolder(ctx context.Context, src, p, key string) (int64, error) {
	marker := key + "/" + CommitMarker
	// The marker goes first: from here until the end, readers see the
	// folder as uncommitted, whatever an earlier attempt left.
	if err := s.b.remove(ctx, []string{marker}); err != nil {
		return 0, s.wrap(err, "remove the commit marker of %q", p)
	}
	if err := s.b.remove(ctx, []string{key}); err != nil {
		return 0, s.wrap(err, "remove the earlier object %q", p)
	}
	keep := map[string]bool{}
	var files [][2]string // local file, object key
	err := filepath.WalkDir(src, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("upload %q: %w", file, err)
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(src, file)
		if err != nil {
			return err
		}
		if rel == CommitMarker {
			return fmt.Errorf("upload %q: a file named %q is porch's commit marker: rename it", file, CommitMarker)
		}
		if err := regularFile(file, d); err != nil {
			return err
		}
		objKey := key + "/" + filepath.ToSlash(rel)
		files = append(files, [2]string{file, objKey})
		keep[objKey] = true
		return nil
	})
	if err != nil {
		return 0, err
	}
	var total atomic.Int64
	t := newTransfers(ctx)
	for _, f := range files {
		if !t.start(func(ctx context.Context) error {
			n, err := s.putFile(ctx, f[0], f[1])
			total.Add(n)
			return err
		}) {
			break
		}
	}
	if err := t.wait(); err != nil {
		return total.Load(), err
	}
	if err := s.removeUnder(ctx, key, keep); err != nil {
		return total.Load(), s.wrap(err, "remove what an earlier attempt left in %q", p)
	}
	if err := s.b.put(ctx, marker, strings.NewReader(""), 0); err != nil {
		return total.Load(), s.wrap(err, "commit %q", p)
	}
	return total.Load(), nil
}

// regularFile refuses what cannot be uploaded as a file: folders behind
// symbolic links, dangling links, devices, pipes and sockets.
func regularFile(file string, d fs.DirEntry) error {
	if d.Type().IsRegular() {
		return nil
	}
	info, err := os.Stat(file) // follows a symbolic link
	if err != nil {
		return fmt.Errorf("upload %q: %w", file, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("upload %q: it is a %s, not a regular file: outputs hold files and folders only", file, kind(info.Mode()))
	}
	return nil
}

// kind names a file mode in a message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder behind a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// putFile streams one local file to key.
func (s *Store) putFile(ctx context.Context, file, key string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, fmt.Errorf("upload %q: %w", file, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("upload %q: %w", file, err)
	}
	if err := s.b.putFile(ctx, key, f, info.Size()); err != nil {
		return 0, s.wrap(err, "upload %q to %q", file, key)
	}
	return info.Size(), nil
}

// removeBatch is how many objects removeUnder deletes at a time.
const removeBatch = 1000

// removeUnder deletes every object under key/ that keep does not hold.
func (s *Store) removeUnder(ctx context.Context, key string, keep map[string]bool) error {
	var doomed []string
	for obj, err := range s.b.list(ctx, key+"/", true, 0) {
		if err != nil {
			return err
		}
		if keep[obj.key] {
			continue
		}
		if doomed = append(doomed, obj.key); len(doomed) == removeBatch {
			if err := s.b.remove(ctx, doomed); err != nil {
				return err
			}
			doomed = doomed[:0]
		}
	}
	if len(doomed) == 0 {
		return nil
	}
	return s.b.remove(ctx, doomed)
}

// Committed says whether folder p holds a committed upload (its marker
// exists).
func (s *Store) Committed(ctx context.Context, p string) (bool, error) {
	key, err := s.Key(p)
	if err != nil {
		return false, err
	}
	_, err = s.b.stat(ctx, key+"/"+CommitMarker)
	if err == nil {
		return true, nil
	}
	if s.isNotFound(err) {
		return false, nil
	}
	return false, s.wrap(err, "check whether %q is committed", p)
}
