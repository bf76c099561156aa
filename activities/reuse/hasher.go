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
)

// racyWindow is how recent a file's modification may be for its hash to
// be kept: a file written again within the clock's granularity keeps its
// size and time, so a fresh file's hash is not trusted for later (as git
// treats racily clean files).
const racyWindow = 2 * time.Second

// Hasher hashes local files and folders by content, keeping each file's
// hash by path, size and modification time, in memory and in a file per
// folder under Dir, so an unchanged folder is a walk and a stat per file.
// It is safe for concurrent use.
type Hasher struct {
	// Dir holds the kept hashes; "" keeps them in memory only.
	Dir string

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
	Size int64  `json:"s"`
	Mod  int64  `json:"m"`
	Hash string `json:"h"`
}

// File is one file of a hashed tree.
type File struct {
	// Path is slash-separated, relative to the tree's root ("" for a
	// tree that is one file).
	Path string
	Hash string
}

// Tree hashes the file or folder root: the hash of its files' paths and
// contents, and each file's. Symbolic links count by their targets as
// written; empty folders do not count.
func (h *Hasher) Tree(root string) (string, []File, error) {
	r := h.locked(root)
	defer r.mu.Unlock()
	kept := len(r.files)
	seen := map[string]bool{}
	var files []File
	changed := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		sum, fresh, err := r.hash(p, rel, d)
		if err != nil {
			return err
		}
		changed = changed || fresh
		seen[rel] = true
		files = append(files, File{Path: rel, Hash: sum})
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("hash %q: %w", root, err)
	}
	for rel := range r.files {
		if !seen[rel] {
			delete(r.files, rel)
		}
	}
	if changed || len(r.files) != kept {
		h.save(root, r.files)
	}
	return sumFiles(files), files, nil
}

// Files hashes the files rels (slash-separated, relative to the folder
// root; "" for a root that is a file) and nothing else of root.
func (h *Hasher) Files(root string, rels []string) ([]File, error) {
	r := h.locked(root)
	defer r.mu.Unlock()
	files := make([]File, 0, len(rels))
	changed := false
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		info, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("hash %q: %w", p, err)
		}
		sum, fresh, err := r.hash(p, rel, fs.FileInfoToDirEntry(info))
		if err != nil {
			return nil, fmt.Errorf("hash %q: %w", p, err)
		}
		changed = changed || fresh
		files = append(files, File{Path: rel, Hash: sum})
	}
	if changed {
		h.save(root, r.files)
	}
	return files, nil
}

// hash is one file's hash, kept or computed; fresh says it was computed.
func (r *rootHashes) hash(p, rel string, d fs.DirEntry) (string, bool, error) {
	info, err := d.Info()
	if err != nil {
		return "", false, err
	}
	if d.Type()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		return hashOf("link " + target), false, err
	}
	if !info.Mode().IsRegular() {
		return hashOf("special " + info.Mode().Type().String()), false, nil
	}
	mod := info.ModTime().UnixNano()
	if k, ok := r.files[rel]; ok && k.Size == info.Size() && k.Mod == mod {
		return k.Hash, false, nil
	}
	sum, err := hashFile(p)
	if err != nil {
		return "", false, err
	}
	if time.Since(info.ModTime()) > racyWindow {
		r.files[rel] = fileHash{Size: info.Size(), Mod: mod, Hash: sum}
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
