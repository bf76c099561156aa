package objectstore

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to read the peak RSS from: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// TestLargeFileStreams uploads and downloads a sparse file much bigger than
// the memory growth it allows: 64 MB, or 300 MB with PORCH_LARGE_TEST=1.
func TestLargeFileStreams(t *testing.T) {
	size := int64(64 << 20)
	if os.Getenv("PORCH_LARGE_TEST") == "1" {
		size = 300 << 20
	}
	eachStore(t, "ws", func(t *testing.T, s *Store) {
		ctx := context.Background()
		src := filepath.Join(t.TempDir(), "big.bin")
		f, err := os.Create(src)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, os.Truncate(src, size)) // sparse: no disk blocks here
		// A byte at the end, so a truncated download cannot pass for whole.
		f, err = os.OpenFile(src, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("end"), size-3)
		require.NoError(t, err)
		require.NoError(t, f.Close())

		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		hwmBefore := peakRSS(t)

		n, err := s.Upload(ctx, src, "big/big.bin")
		require.NoError(t, err)
		require.Equal(t, size, n)
		dst := filepath.Join(t.TempDir(), "big.bin")
		single, err := s.Download(ctx, "big/big.bin", dst)
		require.NoError(t, err)
		require.True(t, single)

		hwmAfter := peakRSS(t)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		info, err := os.Stat(dst)
		require.NoError(t, err)
		require.Equal(t, size, info.Size())
		tail := make([]byte, 3)
		g, err := os.Open(dst)
		require.NoError(t, err)
		_, err = g.ReadAt(tail, size-3)
		require.NoError(t, err)
		require.NoError(t, g.Close())
		require.Equal(t, "end", string(tail))

		growth := hwmAfter - hwmBefore
		t.Logf("%d MB up and down: peak RSS %d MB -> %d MB (+%d MB), Go heap sys %d MB -> %d MB",
			size>>20, hwmBefore>>20, hwmAfter>>20, growth>>20, before.Sys>>20, after.Sys>>20)
		require.Less(t, growth, int64(100<<20), "peak RSS grew by %d MB moving a %d MB file: something buffers whole objects", growth>>20, size>>20)
	})
}

// BenchmarkRoundTrip64MB uploads and downloads a sparse 64 MB file through
// the test MinIO: MB/s for the pair.
func BenchmarkRoundTrip64MB(b *testing.B) {
	endpoint, access, secret, bucket := s3test.Start(b)
	b.Setenv("AWS_ACCESS_KEY_ID", access)
	b.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	b.Setenv("AWS_SESSION_TOKEN", "")
	s, err := Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket})
	require.NoError(b, err)
	const size = 64 << 20
	src := filepath.Join(b.TempDir(), "big.bin")
	f, err := os.Create(src)
	require.NoError(b, err)
	require.NoError(b, f.Truncate(size))
	require.NoError(b, f.Close())
	dst := filepath.Join(b.TempDir(), "big.bin")
	b.SetBytes(size)
	for b.Loop() {
		_, err := s.Upload(context.Background(), src, "big.bin")
		require.NoError(b, err)
		_, err = s.Download(context.Background(), "big.bin", dst)
		require.NoError(b, err)
	}
}
