package stepio

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Outputs on local datastores are written by each attempt into a staging
// folder of its own beside the output, and published (renamed into place)
// only when the attempt succeeds: an attempt that fails, or that a dead
// worker abandoned, never shows in an output.
//
//	<output's folder>/.porch-staging.<output's name>.<run>.<step execution>.<attempt>/
//
// The run and the step execution (its workflow run id) keep apart two runs
// writing one fixed path, and a step's executions before and after a
// reset: an attempt clears only its own execution's earlier attempts.
// Every file or folder created is a step's cost (0.05 to over 1 ms of
// CPU on the ext4 of the machines porch is measured on, the most while it
// still works through what was just deleted; a rename costs 0.02): the
// attempt's folder sits beside the output, not in a staging folder of
// its own to create and remove.
const stagingPrefix = ".porch-staging."

// staged is one output an attempt writes in staging.
type staged struct {
	name string
	// dir is the attempt's staging folder.
	dir string
	// final is the output's path; file says it is a uri_file.
	final string
	file  bool
	// own says final is the step's own location (the output has no
	// path:), which only this step of this run writes: what is there
	// came from an earlier execution (a reset run), and the attempt's
	// folder replaces it whole rather than merging into it.
	own bool
}

// path is where the attempt writes the output: the staging folder, or the
// file of a uri_file output in it.
func (s staged) path() string {
	if s.file {
		return filepath.Join(s.dir, filepath.Base(s.final))
	}
	return s.dir
}

// stage prepares the staging folder of attempt, of the step execution
// execution ("<run>/<workflow run id>"), for the output at final, removing
// what the execution's earlier attempts left there. own says final is the
// step's own location (see staged.own).
func stage(name, final, execution, attempt string, file, own bool) (staged, error) {
	if execution == "" {
		execution = "local"
	}
	prefix := filepath.Join(filepath.Dir(final), stagingName(name, execution))
	s := staged{name: name, dir: prefix + attempt, final: final, file: file, own: own}
	// Attempts are numbered from 1: those before this one died with
	// their workers, or they would have published or discarded.
	if n, err := strconv.Atoi(attempt); err == nil {
		for k := 1; k < n; k++ {
			if err := os.RemoveAll(prefix + strconv.Itoa(k)); err != nil {
				return s, err
			}
		}
	}
	err := os.Mkdir(s.dir, 0o755)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			return s, err
		}
		err = os.Mkdir(s.dir, 0o755)
	case errors.Is(err, fs.ErrExist):
		// This very attempt staged before (its activity was retried
		// on this worker): it starts again from nothing.
		if err := os.RemoveAll(s.dir); err != nil {
			return s, err
		}
		err = os.Mkdir(s.dir, 0o755)
	}
	return s, err
}

// maxStagingName bounds an attempt's staging folder's name before its
// attempt number: a folder's name has at most 255 bytes on Linux, and the
// attempt number and ".replaced" (see publish) take up to 20 more.
const maxStagingName = 255 - 20

// stagingName is the start of the names of the staging folders of an
// output's attempts in a step execution: the output's name and the
// execution, or when those are too long for a folder's name, a hash of
// them (the step's log says where the attempt writes).
func stagingName(name, execution string) string {
	n := stagingPrefix + name + "." + strings.ReplaceAll(execution, "/", ".") + "."
	if len(n) <= maxStagingName {
		return n
	}
	sum := sha256.Sum256([]byte(name + "\x00" + execution))
	return stagingPrefix + hex.EncodeToString(sum[:16]) + "."
}

// publish moves the attempt's output into place. A folder lands whole
// when the output's folder is new or empty; into a folder that holds
// data (a path other runs write too) its entries replace those of the
// same names. Each rename is atomic.
func (s staged) publish() error {
	if s.file {
		src := s.path()
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			return s.discard() // the command wrote no file: nothing to publish
		}
		if err := os.MkdirAll(filepath.Dir(s.final), 0o755); err != nil {
			return err
		}
		if err := os.Rename(src, s.final); err != nil {
			return err
		}
		return s.discard()
	}
	if err := os.MkdirAll(filepath.Dir(s.final), 0o755); err != nil {
		return err
	}
	// An empty folder (bound by an older porch, or left by a failed
	// publish) is replaced whole, and so is the step's own folder that
	// an earlier execution wrote; anything else is merged into.
	replaced := ""
	if fi, err := os.Lstat(s.final); err == nil && fi.IsDir() {
		if os.Remove(s.final) != nil && s.own {
			replaced = s.dir + ".replaced"
			if err := os.Rename(s.final, replaced); err != nil {
				return err
			}
		}
	}
	if os.Rename(s.dir, s.final) != nil {
		if err := mergeInto(s.dir, s.final); err != nil {
			return err
		}
		if err := os.RemoveAll(s.dir); err != nil {
			return err
		}
	}
	if replaced != "" {
		if err := os.RemoveAll(replaced); err != nil {
			return err
		}
	}
	return nil
}

// discard removes the attempt's staging folder.
func (s staged) discard() error {
	return os.RemoveAll(s.dir)
}

// mergeInto moves src's entries into the folder dst, replacing files of the
// same names and merging folders.
func mergeInto(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		err := os.Rename(from, to)
		if err == nil {
			continue
		}
		fi, serr := os.Lstat(to)
		switch {
		case serr == nil && fi.IsDir() && e.IsDir():
			err = mergeInto(from, to)
		case serr == nil && fi.IsDir():
			// A file replaces a folder of the same name.
			if err = os.RemoveAll(to); err == nil {
				err = os.Rename(from, to)
			}
		}
		if err != nil {
			return fmt.Errorf("move %s into %s: %w", from, dst, err)
		}
	}
	return nil
}

// Notes are lines for the step's log: what was mounted, and where the
// attempt writes its outputs until they are published.
func (b Bindings) Notes() []string {
	notes := b.Mounts.Notes
	for _, s := range b.staged {
		notes = append(notes, fmt.Sprintf("porch: output %q is written at %s and moves to %s when the attempt succeeds", s.name, s.path(), s.final))
	}
	return notes
}

// Publish moves the outputs this attempt staged on local datastores into
// place; call it once the attempt has succeeded.
func (b Bindings) Publish() error {
	for _, s := range b.staged {
		if err := s.publish(); err != nil {
			return FileError(fmt.Sprintf("publish output %q into %s", s.name, s.final), err)
		}
	}
	return nil
}

// Discard removes what an attempt staged; call it when the attempt failed.
func (b Bindings) Discard() {
	for _, s := range b.staged {
		_ = s.discard()
	}
}
