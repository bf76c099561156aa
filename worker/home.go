package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// homeFolders are the folders of a porch home a worker writes in every
// step: the home itself, the steps' working folders and the folders of
// unregistered datastores.
var homeFolders = []string{".", "work", "datastores"}

// checkHome makes sure the worker can write its folders under home, which
// it creates if missing, so that a worker that could not run any step
// refuses to start rather than fail every step.
func checkHome(home string) error {
	if home == "" {
		return errors.New("the worker has no porch home folder: set PORCH_HOME (default ~/.porch)")
	}
	for _, name := range homeFolders {
		dir := filepath.Join(home, name)
		if err := writable(dir); err != nil {
			// The folder is in the message already: keep only the cause.
			var pathErr *os.PathError
			if errors.As(err, &pathErr) && strings.HasPrefix(pathErr.Path, dir) {
				err = pathErr.Err
			}
			return fmt.Errorf("the worker cannot write to %q in its porch home %q: %v: make it writable for this user, "+
				"or set PORCH_HOME to a folder this user can write (default ~/.porch)", dir, home, err)
		}
	}
	return nil
}

// writable creates dir if missing and writes, then removes, a file in it:
// mode bits say nothing on a read-only file system, nor for root.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".porch-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	return err
}
