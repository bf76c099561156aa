package reuse

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/activities/atomicfile"
	"github.com/porch-pipelines/porch/activities/treewalk"
)

// racyWindow is how recent a file's modification may be for its hash to
// be kept: a file written again within the clock's granularity keeps its
// size and time, so a fresh file's hash is not trusted for later (as git
// treats racily clean files).
const racyWindow = 2 * time.Second

// Hasher hashes local files and folders by content, keeping each file's
// hash by path, size, modification time, inode-change time and inode, in
// memory and in a file per folder under Dir, so an unchanged folder is a
// walk and a stat per file. A file written again with its size and times
// put back (touch -r) still has a new inode-change time: it is hashed
// again. It is safe for concurrent use.
type Hasher struct {
	// Dir holds the kept hashes; "" keeps them in memory only.
	Dir string

	// clock says what time it is, for the racy window; nil is
	// time.Now. Tests move it on rather than wait.
	clock func() time.Time
	mu    sync.Mutex
	roots map[string]*rootHashes
}

// rootHashes are the kept hashes of one file or folder, by relative path.
type rootHashes struct {
	mu     sync.Mutex
	loaded bool
	files  map[string]fileHash
}

type fileHash struct {
	Size  int64  `json:"s"`
	Mod   int64  `json:"m"`
	Ctime int64  `json:"c,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
	Hash  string `json:"h"`
}

// same says whether two stats describe the same unchanged file.
func (k fileHash) same(o fileHash) bool {
	return k.Size == o.Size && k.Mod == o.Mod && k.Ctime == o.Ctime && k.Ino == o.Ino
}

// File is one file of a hashed tree.
type File struct {
	// Path is slash-separated, relative to the tree's root ("" for a
	// tree that is one file).
	Path string
	// Hash is the file's content hash; "" for a file a manifest lists by
	// size and modification time (Mod, Unix ns) only.
	Hash string
	Size int64 `json:",omitempty"`
	Mod  int64 `json:",omitempty"`
}

// Tree hashes the file or folder root: the hash of its files' paths and
// contents, and each file's. Symbolic links count by what they point to
// (a link whose target does not exist, by its text); empty folders do
// not count.
func (h *Hasher) Tree(root string) (string, []File, error) {
	files, err := h.walk(root, -1)
	if err != nil {
		return "", nil, err
	}
	return sumFiles(files), files, nil
}

// Manifest lists the file or folder root as a record of a step's output
// keeps it: each file's path and size, and its content hash when it holds
// at most maxHash bytes (a larger file, its modification time instead).
func (h *Hasher) Manifest(root string, maxHash int64) ([]File, error) {
	return h.walk(root, maxHash)
}

// walk lists root's files with their hashes, hashing no file larger than
// maxHash bytes (none when maxHash is negative).
func (h *Hasher) walk(root string, maxHash int64) ([]File, error) {
	r := h.locked(root)
	defer r.mu.Unlock()
	kept := len(r.files)
	seen := map[string]bool{}
	var files []File
	changed := false
	err := treewalk.Walk(root, func(v treewalk.Visit) error {
		if v.IsDir() {
			return nil
		}
		f, fresh, err := h.file(r, v, maxHash)
		if err != nil {
			return err
		}
		changed = changed || fresh
		seen[v.Rel] = true
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hash %q: %w", root, err)
	}
	for rel := range r.files {
		if !seen[rel] {
			delete(r.files, rel)
		}
	}
	if changed || len(r.files) != kept {
		h.save(root, r.files)
	}
	return files, nil
}

// file is the entry v as a hashed tree lists it; fresh says its hash was
// computed rather than kept.
func (h *Hasher) file(r *rootHashes, v treewalk.Visit, maxHash int64) (File, bool, error) {
	f := File{Path: v.Rel}
	switch {
	case v.Info == nil:
		f.Hash = hashOf("dangling link " + v.Link)
		return f, false, nil
	case !v.Info.Mode().IsRegular():
		f.Hash = hashOf("special " + v.Info.Mode().Type().String())
		return f, false, nil
	}
	f.Size = v.Info.Size()
	if maxHash >= 0 && f.Size > maxHash {
		f.Mod = v.Info.ModTime().UnixNano()
		return f, false, nil
	}
	sum, fresh, err := r.hash(v.Path, v.Rel, v.Info, h.now())
	f.Hash = sum
	return f, fresh, err
}

func (h *Hasher) now() time.Time {
	if h.clock != nil {
		return h.clock()
	}
	return time.Now()
}

// Files hashes the files rels (slash-separated, relative to the folder
// root; "" for a root that is a file) and nothing else of root, links
// followed.
func (h *Hasher) Files(root string, rels []string) ([]File, error) {
	r := h.locked(root)
	defer r.mu.Unlock()
	files := make([]File, 0, len(rels))
	changed := false
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("hash %q: %w", p, err)
		}
		f, fresh, err := h.file(r, treewalk.Visit{Path: p, Rel: rel, Info: info}, -1)
		if err != nil {
			return nil, fmt.Errorf("hash %q: %w", p, err)
		}
		changed = changed || fresh
		files = append(files, f)
	}
	if changed {
		h.save(root, r.files)
	}
	return files, nil
}

// hash is one regular file's hash, kept or computed; fresh says it was
// computed. A hash is kept only for a file that has not changed within
// the racy window before now.
func (r *rootHashes) hash(p, rel string, info fs.FileInfo, now time.Time) (string, bool, error) {
	ctime, ino := changeID(info)
	st := fileHash{Size: info.Size(), Mod: info.ModTime().UnixNano(), Ctime: ctime, Ino: ino}
	if k, ok := r.files[rel]; ok && k.same(st) {
		return k.Hash, false, nil
	}
	sum, err := hashFile(p)
	if err != nil {
		return "", false, err
	}
	// The later of the two times says when the file last changed.
	if now.Sub(time.Unix(0, max(st.Mod, st.Ctime))) > racyWindow {
		st.Hash = sum
		r.files[rel] = st
	} else {
		delete(r.files, rel)
	}
	return sum, true, nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sumFiles is a tree's hash from its files in walk order.
func sumFiles(files []File) string {
	h := sha256.New()
	io.WriteString(h, "porch tree 1\n")
	for _, f := range files {
		fmt.Fprintf(h, "%q %s\n", f.Path, f.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// locked returns root's kept hashes, loaded and locked: the caller
// unlocks them.
func (h *Hasher) locked(root string) *rootHashes {
	r := h.root(root)
	r.mu.Lock()
	if !r.loaded {
		r.files = h.load(root)
		r.loaded = true
	}
	return r
}

func (h *Hasher) root(root string) *rootHashes {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.roots == nil {
		h.roots = map[string]*rootHashes{}
	}
	r, ok := h.roots[root]
	if !ok {
		r = &rootHashes{}
		h.roots[root] = r
	}
	return r
}

// keptFile is where a root's hashes are kept.
func (h *Hasher) keptFile(root string) string {
	return filepath.Join(h.Dir, hashOf(root)[:32]+".json")
}

// load reads a root's kept hashes; a missing or unreadable file keeps
// none, which costs a hash of every file and nothing else.
func (h *Hasher) load(root string) map[string]fileHash {
	files := map[string]fileHash{}
	if h.Dir == "" {
		return files
	}
	data, err := os.ReadFile(h.keptFile(root))
	if err != nil {
		return files
	}
	if json.Unmarshal(data, &files) != nil {
		return map[string]fileHash{}
	}
	return files
}

// save keeps a root's hashes; failing to is only a slower next time.
func (h *Hasher) save(root string, files map[string]fileHash) {
	if h.Dir == "" {
		return
	}
	if data, err := json.Marshal(files); err == nil {
		_ = atomicfile.Write(h.keptFile(root), data)
	}
}
