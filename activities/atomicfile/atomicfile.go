// Package atomicfile writes files so that a reader sees the old content or
// the whole new content, never a part: a private temporary copy in the same
// folder, renamed into place. Several processes may write the same file at
// once.
package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
)

// Write writes data to path atomically, creating path's folder.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Ensure writes data to path atomically unless path holds data already:
// for files porch unpacks from its binary into a cache.
func Ensure(path string, data []byte) error {
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, data) {
		return nil
	}
	return Write(path, data)
}
