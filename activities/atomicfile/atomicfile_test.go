package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConcurrentWritersLeaveOneWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.txt")
	a, b := make([]byte, 1<<20), make([]byte, 1<<20)
	for i := range a {
		a[i], b[i] = 'a', 'b'
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			data := a
			if i%2 == 1 {
				data = b
			}
			require.NoError(t, Write(path, data))
		})
	}
	wg.Wait()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, string(got) == string(a) || string(got) == string(b), "one writer's whole content")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file is left behind")
}

func TestEnsureLeavesAnIdenticalFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, Ensure(path, []byte("x")))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o444))
	require.NoError(t, Ensure(path, []byte("x")), "identical content is not rewritten")
	info2, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, info.ModTime(), info2.ModTime())
}
