package stepio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/objectstore/lazyfs"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Folders are one step's folders on this worker.
type Folders struct {
	// ArtifactsURI and artifacts are the step's artifacts folder A: it holds
	// outputs/, logs/ and user_logs/ (Azure's layout of a job's artifacts).
	ArtifactsURI string
	Artifacts    string
	// Work is the working folder W the command runs in: the code, and
	// symlinks outputs -> A/outputs and logs -> A/logs.
	Work string
	// Attempt names the attempt ("2") whose outputs on
	// local datastores are written in staging and published when it
	// succeeds; "" writes them in place.
	Attempt string
	// Execution is the step execution the attempt belongs to, as a
	// relative path: "<run id>/<workflow run id>". Each execution of each
	// run stages apart, so two runs writing one path:, or a step's new
	// execution after a reset, never touch each other's staging.
	Execution string
}

// UserLogs is the folder of the step's std_log.txt.
func (f Folders) UserLogs() string { return filepath.Join(f.Artifacts, "user_logs") }

// staging is where outputs bound for an s3 datastore are written before
// their upload: the working folder, else (no command runs) the artifacts.
func (f Folders) staging() string {
	if f.Work != "" {
		return filepath.Join(f.Work, ".porch-outputs")
	}
	return filepath.Join(f.Artifacts, "porch", "staging")
}

// CheckName refuses a run id or step path that would name a folder outside
// the porch home.
func CheckName(what, name string) error {
	if name == "" {
		return Invalid("the step has no %s: the workflow must pass one", what)
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return Invalid("%s %q is not a relative name: use letters, digits, '-', '_' and '/' between segments", what, name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return Invalid("%s %q has an empty, \".\" or \"..\" segment: use letters, digits, '-', '_' and '/' between segments", what, name)
		}
	}
	return nil
}

// PrepareFolders creates a fresh artifacts folder and working folder for the
// step, removing what an earlier attempt left, and copies the code in. A
// step spread over workers (spread) runs instance number instance here: it
// shares the artifacts folder with the other instances and has a working
// folder of its own.
func (h *Host) PrepareFolders(ctx context.Context, in Step, instance int, spread bool) (Folders, error) {
	if err := CheckName("run id", in.RunID); err != nil {
		return Folders{}, err
	}
	if err := CheckName("step path", in.StepPath); err != nil {
		return Folders{}, err
	}
	var f Folders
	f.ArtifactsURI = StepArtifactsURI(DatastoreOf(in), in.RunID, in.StepPath)
	dir, err := h.ArtifactsPath(f.ArtifactsURI)
	if err != nil {
		return f, Invalid("step %q: %v", in.StepPath, err)
	}
	f.Artifacts = dir
	f.Work = filepath.Join(h.Home, "work", in.RunID, filepath.FromSlash(in.StepPath))
	if spread && instance > 0 {
		// Workers of one porch home share the artifacts folder, not a
		// working folder.
		f.Work += ".instance-" + strconv.Itoa(instance)
	}
	// A retried attempt starts from scratch, as a new Azure ML attempt does:
	// stale outputs or logs would be mistaken for this attempt's. Inputs an
	// earlier attempt mounted and did not unmount (its worker died) go
	// first: a folder holding a mount cannot be removed. Instances spread
	// over workers run once (the step fails with any of them) and share
	// the artifacts folder, so none clears it.
	// A first attempt finds neither folder: one look at each, rather than
	// a read of the host's mount table and two removals.
	for _, d := range []string{f.Work, f.Artifacts} {
		if spread && d == f.Artifacts {
			continue
		}
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if d == f.Work {
			if _, err := lazyfs.DetachStale(f.Work); err != nil {
				return f, fmt.Errorf("remove stale folder of an earlier attempt: %w", err)
			}
		}
		if err := os.RemoveAll(d); err != nil {
			return f, fmt.Errorf("remove stale folder of an earlier attempt: %w", err)
		}
	}
	for _, d := range []string{"outputs", "logs", "user_logs"} {
		if err := os.MkdirAll(filepath.Join(f.Artifacts, d), 0o755); err != nil {
			return f, FileError(fmt.Sprintf("step %q: create its artifacts folder %s", in.StepPath, f.Artifacts), err)
		}
	}
	if err := os.MkdirAll(f.Work, 0o755); err != nil {
		return f, FileError(fmt.Sprintf("step %q: create its working folder %s", in.StepPath, f.Work), err)
	}
	if err := h.CopyCode(ctx, in.StepPath, in.Command.Code, f); err != nil {
		return f, err
	}
	for _, d := range []string{"outputs", "logs"} {
		if err := os.Symlink(filepath.Join(f.Artifacts, d), filepath.Join(f.Work, d)); err != nil {
			return f, fmt.Errorf("link working folder to artifacts: %w", err)
		}
	}
	return f, nil
}

// DatastoreOf is the step's default datastore, plan.DefaultDatastore when
// the workflow passed none.
func DatastoreOf(in Step) string {
	if in.DefaultDatastore == "" {
		return plan.DefaultDatastore
	}
	return in.DefaultDatastore
}

// CopyCode copies the step's code (a folder's contents or a single file),
// an absolute path on this worker or a snapshot on a datastore, into the
// working folder. Top-level outputs/ and logs/ folders of the code go
// into the artifacts folder, where the working folder's links point. The
// porch home is skipped when the code holds it: copying the working folder
// into itself would never end.
func (h *Host) CopyCode(ctx context.Context, step, code string, f Folders) error {
	if code == "" {
		return nil
	}
	local, err := h.codePath(ctx, step, code)
	if err != nil {
		return err
	}
	return copyCodeFrom(local, h.Home, f)
}

// copyCodeFrom copies the code at the absolute path code into the working
// folder (see copyCode).
func copyCodeFrom(code, home string, f Folders) error {
	if !filepath.IsAbs(code) {
		return Invalid("code %q is not an absolute path: the compiler makes code paths absolute; recompile the pipeline", code)
	}
	info, err := os.Stat(code)
	if errors.Is(err, fs.ErrNotExist) {
		return Invalid("code %q does not exist on this worker: restore it or fix the step's code: path", code)
	}
	if err != nil {
		return fmt.Errorf("read code %q: %w", code, err)
	}
	copies := treeCopy{what: "copy code", skip: home}
	if !info.IsDir() {
		return copies.copyTree(code, filepath.Join(f.Work, filepath.Base(code)))
	}
	entries, err := os.ReadDir(code)
	if err != nil {
		return fmt.Errorf("read code %q: %w", code, err)
	}
	for _, e := range entries {
		dst := filepath.Join(f.Work, e.Name())
		if e.IsDir() && (e.Name() == "outputs" || e.Name() == "logs") {
			dst = filepath.Join(f.Artifacts, e.Name())
		}
		if err := copies.copyTree(filepath.Join(code, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}

// treeCopy is how copyTree copies.
type treeCopy struct {
	// what names the copy in errors: "copy code".
	what string
	// skip is a folder left out: the porch home, as copying the working
	// folder into itself would never end.
	skip string
	// follow copies the file a symbolic link names rather than the link (a
	// link to a folder is refused: links may loop). A copy that a step may
	// change must hold no link back to its source.
	follow bool
}

// copyTree copies a file, symlink or folder to dst, keeping permissions and
// making the copy its owner's to change. Sockets, devices and pipes are
// skipped. Files stream, however big.
func (c treeCopy) copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		switch {
		case d.IsDir() && p == c.skip:
			return fs.SkipDir
		case d.Type()&fs.ModeSymlink != 0 && c.follow:
			err = copyLinked(p, filepath.Join(dst, rel))
		default:
			err = copyEntry(p, d, filepath.Join(dst, rel))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		return nil
	})
}

// copyEntry copies one entry of a walk: a folder (its mode), a link (as a
// link) or a regular file.
func copyEntry(src string, d fs.DirEntry, dst string) error {
	switch {
	case d.IsDir():
		info, err := os.Stat(src)
		if err != nil {
			return err
		}
		return os.MkdirAll(dst, info.Mode().Perm()|0o700)
	case d.Type()&fs.ModeSymlink != 0:
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(link, dst)
	case d.Type().IsRegular():
		return copyFile(src, dst)
	}
	return nil
}

// copyLinked copies the file the link src names to dst.
func copyLinked(src, dst string) error {
	info, err := os.Stat(src)
	switch {
	case err != nil:
		return &linkError{fmt.Sprintf("%s is a symbolic link to what cannot be read (%v): fix or remove the link", src, err)}
	case info.IsDir():
		return &linkError{fmt.Sprintf("%s is a symbolic link to a folder, which is not followed: put the folder in its place", src)}
	case info.Mode().IsRegular():
		return copyFile(src, dst)
	}
	return nil
}

// linkError is a symbolic link a copy does not follow: the user's to fix.
type linkError struct{ msg string }

func (e *linkError) Error() string { return e.msg }

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := out.Chmod(info.Mode().Perm() | 0o600); err != nil { // past the umask
		return err
	}
	_, err = io.Copy(out, in)
	return err
}
