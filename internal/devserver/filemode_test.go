package devserver

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDatabaseFilesArePrivate checks that a database file, its -wal and
// its -shm are readable by their user only (0600), whatever the umask:
// they hold every run's inputs, commands and outputs. A new database is
// made so; an existing one an earlier porch made 0644 is tightened.
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	db := filepath.Join(t.TempDir(), "dev.db")
	s, err := Start(context.Background(), Options{DBFile: db, SearchAttributes: testAttrs})
	require.NoError(t, err)
	c := connect(t, s)
	runChain(t, c, "private", "run-private", 2)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		assert.Equal(t, os.FileMode(0o600), mode(t, f), "%s of a new database", filepath.Base(f))
	}
	c.Close()
	require.NoError(t, s.Stop())

	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			require.NoError(t, os.Chmod(f, 0o644))
		}
	}
	startServer(t, Options{DBFile: db})
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		assert.Equal(t, os.FileMode(0o600), mode(t, f), "%s of a database that was 0644", filepath.Base(f))
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}
