package objectstore

import (
	"context"
	"io"
	"strings"
)

// Object is an object found by List.
type Object struct {
	// Path is the object's path below the listed folder, slash-separated.
	Path string
	Size int64
	// ETag is the store's checksum of the object's content: on s3 the
	// ETag (an MD5 for a single-part upload), on Azure the blob's
	// Content-MD5 when it has one, else its ETag. Equal ETags mean equal
	// content.
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
	body, err := s.b.get(ctx, key, off, n)
	if err != nil {
		return 0, s.wrap(err, "read bytes %d-%d of %q", off, off+n-1, p)
	}
	defer body.Close()
	copied, err := io.Copy(w, body)
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
	if err := s.b.put(ctx, key, r, size); err != nil {
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
	for obj, err := range s.b.list(ctx, key+"/", true, 0) {
		if err != nil {
			return nil, s.wrap(err, "list folder %q", p)
		}
		rel := strings.TrimPrefix(obj.key, key+"/")
		if rel == "" || obj.dir || strings.HasSuffix(rel, "/") || rel == CommitMarker || strings.HasSuffix(rel, "/"+CommitMarker) {
			continue
		}
		out = append(out, Object{Path: rel, Size: obj.size, ETag: obj.etag})
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
	if err := s.b.remove(ctx, []string{key + "/" + CommitMarker}); err != nil {
		return s.wrap(err, "remove the commit marker of %q", p)
	}
	if err := s.b.remove(ctx, []string{key}); err != nil {
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
	if err := s.b.put(ctx, key+"/"+CommitMarker, strings.NewReader(""), 0); err != nil {
		return s.wrap(err, "commit %q", p)
	}
	return nil
}

// Head returns the object p's size, ETag and time; an absent object is an
// *Error whose NotFound is true.
func (s *Store) Head(ctx context.Context, p string) (Object, error) {
	key, err := s.Key(p)
	if err != nil {
		return Object{}, err
	}
	st, err := s.b.stat(ctx, key)
	if err != nil {
		return Object{}, s.wrap(err, "read %q", p)
	}
	return Object{Path: p, Size: st.size, ETag: st.etag}, nil
}
