package codesnapshot

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// writeTree writes files (path -> contents) under a fresh folder named src.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "src")
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	return root
}

func hashOf(t *testing.T, root string) string {
	t.Helper()
	tr, err := Scan(root, "")
	require.NoError(t, err)
	return tr.Hash
}

func TestHashIsStableAndChangesWithTheTree(t *testing.T) {
	files := map[string]string{"main.py": "print(1)\n", "lib/util.py": "X = 1\n", "lib/data.csv": "a,b\n"}
	root := writeTree(t, files)
	base := hashOf(t, root)
	assert.Len(t, base, 64)
	assert.Equal(t, base, hashOf(t, root), "hashing twice gives the same hash")
	assert.Equal(t, base, hashOf(t, writeTree(t, files)), "the same tree elsewhere has the same hash")

	require.NoError(t, os.Chmod(filepath.Join(root, "main.py"), 0o664))
	assert.Equal(t, base, hashOf(t, root), "permission bits other than executable do not count")

	require.NoError(t, os.Chmod(filepath.Join(root, "main.py"), 0o755))
	assert.NotEqual(t, base, hashOf(t, root), "making a file executable changes the hash")
	require.NoError(t, os.Chmod(filepath.Join(root, "main.py"), 0o644))

	require.NoError(t, os.WriteFile(filepath.Join(root, "lib/util.py"), []byte("X = 2\n"), 0o644))
	assert.NotEqual(t, base, hashOf(t, root), "changed contents change the hash")
	require.NoError(t, os.WriteFile(filepath.Join(root, "lib/util.py"), []byte("X = 1\n"), 0o644))
	assert.Equal(t, base, hashOf(t, root))

	require.NoError(t, os.Rename(filepath.Join(root, "lib/data.csv"), filepath.Join(root, "lib/data2.csv")))
	assert.NotEqual(t, base, hashOf(t, root), "a renamed file changes the hash")
	require.NoError(t, os.Rename(filepath.Join(root, "lib/data2.csv"), filepath.Join(root, "lib/data.csv")))

	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	assert.Equal(t, base, hashOf(t, root), "an empty folder does not count, as in git")
	require.NoError(t, os.Remove(filepath.Join(root, "empty")))

	require.NoError(t, os.Symlink("main.py", filepath.Join(root, "link.py")))
	assert.NotEqual(t, base, hashOf(t, root), "a symbolic link counts, as what it points to")
	require.NoError(t, os.Remove(filepath.Join(root, "link.py")))
	assert.Equal(t, base, hashOf(t, root))

	// The same contents moved between files: lengths keep the encoding
	// unambiguous.
	other := writeTree(t, map[string]string{"main.py": "print(1)\nX = 1\n", "lib/util.py": "", "lib/data.csv": "a,b\n"})
	assert.NotEqual(t, base, hashOf(t, other))

	renamed := filepath.Join(t.TempDir(), "code")
	require.NoError(t, os.Rename(writeTree(t, files), renamed))
	assert.NotEqual(t, base, hashOf(t, renamed), "the folder's own name is part of the snapshot")
}

func TestAmlignoreLeavesFilesOutOfTheHash(t *testing.T) {
	ignore := "# scratch\n*.log\n/data/\nbuild/\n!keep.log\n**/cache/**\ndocs/*.md\n"
	// with is the tree with one more file, and the folders it needs.
	with := func(extra string) string {
		files := map[string]string{"main.py": "print(1)\n", "lib/util.py": "X = 1\n", "docs/api/index.txt": "x", ".amlignore": ignore}
		if extra != "" {
			files[extra] = "extra"
		}
		return hashOf(t, writeTree(t, files))
	}
	base := with("")
	for _, p := range []string{"run.log", "lib/deep/x.log", "data/big.bin", "build/a.o", "lib/build/b.o", "lib/cache/b/c", "docs/readme.md"} {
		assert.Equal(t, base, with(p), "%s is ignored", p)
	}
	for _, p := range []string{"keep.log", "lib/data/x.csv", "docs/api/x.md", "main.pyc", "lib/cache"} {
		assert.NotEqual(t, base, with(p), "%s is not ignored", p)
	}

	tr, err := Scan(writeTree(t, map[string]string{".amlignore": ignore}), "")
	require.NoError(t, err)
	assert.Contains(t, entryPaths(tr), "src/.amlignore", "the ignore file itself is in the snapshot")
}

func TestAmlignoreWinsOverGitignore(t *testing.T) {
	root := writeTree(t, map[string]string{"a.txt": "a", "b.txt": "b", ".gitignore": "a.txt\n"})
	withGit, err := Scan(root, "")
	require.NoError(t, err)
	assert.NotContains(t, entryPaths(withGit), "src/a.txt", ".gitignore applies when there is no .amlignore")

	require.NoError(t, os.WriteFile(filepath.Join(root, ".amlignore"), []byte("b.txt\n"), 0o644))
	withAml, err := Scan(root, "")
	require.NoError(t, err)
	assert.Contains(t, entryPaths(withAml), "src/a.txt", ".gitignore is unused when .amlignore exists")
	assert.NotContains(t, entryPaths(withAml), "src/b.txt")
}

func TestMalformedIgnorePatternNamesTheLine(t *testing.T) {
	root := writeTree(t, map[string]string{"a.txt": "a", ".amlignore": "ok\n[\n"})
	_, err := Scan(root, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(root, ".amlignore")+":2:")
}

func TestSingleFileSnapshot(t *testing.T) {
	root := writeTree(t, map[string]string{"run.sh": "echo hi\n"})
	tr, err := Scan(filepath.Join(root, "run.sh"), "")
	require.NoError(t, err)
	require.Len(t, tr.Entries, 1)
	assert.Equal(t, Entry{Path: "run.sh", Kind: KindFile, Size: 8}, tr.Entries[0])
	assert.Equal(t, "azureml://datastores/lake/paths/LocalUpload/"+tr.Hash+"/run.sh", tr.URI("lake"))
	hash, name, ok := ParsePath("LocalUpload/" + tr.Hash + "/run.sh")
	assert.True(t, ok)
	assert.Equal(t, tr.Hash, hash)
	assert.Equal(t, "run.sh", name)
}

func TestCopyLocalCopiesOnceAndKeepsTheExecutableBit(t *testing.T) {
	root := writeTree(t, map[string]string{"run.sh": "echo hi\n", "lib/a.py": "A = 1\n", ".amlignore": "*.tmp\n", "x.tmp": "no"})
	require.NoError(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	tr, err := Scan(root, "")
	require.NoError(t, err)
	ds := t.TempDir()
	copied, err := CopyLocal(tr, ds)
	require.NoError(t, err)
	assert.True(t, copied)
	snap := filepath.Join(ds, "LocalUpload", tr.Hash, "src")
	assert.Equal(t, tr.Hash, hashOf(t, snap), "the copy hashes the same")
	assert.NoFileExists(t, filepath.Join(snap, "x.tmp"))
	info, err := os.Stat(filepath.Join(snap, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())

	copied, err = CopyLocal(tr, ds)
	require.NoError(t, err)
	assert.False(t, copied, "a snapshot that exists is not copied again")
}

func entryPaths(tr *Tree) []string {
	var out []string
	for _, e := range tr.Entries {
		out = append(out, e.Path)
	}
	return out
}

func TestScanFollowsACodePathThatIsALink(t *testing.T) {
	root := writeTree(t, map[string]string{"main.py": "print(1)\n"})
	link := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.Symlink(root, link))
	tr, err := Scan(link, "")
	require.NoError(t, err)
	assert.Equal(t, hashOf(t, root), tr.Hash, "the link stands for its folder")
	assert.Equal(t, []string{"src", "src/main.py"}, entryPaths(tr))
	copied, err := CopyLocal(tr, t.TempDir())
	require.NoError(t, err)
	assert.True(t, copied)
}

func TestSnapshotPlanRefusesALocalDatastoreThisMachineLacks(t *testing.T) {
	p := &plan.Plan{Pipeline: plan.Pipeline{Steps: []plan.Step{{Name: "a", Path: "a", Command: &plan.Command{Code: writeTree(t, map[string]string{"x": "x"})}}}}}
	missing := filepath.Join(t.TempDir(), "not-mounted", "porch")
	_, err := SnapshotPlan(context.Background(), p, plan.Datastore{Name: "shared", Type: plan.DatastoreLocal, Path: missing}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"shared" is the local folder "`+missing+`", whose parent this machine does not have`)
	assert.NoDirExists(t, missing)

	ds := filepath.Join(t.TempDir(), "fresh") // the folder itself may be new
	results, err := SnapshotPlan(context.Background(), p, plan.Datastore{Name: "shared", Type: plan.DatastoreLocal, Path: ds}, "")
	require.NoError(t, err)
	require.Len(t, results, 1)
	assert.Equal(t, results[0].URI, p.Pipeline.Steps[0].Command.Code)
	assert.DirExists(t, filepath.Join(ds, "LocalUpload"))
}

// TestLinksAreSnapshottedAsWhatTheyPointTo: code reached through links
// (a shared library folder, a file kept elsewhere) is snapshotted and
// hashed by what the links point to, as Azure ML follows links when it
// uploads code: changing a target changes the snapshot, even when the
// links' text does not change.
func TestLinksAreSnapshottedAsWhatTheyPointTo(t *testing.T) {
	shared := t.TempDir()
	writeFile := func(p, data string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	writeFile(filepath.Join(shared, "lib", "util.py"), "X = 1\n")
	writeFile(filepath.Join(shared, "conf.yml"), "a: 1\n")
	root := writeTree(t, map[string]string{"main.py": "import util\n"})
	require.NoError(t, os.Symlink(filepath.Join(shared, "lib"), filepath.Join(root, "lib")))
	require.NoError(t, os.Symlink(filepath.Join(shared, "conf.yml"), filepath.Join(root, "conf.yml")))
	tr, err := Scan(root, "")
	require.NoError(t, err)
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.Kind+" "+e.Path)
	}
	assert.Equal(t, []string{"dir src", "file src/conf.yml", "file src/lib/util.py", "file src/main.py"}, got)
	assert.Equal(t, tr.Hash, hashOf(t, writeTree(t, map[string]string{"main.py": "import util\n", "lib/util.py": "X = 1\n", "conf.yml": "a: 1\n"})),
		"a tree reached through links hashes as the same tree copied")

	writeFile(filepath.Join(shared, "lib", "util.py"), "X = 2\n")
	assert.NotEqual(t, tr.Hash, hashOf(t, root), "a link's target changed")
	writeFile(filepath.Join(shared, "lib", "util.py"), "X = 1\n")
	writeFile(filepath.Join(shared, "conf.yml"), "a: 2\n")
	assert.NotEqual(t, tr.Hash, hashOf(t, root), "a linked file changed")

	dst := t.TempDir()
	copied, err := CopyLocal(tr, dst)
	require.NoError(t, err)
	require.True(t, copied)
	held, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(Path(tr.Hash)), "src", "lib", "util.py"))
	require.NoError(t, err)
	assert.Equal(t, "X = 1\n", string(held), "the snapshot holds the linked files, not the links")

	require.NoError(t, os.Symlink("..", filepath.Join(shared, "lib", "up")))
	_, err = Scan(root, "")
	assert.ErrorContains(t, err, "symbolic link loop")
}

// TestACodePathThatIsAPipeOrSocketIsRefused: a named pipe or socket holds
// no code; snapshotting it as an empty tree would let a step run (and be
// reused) with nothing.
func TestACodePathThatIsAPipeOrSocketIsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "train.py")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err := Scan(fifo, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a named pipe (FIFO), which holds no code to snapshot: name a folder or a regular file")

	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	_, err = Scan(sock, "")
	assert.ErrorContains(t, err, "is a socket")

	// Inside a folder, such files are not code: they are left out.
	root := writeTree(t, map[string]string{"main.py": "print(1)\n"})
	base := hashOf(t, root)
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
	assert.Equal(t, base, hashOf(t, root))
}
