package userfile

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadRegular(t *testing.T) {
	name := filepath.Join(t.TempDir(), "p.yml")
	require.NoError(t, os.WriteFile(name, []byte("type: pipeline\n"), 0o644))
	data, err := Read(context.Background(), name, 0)
	require.NoError(t, err)
	assert.Equal(t, "type: pipeline\n", string(data))

	// A symbolic link to a regular file is one.
	link := filepath.Join(t.TempDir(), "link.yml")
	require.NoError(t, os.Symlink(name, link))
	data, err = Read(context.Background(), link, 0)
	require.NoError(t, err)
	assert.Equal(t, "type: pipeline\n", string(data))
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	cases := map[string]string{
		dir:  "a folder",
		fifo: "a named pipe (FIFO)", // opening it for reading would block until a writer came
		sock: "a socket",
	}
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err == nil {
			cases[dev] = "a device" // endless: reading it would grow memory until the kernel killed porch
		}
	}
	for name, kind := range cases {
		_, err := Read(context.Background(), name, 0)
		var nr *NotRegularError
		require.True(t, errors.As(err, &nr), "%s: %v", name, err)
		assert.Equal(t, kind, nr.Kind, name)
		assert.Equal(t, name+" is "+kind+", not a regular file", err.Error())
	}
}

func TestReadSizeLimit(t *testing.T) {
	name := filepath.Join(t.TempDir(), "big.yml")
	require.NoError(t, os.WriteFile(name, make([]byte, 101), 0o644))
	_, err := Read(context.Background(), name, 100)
	var tl *TooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, &TooLargeError{Name: name, Size: 101, Max: 100}, tl)

	data, err := Read(context.Background(), name, 101)
	require.NoError(t, err)
	assert.Len(t, data, 101)
}

// endless is a file that says it is empty and never ends, as some files
// under /proc do.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func TestReadBoundedStopsAtTheLimit(t *testing.T) {
	_, err := readBounded(context.Background(), "f", endless{}, 0, 1<<20)
	var tl *TooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, int64(-1), tl.Size)
	assert.Equal(t, "f holds more than 1048576 bytes, the limit", err.Error())

	data, err := readBounded(context.Background(), "f", io.LimitReader(endless{}, 1<<20), 0, 1<<20)
	require.NoError(t, err)
	assert.Len(t, data, 1<<20)
}

func TestReadStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := readBounded(ctx, "f", endless{}, 0, 1<<40)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = Read(ctx, "/", 0)
	assert.ErrorIs(t, err, context.Canceled)
}
