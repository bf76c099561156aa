// Package codesnapshot snapshots a step's code folder (or file) at
// submission, as Azure ML uploads a job's code to LocalUpload/ on the
// workspace's default datastore, so that workers on other machines run the
// code without a copy of the user's files.
//
// A snapshot is content-addressed: it lives at LocalUpload/<hash>/<name>
// on a datastore, where <hash> is the SHA-256 of the tree (paths, whether
// each file is executable, contents, symbolic links' targets; empty
// folders are left out, as git leaves them out), walked in
// sorted order, without what the folder's .amlignore (else .gitignore)
// leaves out. Symbolic links are followed: a snapshot holds what they
// point to, and only a link to nothing stays a link. On an s3 datastore the upload is committed by the object
// LocalUpload/<hash>/.porch-committed, written last, which holds the
// snapshot's manifest; on a local datastore the snapshot's folder appears
// whole, by a rename.
package codesnapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/porch-pipelines/porch/activities/treewalk"
)

// Entry kinds.
const (
	KindDir  = "dir"
	KindFile = "file"
	KindLink = "link"
)

// Entry is one file or symbolic link of a snapshot, or its top folder.
type Entry struct {
	// Path is slash-separated and starts with the tree's name.
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Exec is whether the file is executable; snapshots keep no other
	// permission bits, so the hash does not depend on a machine's umask.
	Exec bool  `json:"exec,omitempty"`
	Size int64 `json:"size,omitempty"`
	// Target is a link's target, as written.
	Target string `json:"target,omitempty"`
}

// Tree is a code folder or file as its snapshot holds it.
type Tree struct {
	// Root is the local folder or file, symbolic links resolved.
	Root string
	// Name is the code path's base name: the snapshot's top-level entry.
	Name string
	// Hash is the hex SHA-256 of the tree.
	Hash string
	// Entries are in walk order: depth first, names sorted. A folder's
	// tree starts with the folder itself; the folders inside it are
	// implied by their files and links, so empty ones are left out.
	Entries []Entry
}

// Scan walks the folder or file root, leaves out what its ignore file
// names (and the folder skip, for a code folder that holds the porch
// home), and hashes the rest. Symbolic links are followed, as Azure ML
// follows them when it uploads code: a file or folder reached through a
// link is snapshotted (and hashed) as what it holds, and only a link to
// nothing stays a link. File contents are streamed, never held in memory.
// Sockets, devices and named pipes inside a folder are left out; a code
// path that is one is refused.
func Scan(root, skip string) (*Tree, error) {
	return scan(root, skip, treewalk.Walk)
}

// scan is Scan with the walk that decides what links are: verify walks a
// fetched snapshot with its links as they were built.
func scan(root, skip string, walk func(string, func(treewalk.Visit) error) error) (*Tree, error) {
	name := filepath.Base(filepath.Clean(root))
	// A code path that is a symbolic link stands for what it points to.
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	var rules ignoreRules
	switch {
	case info.IsDir():
		if rules, err = readIgnore(root); err != nil {
			return nil, err
		}
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("code %q is %s, which holds no code to snapshot: name a folder or a regular file", root, kindOf(info.Mode()))
	}
	t := &Tree{Root: root, Name: name}
	h := sha256.New()
	io.WriteString(h, "porch code snapshot 1\n")
	err = walk(root, func(v treewalk.Visit) error {
		if v.Rel != "" && ((v.IsDir() && v.Path == skip) || rules.ignored(v.Rel, v.IsDir())) {
			if v.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		e := Entry{Path: path.Join(t.Name, v.Rel)}
		switch {
		case v.IsDir() && v.Rel != "":
			return nil // folders are implied by what they hold, as in git
		case v.IsDir():
			e.Kind = KindDir
		case v.Info == nil:
			e.Kind, e.Target = KindLink, v.Link
		case v.Info.Mode().IsRegular():
			e.Kind = KindFile
			if err := hashFile(h, v.Path, &e); err != nil {
				return err
			}
			t.Entries = append(t.Entries, e)
			return nil
		default:
			return nil
		}
		writeHeader(h, e)
		t.Entries = append(t.Entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot code %q: %w", root, err)
	}
	t.Hash = hex.EncodeToString(h.Sum(nil))
	return t, nil
}

// kindOf names a file mode that is neither a folder nor a regular file.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// hashFile adds a file's header and contents to h, and fills e's size and
// executable bit from the open file, so they describe what was hashed.
func hashFile(h hash.Hash, p string, e *Entry) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	e.Size, e.Exec = info.Size(), info.Mode().Perm()&0o111 != 0
	writeHeader(h, *e)
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != e.Size {
		return fmt.Errorf("%s changed while it was read: submit again once it is written", p)
	}
	return nil
}

// writeHeader adds an entry's header to the hash: its kind, path, and for
// a file its executable bit and size (the contents follow), for a link its
// target. Quoting keeps the encoding unambiguous.
func writeHeader(h hash.Hash, e Entry) {
	line := e.Kind + " " + strconv.Quote(e.Path)
	switch e.Kind {
	case KindFile:
		line += " " + strconv.FormatBool(e.Exec) + " " + strconv.FormatInt(e.Size, 10)
	case KindLink:
		line += " " + strconv.Quote(e.Target)
	}
	io.WriteString(h, line+"\n")
}

// Files counts the tree's regular files.
func (t *Tree) Files() int {
	n := 0
	for _, e := range t.Entries {
		if e.Kind == KindFile {
			n++
		}
	}
	return n
}
