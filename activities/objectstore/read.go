package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Entry is a file or folder of a datastore, as ReadDir or Stat shows it.
type Entry struct {
	// Name is the last element of its path.
	Name     string
	Size     int64
	Modified time.Time
	Dir      bool
}

// Stat describes the single object p. Its error's NotFound is true when p
// is no object (it may still be a folder).
func (s *Store) Stat(ctx context.Context, p string) (Entry, error) {
	key, err := s.Key(p)
	if err != nil {
		return Entry{}, err
	}
	info, err := s.client.StatObject(ctx, s.def.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Entry{}, s.wrap(err, "read %q", p)
	}
	return Entry{Name: path.Base(key), Size: info.Size, Modified: info.LastModified}, nil
}

// ReadDir returns the files and folders directly under the folder p, in key
// order. The commit marker, folder placeholders and keys that are no plain
// names ("", ".", "..") are left out. A folder with no objects under it is
// an error whose NotFound is true.
func (s *Store) ReadDir(ctx context.Context, p string) ([]Entry, error) {
	key, err := s.Key(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []Entry
	found := false
	for obj := range s.client.ListObjects(ctx, s.def.Bucket, minio.ListObjectsOptions{Prefix: key + "/"}) {
		if obj.Err != nil {
			return nil, s.wrap(obj.Err, "list folder %q", p)
		}
		found = true
		rel := strings.TrimPrefix(obj.Key, key+"/")
		name, dir := strings.CutSuffix(rel, "/")
		if name == "" || name == "." || name == ".." || name == CommitMarker || strings.Contains(name, "/") {
			continue
		}
		out = append(out, Entry{Name: name, Size: obj.Size, Modified: obj.LastModified, Dir: dir})
	}
	if !found {
		return nil, &Error{msg: fmt.Sprintf("%s: no object or folder %q: check the path, and that the step that writes it has run", s.where(), p), notFound: true}
	}
	return out, nil
}

// ReadAt fills buf with the bytes of object p from offset off, with one
// ranged request for exactly those bytes. It returns fewer than len(buf)
// bytes, and io.EOF, only at the end of the object.
func (s *Store) ReadAt(ctx context.Context, p string, buf []byte, off int64) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	key, err := s.Key(p)
	if err != nil {
		return 0, err
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+int64(len(buf))-1); err != nil {
		return 0, fmt.Errorf("read %q at %d: %w", p, off, err)
	}
	obj, err := s.client.GetObject(ctx, s.def.Bucket, key, opts)
	if err != nil {
		return 0, s.wrap(err, "read %q", p)
	}
	defer obj.Close()
	n, err := io.ReadFull(obj, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && n == 0):
		return n, io.EOF
	case minio.ToErrorResponse(err).Code == "InvalidRange":
		return 0, io.EOF // off is at or past the end
	case err != nil:
		return n, s.wrap(err, "read %q at %d", p, off)
	}
	return n, nil
}
