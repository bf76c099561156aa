package lazyfs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkReadWholeFile reads a 64 MiB object whole through a mount, and
// downloads it, in the same run: the mount's cost for a step that reads
// everything, as a ratio to the download.
//
//	go test ./activities/objectstore/lazyfs -run '^$' -bench ReadWholeFile -benchtime 5x
func BenchmarkReadWholeFile(b *testing.B) {
	bk := newBucket(b)
	const size = 64 << 20
	bk.put(b, "in", map[string][]byte{"big.bin": randomBytes(size, 4)})
	b.Run("download", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			_, err := bk.direct.Download(context.Background(), "in/big.bin", filepath.Join(b.TempDir(), "big.bin"))
			require.NoError(b, err)
		}
	})
	b.Run("mount", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			m, err := Mount(context.Background(), bk.direct, "in", filepath.Join(b.TempDir(), "mnt"), Options{})
			require.NoError(b, err)
			f, err := os.Open(filepath.Join(m.Dir, "big.bin"))
			require.NoError(b, err)
			n, err := io.Copy(io.Discard, f)
			require.NoError(b, err)
			require.Equal(b, int64(size), n)
			f.Close()
			require.NoError(b, m.Unmount())
		}
	})
}
