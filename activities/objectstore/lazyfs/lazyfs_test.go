package lazyfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// bucket is a fresh bucket on the test MinIO: a store that talks to MinIO
// directly (to write test data) and one that talks through a proxy counting
// the bytes of response bodies (what a mount fetches).
type bucket struct {
	direct, counted *objectstore.Store
	fetched         *atomic.Int64
	endpoint, name  string
}

func newBucket(t testing.TB) bucket {
	endpoint, access, secret, name := s3test.Start(t)
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	target, err := url.Parse(endpoint)
	require.NoError(t, err)
	fetched := &atomic.Int64{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		r.Body = countingBody{r.Body, fetched}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	open := func(endpoint string) *objectstore.Store {
		s, err := objectstore.Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: name, Prefix: "data"})
		require.NoError(t, err)
		return s
	}
	return bucket{direct: open(endpoint), counted: open(srv.URL), fetched: fetched, endpoint: endpoint, name: name}
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// put uploads files (relative path -> content) as the folder p.
func (b bucket) put(t testing.TB, p string, files map[string][]byte) {
	src := t.TempDir()
	for rel, data := range files {
		file := filepath.Join(src, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, data, 0o644))
	}
	_, err := b.direct.Upload(context.Background(), src, p)
	require.NoError(t, err)
}

// mount mounts p, skipping the test where this host cannot mount FUSE, and
// unmounts it when the test ends.
func mount(t *testing.T, s *objectstore.Store, p string) *Mounted {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE on this host: %v", err)
	}
	m, err := Mount(context.Background(), s, p, filepath.Join(t.TempDir(), "mnt"), Options{})
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("this host refuses FUSE mounts: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Unmount() })
	return m
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mounted(t *testing.T) []string {
	points, err := Mounts()
	require.NoError(t, err)
	return points
}

func TestMountFolderListsAndReads(t *testing.T) {
	b := newBucket(t)
	csv := randomBytes(3<<20+17, 1) // several chunks, not a whole number of them
	b.put(t, "in", map[string][]byte{"a.txt": []byte("hello\n"), "sub/b.csv": csv, "sub/deeper/c": nil})
	m := mount(t, b.counted, "in")
	require.Equal(t, m.Dir, m.Path)
	require.Contains(t, mounted(t), m.Dir)

	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	require.Equal(t, []string{"a.txt", "sub"}, names(m.Dir), "the commit marker is not shown")
	require.Equal(t, []string{"b.csv", "deeper"}, names(filepath.Join(m.Dir, "sub")))
	require.Equal(t, []string{"c"}, names(filepath.Join(m.Dir, "sub", "deeper")))

	got, err := os.ReadFile(filepath.Join(m.Dir, "sub", "b.csv"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(csv, got), "read %d bytes, want the object's %d", len(got), len(csv))
	info, err := os.Stat(filepath.Join(m.Dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, int64(6), info.Size())
	require.Equal(t, os.FileMode(0o444), info.Mode().Perm())
	empty, err := os.ReadFile(filepath.Join(m.Dir, "sub", "deeper", "c"))
	require.NoError(t, err)
	require.Empty(t, empty)

	_, err = os.OpenFile(filepath.Join(m.Dir, "a.txt"), os.O_WRONLY, 0)
	require.ErrorIs(t, err, syscall.EROFS)
	require.ErrorIs(t, os.WriteFile(filepath.Join(m.Dir, "new"), nil, 0o644), syscall.EROFS)
	_, err = os.Stat(filepath.Join(m.Dir, "absent"))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, m.Unmount())
	require.NotContains(t, mounted(t), m.Dir)
	require.Empty(t, names(m.Dir), "the mount point is an empty folder again")
}

func TestMountSingleObject(t *testing.T) {
	b := newBucket(t)
	b.put(t, "in", map[string][]byte{"data.csv": []byte("a,b\n1,2\n")})
	m := mount(t, b.counted, "in/data.csv")
	require.Equal(t, filepath.Join(m.Dir, "data.csv"), m.Path)
	got, err := os.ReadFile(m.Path)
	require.NoError(t, err)
	require.Equal(t, "a,b\n1,2\n", string(got))
}

func TestMountMissingPath(t *testing.T) {
	b := newBucket(t)
	_, err := Mount(context.Background(), b.counted, "nothing/here", filepath.Join(t.TempDir(), "mnt"), Options{})
	var serr *objectstore.Error
	require.ErrorAs(t, err, &serr)
	require.True(t, serr.NotFound())
	require.ErrorContains(t, err, `no object or folder "nothing/here"`)
}

// An object cut short after its folder was listed fails the read (EIO)
// rather than showing the command a file shorter than its size.
func TestMountObjectCutShortFailsTheRead(t *testing.T) {
	b := newBucket(t)
	b.put(t, "in", map[string][]byte{"a.txt": []byte("0123456789")})
	m := mount(t, b.counted, "in")
	info, err := os.Stat(filepath.Join(m.Dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, int64(10), info.Size())
	require.NoError(t, b.direct.Put(context.Background(), "in/a.txt", strings.NewReader("01234"), 5))

	_, err = os.ReadFile(filepath.Join(m.Dir, "a.txt"))
	require.ErrorIs(t, err, syscall.EIO)
}

// Reading the start of a big object fetches about a chunk, not the object,
// and reading one file of a folder fetches nothing of its siblings.
func TestMountFetchesOnlyWhatIsRead(t *testing.T) {
	b := newBucket(t)
	const size = 64 << 20
	big := randomBytes(size, 2)
	b.put(t, "in", map[string][]byte{"big.bin": big, "other.bin": randomBytes(8<<20, 3), "small.txt": []byte("x")})
	m := mount(t, b.counted, "in")
	before := b.fetched.Load()

	f, err := os.Open(filepath.Join(m.Dir, "big.bin"))
	require.NoError(t, err)
	defer f.Close()
	head := make([]byte, 4096)
	_, err = io.ReadFull(f, head)
	require.NoError(t, err)
	require.Equal(t, big[:4096], head)
	mid := make([]byte, 4096)
	_, err = f.ReadAt(mid, 40<<20)
	require.NoError(t, err)
	require.Equal(t, big[40<<20:40<<20+4096], mid)

	fetched := b.fetched.Load() - before
	t.Logf("read 8 KiB of a %d MiB object in a folder with an 8 MiB sibling: %d KiB fetched", size>>20, fetched>>10)
	require.Less(t, fetched, int64(size/16), "fetched %d bytes to read 8 KiB", fetched)
}

func TestDetachStale(t *testing.T) {
	b := newBucket(t)
	b.put(t, "in", map[string][]byte{"a.txt": []byte("a")})
	m := mount(t, b.counted, "in")
	parent := filepath.Dir(m.Dir)
	f, err := os.Open(filepath.Join(m.Dir, "a.txt")) // a process still reading
	require.NoError(t, err)
	defer f.Close()

	detached, err := DetachStale(parent)
	require.NoError(t, err)
	require.Equal(t, []string{m.Dir}, detached)
	require.False(t, slices.Contains(mounted(t), m.Dir))
	require.NoError(t, os.RemoveAll(parent))
}

// helperMountEnv makes the test binary, run again by
// TestDetachStaleAfterTheMountingProcessDied, mount and wait to be killed.
const helperMountEnv = "LAZYFS_TEST_MOUNT"

func TestHelperMount(t *testing.T) {
	spec := os.Getenv(helperMountEnv) // endpoint|bucket|dir
	if spec == "" {
		t.Skip("run by TestDetachStaleAfterTheMountingProcessDied")
	}
	parts := strings.SplitN(spec, "|", 3)
	s, err := objectstore.Open(plan.Datastore{Name: "lake", Type: plan.DatastoreS3, Endpoint: parts[0], Bucket: parts[1], Prefix: "data"})
	require.NoError(t, err)
	_, err = Mount(context.Background(), s, "in", parts[2], Options{})
	require.NoError(t, err)
	fmt.Println("mounted")
	select {} // until killed
}

// A worker killed with its mounts up leaves dead mounts ("transport endpoint
// is not connected"); DetachDead clears them and leaves live ones, and
// DetachStale clears both, so the folder can go.
func TestDetachStaleAfterTheMountingProcessDied(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs /dev/fuse and root")
	}
	b := newBucket(t)
	b.put(t, "in", map[string][]byte{"a.txt": []byte("a")})
	parent := t.TempDir()
	dir := filepath.Join(parent, "work", "mnt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMount$")
	cmd.Env = append(os.Environ(), helperMountEnv+"="+b.endpoint+"|"+b.name+"|"+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the helper did not mount")
	require.Equal(t, "mounted\n", line)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	_, err = os.Stat(filepath.Join(dir, "a.txt"))
	require.ErrorIs(t, err, syscall.ENOTCONN, "a dead mount")
	require.Error(t, os.RemoveAll(parent), "a folder holding a dead mount cannot be removed")
	live, err := Mount(context.Background(), b.direct, "in", filepath.Join(parent, "work", "live"), Options{})
	require.NoError(t, err)
	defer live.Unmount()

	detached, err := DetachDead(parent)
	require.NoError(t, err)
	require.Equal(t, []string{dir}, detached, "only the dead mount")
	data, err := os.ReadFile(filepath.Join(live.Dir, "a.txt"))
	require.NoError(t, err, "the live mount still serves")
	require.Equal(t, "a", string(data))

	detached, err = DetachStale(parent)
	require.NoError(t, err)
	require.Equal(t, []string{live.Dir}, detached)
	require.NoError(t, os.RemoveAll(parent))
}
