package objectstore

import (
	"context"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
)

// ReadFrom opens the object p from byte offset on, for a reader that
// follows a growing copy (a step's log). It returns an empty reader when
// the object holds no more than offset bytes, and an *Error whose NotFound
// is true when there is no object p.
func (s *Store) ReadFrom(ctx context.Context, p string, offset int64) (io.ReadCloser, error) {
	key, err := s.Key(p)
	if err != nil {
		return nil, err
	}
	info, err := s.client.StatObject(ctx, s.def.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return nil, s.wrap(err, "read %q", p)
	}
	if info.Size <= offset {
		return io.NopCloser(strings.NewReader("")), nil
	}
	var opts minio.GetObjectOptions
	if offset > 0 {
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, s.wrap(err, "read %q from byte %d", p, offset)
		}
	}
	obj, err := s.client.GetObject(ctx, s.def.Bucket, key, opts)
	if err != nil {
		return nil, s.wrap(err, "read %q", p)
	}
	return obj, nil
}
