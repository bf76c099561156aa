package objectstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadFromFollowsAGrowingObject reads an object from offsets, as
// porch job logs --follow does, across a re-upload that made it longer.
func TestReadFromFollowsAGrowingObject(t *testing.T) {
	eachStore(t, "logs", func(t *testing.T, s *Store) {
		ctx := context.Background()
		read := func(offset int64) string {
			t.Helper()
			r, err := s.ReadFrom(ctx, "run/step/std_log.txt", offset)
			require.NoError(t, err)
			defer r.Close()
			data, err := io.ReadAll(r)
			require.NoError(t, err)
			return string(data)
		}

		_, err := s.ReadFrom(ctx, "run/step/std_log.txt", 0)
		var e *Error
		require.True(t, errors.As(err, &e) && e.NotFound(), "a missing object is NotFound: %v", err)

		local := filepath.Join(t.TempDir(), "std_log.txt")
		require.NoError(t, os.WriteFile(local, []byte("first\n"), 0o644))
		_, err = s.Upload(ctx, local, "run/step/std_log.txt")
		require.NoError(t, err)
		require.Equal(t, "first\n", read(0))
		require.Equal(t, "st\n", read(3))
		require.Equal(t, "", read(6), "nothing past the end")
		require.Equal(t, "", read(60), "nothing far past the end")

		require.NoError(t, os.WriteFile(local, []byte("first\nsecond\n"), 0o644))
		_, err = s.Upload(ctx, local, "run/step/std_log.txt")
		require.NoError(t, err)
		require.Equal(t, "second\n", read(6))
	})
}
