package codesnapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/treewalk"
)

// uploadDir is the datastore folder snapshots live under, as in Azure ML.
const uploadDir = "LocalUpload"

// Path is the datastore path of the snapshot with this hash:
// LocalUpload/<hash>.
func Path(hash string) string { return uploadDir + "/" + hash }

// URI is the tree's snapshot on the datastore ds, the form a plan's code
// takes: azureml://datastores/<ds>/paths/LocalUpload/<hash>/<name>, with a
// trailing slash for a folder.
func (t *Tree) URI(ds string) string {
	u := "azureml://datastores/" + ds + "/paths/" + Path(t.Hash) + "/" + t.Name
	if len(t.Entries) > 0 && t.Entries[0].Kind == KindDir {
		u += "/"
	}
	return u
}

var snapshotPath = regexp.MustCompile(`^` + uploadDir + `/([0-9a-f]{64})/([^/]+)/?$`)

// ParsePath splits a datastore path LocalUpload/<hash>/<name>[/] into the
// snapshot's hash and top-level name; ok is false for any other path.
func ParsePath(p string) (hash, name string, ok bool) {
	m := snapshotPath.FindStringSubmatch(p)
	if m == nil || m[2] == "." || m[2] == ".." {
		return "", "", false
	}
	return m[1], m[2], true
}

// manifest is what a snapshot's commit marker holds on object storage.
type manifest struct {
	Hash    string  `json:"hash"`
	Name    string  `json:"name"`
	Entries []Entry `json:"entries"`
}

// source is the local path of an entry of the tree.
func (t *Tree) source(e Entry) string {
	return filepath.Join(t.Root, filepath.FromSlash(strings.TrimPrefix(e.Path, t.Name)))
}

// UploadObjects uploads the tree to LocalUpload/<hash>/ on s, file by file
// (streamed), and commits it with its manifest. A snapshot already
// committed is not uploaded again: uploaded is then false.
func UploadObjects(ctx context.Context, s *objectstore.Store, t *Tree) (uploaded bool, err error) {
	dir := Path(t.Hash)
	done, err := s.Committed(ctx, dir)
	if err != nil || done {
		return false, err
	}
	for _, e := range t.Entries {
		if e.Kind != KindFile {
			continue // folders and links live in the manifest
		}
		n, err := s.PutFile(ctx, t.source(e), dir+"/"+e.Path)
		if err != nil {
			return false, err
		}
		if n != e.Size {
			return false, fmt.Errorf("%s changed while it was uploaded: submit again once it is written", t.source(e))
		}
	}
	data, err := json.Marshal(manifest{Hash: t.Hash, Name: t.Name, Entries: t.Entries})
	if err != nil {
		return false, err
	}
	return true, s.Put(ctx, dir+"/"+objectstore.CommitMarker, bytes.NewReader(data), int64(len(data)))
}

// CopyLocal copies the tree into the folder dir/LocalUpload/<hash> of a
// local datastore. The snapshot's folder appears whole (a rename), so one
// that exists is complete and is not copied again: copied is then false.
func CopyLocal(t *Tree, dir string) (copied bool, err error) {
	final := filepath.Join(dir, filepath.FromSlash(Path(t.Hash)))
	if _, err := os.Stat(final); err == nil {
		return false, nil
	}
	return build(final, t.Entries, func(e Entry, dst string) error { return copyFile(t.source(e), dst) }, nil)
}

// build writes entries into a temporary folder beside final, fetching each
// file with get, checks it with check (when not nil), and renames it to
// final. It reports false when another writer made final first.
func build(final string, entries []Entry, get func(e Entry, dst string) error, check func(tmp string) error) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".porch-snapshot-*")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// Others may share the datastore's folder: not MkdirTemp's 0700.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, err
	}
	for _, e := range entries {
		local := filepath.FromSlash(e.Path)
		if !filepath.IsLocal(local) {
			return false, fmt.Errorf("snapshot entry %q is not a plain relative path", e.Path)
		}
		dst := filepath.Join(tmp, local)
		switch e.Kind {
		case KindDir:
			err = os.MkdirAll(dst, 0o755)
		case KindLink:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.Symlink(e.Target, dst)
			}
		case KindFile:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = get(e, dst)
			}
			if err == nil {
				err = os.Chmod(dst, fileMode(e))
			}
		default:
			err = fmt.Errorf("snapshot entry %q has unknown kind %q", e.Path, e.Kind)
		}
		if err != nil {
			return false, err
		}
	}
	if check != nil {
		if err := check(tmp); err != nil {
			return false, err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func fileMode(e Entry) fs.FileMode {
	if e.Exec {
		return 0o755
	}
	return 0o644
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}

// ErrMissing is a snapshot that is not committed on its datastore.
var ErrMissing = errors.New("the code snapshot is not on its datastore")

// Cache holds the snapshots a worker fetched from object storage, one
// folder per hash: Dir/<hash>/<name>. It is safe for concurrent use: steps
// that need the same snapshot at once fetch it once.
type Cache struct {
	// Dir is the cache's folder.
	Dir string

	mu   sync.Mutex
	busy map[string]*sync.Mutex
}

// lock serialises fetches of one hash.
func (c *Cache) lock(hash string) func() {
	c.mu.Lock()
	if c.busy == nil {
		c.busy = map[string]*sync.Mutex{}
	}
	m, ok := c.busy[hash]
	if !ok {
		m = &sync.Mutex{}
		c.busy[hash] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Fetch returns the local copy of the snapshot hash/name, fetching it from s
// first unless the cache holds it. The fetched tree is hashed again before
// it enters the cache, so the cache never holds a partial or altered copy.
// A snapshot that is not committed on s is ErrMissing. fetched reports
// whether this call fetched it.
func (c *Cache) Fetch(ctx context.Context, s *objectstore.Store, hash, name string) (local string, fetched bool, err error) {
	final := filepath.Join(c.Dir, hash)
	local = filepath.Join(final, name)
	unlock := c.lock(hash)
	defer unlock()
	if _, err := os.Lstat(local); err == nil {
		return local, false, nil
	}
	m, err := readManifest(ctx, s, hash, c.Dir)
	if err != nil {
		return "", false, err
	}
	if m.Name != name {
		return "", false, fmt.Errorf("code snapshot %s holds %q, not %q: the plan names a snapshot that does not exist", Path(hash), m.Name, name)
	}
	get := func(e Entry, dst string) error { return s.GetFile(ctx, Path(hash)+"/"+e.Path, dst) }
	check := func(tmp string) error { return verify(filepath.Join(tmp, name), hash) }
	built, err := build(final, m.Entries, get, check)
	if err != nil {
		return "", false, fmt.Errorf("fetch code snapshot %s: %w", Path(hash), err)
	}
	return local, built, nil
}

// readManifest reads a snapshot's commit marker, through a temporary file
// in dir.
func readManifest(ctx context.Context, s *objectstore.Store, hash, dir string) (manifest, error) {
	var m manifest
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return m, err
	}
	tmpDir, err := os.MkdirTemp(dir, ".porch-manifest-*")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "manifest.json")
	if err := s.GetFile(ctx, Path(hash)+"/"+objectstore.CommitMarker, tmp); err != nil {
		var oe *objectstore.Error
		if errors.As(err, &oe) && oe.NotFound() {
			return m, fmt.Errorf("%w: %s has no commit marker (deleted, or its upload never finished): submit the run again", ErrMissing, Path(hash))
		}
		return m, err
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Hash != hash {
		return m, fmt.Errorf("code snapshot %s: its commit marker does not hold its manifest: delete %s and submit the run again", Path(hash), Path(hash))
	}
	return m, nil
}

// verify hashes a fetched tree again, its links as links: a snapshot
// made before porch followed links holds them as such.
func verify(local, hash string) error {
	t, err := scan(local, "", treewalk.WalkLinks)
	if err != nil {
		return err
	}
	if t.Hash != hash {
		return fmt.Errorf("code snapshot %s does not match its hash (got %s): its objects were changed after the upload; delete %s and submit the run again", Path(hash), t.Hash, Path(hash))
	}
	return nil
}
