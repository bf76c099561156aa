// Package treewalk walks a file tree as a program that reads its files
// sees it: symbolic links are followed, to files and folders alike, as
// Azure ML follows them when it uploads a job's code or data. Hashing a
// tree by what its links point to, rather than by the links' text, is
// what lets a changed target count as a change.
package treewalk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Visit is one entry the walk reaches.
type Visit struct {
	// Path is the entry's path as reached, through any links.
	Path string
	// Rel is Path relative to the root, slash-separated: "" for the root.
	Rel string
	// Info describes what Path leads to, links followed; nil for a link
	// whose target does not exist.
	Info fs.FileInfo
	// Link is the target, as written, of a link whose target does not
	// exist.
	Link string
}

// IsDir says whether the entry is a folder (or a link to one).
func (v Visit) IsDir() bool { return v.Info != nil && v.Info.IsDir() }

// ErrLoop is what a walk returns, wrapped, when a link inside the tree
// leads to a folder that holds it: the tree would be infinite.
var ErrLoop = errors.New("symbolic link loop")

// Walk calls fn for root and every entry below it, depth first, each
// folder's entries in name order (as filepath.WalkDir orders them). A
// root that is a link stands for its target. fn returning fs.SkipDir for
// a folder skips it; any other error stops the walk. A root that does
// not exist is an error that wraps fs.ErrNotExist.
func Walk(root string, fn func(Visit) error) error { return walk(root, true, fn) }

// WalkLinks is Walk that reports the links below root as links, as a
// dangling one (Info nil, Link its target), without following them: to
// hash a tree that holds links as such.
func WalkLinks(root string, fn func(Visit) error) error { return walk(root, false, fn) }

func walk(root string, follow bool, fn func(Visit) error) error {
	info, err := os.Stat(root)
	if err != nil {
		return err
	}
	w := walker{follow: follow, fn: fn}
	err = w.visit(Visit{Path: root, Info: info}, nil)
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

type walker struct {
	follow bool
	fn     func(Visit) error
}

// visit calls fn for v and, for a folder, walks what it holds; above are
// the folders that lead to v, to find loops.
func (w walker) visit(v Visit, above []fs.FileInfo) error {
	if err := w.fn(v); err != nil || !v.IsDir() {
		return err
	}
	for _, a := range above {
		if os.SameFile(a, v.Info) {
			return fmt.Errorf("%s: %w: it leads back to a folder that holds it", v.Path, ErrLoop)
		}
	}
	entries, err := os.ReadDir(v.Path)
	if err != nil {
		return err
	}
	above = append(above, v.Info)
	for _, e := range entries {
		child, err := w.reach(v, e)
		if err != nil {
			return err
		}
		if err := w.visit(child, above); err != nil && !(errors.Is(err, fs.SkipDir) && child.IsDir()) {
			return err
		}
	}
	return nil
}

// reach is the entry e of the folder v, its link followed.
func (w walker) reach(v Visit, e fs.DirEntry) (Visit, error) {
	c := Visit{Path: filepath.Join(v.Path, e.Name()), Rel: e.Name()}
	if v.Rel != "" {
		c.Rel = v.Rel + "/" + e.Name()
	}
	if e.Type()&fs.ModeSymlink == 0 {
		info, err := e.Info()
		c.Info = info
		return c, err
	}
	if !w.follow {
		var err error
		c.Link, err = os.Readlink(c.Path)
		return c, err
	}
	info, err := os.Stat(c.Path)
	switch {
	case err == nil:
		c.Info = info
	case errors.Is(err, fs.ErrNotExist):
		// A dangling link has nothing to read; its text is all there is.
		c.Link, err = os.Readlink(c.Path)
	case errors.Is(err, syscall.ELOOP):
		err = fmt.Errorf("%s: %w: its links lead to one another", c.Path, ErrLoop)
	}
	return c, err
}
