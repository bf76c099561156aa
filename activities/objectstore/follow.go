package objectstore

import (
	"context"
	"io"
	"strings"
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
	info, err := s.b.stat(ctx, key)
	if err != nil {
		return nil, s.wrap(err, "read %q", p)
	}
	if info.size <= offset {
		return io.NopCloser(strings.NewReader("")), nil
	}
	body, err := s.b.get(ctx, key, offset, -1)
	if err != nil {
		return nil, s.wrap(err, "read %q from byte %d", p, offset)
	}
	return body, nil
}
