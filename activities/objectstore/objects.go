package objectstore

import (
	"context"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
)

// Object is an object found by List.
type Object struct {
	// Path is the object's path below the listed folder, slash-separated.
	Path string
	Size int64
	// ETag is the store's checksum of the object's content (an MD5 for
	// a single-part upload): equal ETags mean equal content.
	ETag string
}

// GetFile streams the object p into the file dst, through a temporary file
// beside it, so dst is either absent or whole. An absent object is an
// *Error whose NotFound is true.
func (s *Store) GetFile(ctx context.Context, p, dst string) error {
	key, err := s.Key(p)
	if err != nil {
		return err
	}
	return s.getFile(ctx, key, dst)
}

// GetRange copies n bytes of the object p from offset off to w and returns
// how many it copied: one ranged request, nothing else of the object is
// read.
func (s *Store) GetRange(ctx context.Context, p string, off, n int64, w io.Writer) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	key, err := s.Key(p)
	if err != nil {
		return 0, err
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return 0, err
	}
	obj, err := s.client.GetObject(ctx, s.def.Bucket, key, opts)
	if err != nil {
		return 0, s.wrap(err, "read bytes %d-%d of %q", off, off+n-1, p)
	}
	defer obj.Close()
	copied, err := io.Copy(w, obj)
	if err != nil {
		return copied, s.wrap(err, "read bytes %d-%d of %q", off, off+n-1, p)
	}
	if copied != n {
		return copied, s.wrap(io.ErrUnexpectedEOF, "read bytes %d-%d of %q: got %d bytes", off, off+n-1, p, copied)
	}
	return copied, nil
}

// PutFile streams the local file src to the object p. A reader of p sees
// the old object or the whole new one, never a part.
func (s *Store) PutFile(ctx context.Context, src, p string) (int64, error) {
	key, err := s.Key(p)
	if err != nil {
		return 0, err
	}
	return s.putFile(ctx, src, key)
}

// Put writes size bytes from r to the object p, whole or not at all.
func (s *Store) Put(ctx context.Context, p string, r io.Reader, size int64) error {
	key, err := s.Key(p)
	if err != nil {
		return err
	}
	if _, err := s.client.PutObject(ctx, s.def.Bucket, key, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return s.wrap(err, "write %q", p)
	}
	return nil
}

// List returns every object under the folder p, recursively, in key order;
// none when the folder does not exist. Commit markers are left out.
func (s *Store) List(ctx context.Context, p string) ([]Object, error) {
	key, err := s.Key(p)
	if err != nil {
		return nil, err
	}
	var out []Object
	for obj := range s.client.ListObjects(ctx, s.def.Bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
		if obj.Err != nil {
			return nil, s.wrap(obj.Err, "list folder %q", p)
		}
		rel := strings.TrimPrefix(obj.Key, key+"/")
		if rel == "" || strings.HasSuffix(rel, "/") || rel == CommitMarker || strings.HasSuffix(rel, "/"+CommitMarker) {
			continue
		}
		out = append(out, Object{Path: rel, Size: obj.Size, ETag: strings.Trim(obj.ETag, `"`)})
	}
	return out, nil
}

// RemoveAll deletes the object p and every object under the folder p/,
// commit markers first, so a reader never takes what is left for a
// committed folder.
func (s *Store) RemoveAll(ctx context.Context, p string) error {
	key, err := s.Key(p)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.def.Bucket, key+"/"+CommitMarker, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return s.wrap(err, "remove the commit marker of %q", p)
	}
	if err := s.client.RemoveObject(ctx, s.def.Bucket, key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return s.wrap(err, "remove %q", p)
	}
	if err := s.removeUnder(ctx, key, nil); err != nil {
		return s.wrap(err, "remove folder %q", p)
	}
	return nil
}

// Commit writes the folder p's commit marker: whatever its objects are now
// is the folder's committed content.
func (s *Store) Commit(ctx context.Context, p string) error {
	key, err := s.Key(p)
	if err != nil {
		return err
	}
	if _, err := s.client.PutObject(ctx, s.def.Bucket, key+"/"+CommitMarker, strings.NewReader(""), 0, minio.PutObjectOptions{}); err != nil {
		return s.wrap(err, "commit %q", p)
	}
	return nil
}

// Head returns the object p's size and ETag; an absent object is an
// *Error whose NotFound is true.
func (s *Store) Head(ctx context.Context, p string) (Object, error) {
	key, err := s.Key(p)
	if err != nil {
		return Object{}, err
	}
	st, err := s.client.StatObject(ctx, s.def.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s.wrap(err, "read %q", p)
	}
	return Object{Path: p, Size: st.Size, ETag: strings.Trim(st.ETag, `"`)}, nil
}
