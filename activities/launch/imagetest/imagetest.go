// Package imagetest builds the container images porch's tests run steps
// in, without downloading anything but Debian packages, and serves them
// from a registry on loopback so that tests pull them the way a worker
// pulls any image:
//
//   - Busybox: busybox-static in an image FROM scratch (seconds);
//   - Python: Debian's python3 and the packages asked for, made with
//     mmdebstrap and imported with podman import (minutes the first time).
//
// Images are named after their content (localhost/porch-test-*:<hash>), so
// every test package and every run reuses them, and the root filesystems
// mmdebstrap makes are kept in the user's cache folder
// (porch-test-images/) so that an image removed is imported again in
// seconds. Builds of one image take a file lock: test packages running
// at once build it once. Tests skip with a clear line where podman,
// busybox-static or mmdebstrap is missing or podman cannot run a
// container (see README: containers.conf on cgroup v1 hosts).
package imagetest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Suite is the Debian release the Python images are made of.
const Suite = "bookworm"

// PythonPackages are the Debian packages of the Python image tests share:
// pip and venv (conda files), pandas and scikit-learn (the Azure ML
// examples), typing_extensions (which the worker's host lacks).
var PythonPackages = []string{"python3-pip", "python3-venv", "python3-pandas", "python3-sklearn", "python3-typing-extensions"}

var (
	podmanOnce sync.Once
	podmanErr  error
)

// RequirePodman skips t unless podman is installed and runs a container.
func RequirePodman(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed: tests of steps in containers need it (apt-get install podman runc)")
	}
	podmanOnce.Do(func() {
		out, err := exec.Command("podman", "info", "--format", "{{.Host.OCIRuntime.Name}}").CombinedOutput()
		if err != nil {
			podmanErr = fmt.Errorf("podman info: %v: %s", err, out)
		}
	})
	if podmanErr != nil {
		t.Skipf("podman cannot run here (%v): see the README's requirements for containers", podmanErr)
	}
}

// Busybox is an image holding busybox-static's shell and tools, built
// FROM scratch.
func Busybox(t testing.TB) string {
	t.Helper()
	RequirePodman(t)
	bin, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox-static is not installed: the test image is built from it (apt-get install busybox-static)")
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	ref := "localhost/porch-test-busybox:" + hash(string(data))
	withLock(t, "busybox", func() {
		if exists(ref) {
			return
		}
		dir := t.TempDir()
		write(t, filepath.Join(dir, "busybox"), data, 0o755)
		write(t, filepath.Join(dir, "Containerfile"), []byte("FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n"), 0o644)
		run(t, "podman", "build", "--isolation", "chroot", "--tag", ref, dir)
	})
	return ref
}

// Python is an image of Debian's python3 with the Debian packages named
// (python3-pip, python3-pandas, ...).
func Python(t testing.TB, packages ...string) string {
	t.Helper()
	RequirePodman(t)
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("mmdebstrap is not installed: the Python test image is made from Debian packages with it (apt-get install mmdebstrap)")
	}
	pkgs := append([]string{"python3"}, packages...)
	sort.Strings(pkgs)
	key := hash(Suite + " essential " + strings.Join(pkgs, ","))
	ref := "localhost/porch-test-python:" + key
	withLock(t, "python-"+key, func() {
		if exists(ref) {
			return
		}
		tar := filepath.Join(cacheDir(t), "python-"+key+".tar")
		if _, err := os.Stat(tar); err != nil {
			t.Logf("making the Python test image with mmdebstrap (%s): a few minutes, once", strings.Join(pkgs, ", "))
			tmp := tar + ".part"
			run(t, "mmdebstrap", "--variant=essential", "--include="+strings.Join(pkgs, ","), "--mode=root", "--format=tar", Suite, tmp)
			if err := os.Rename(tmp, tar); err != nil {
				t.Fatal(err)
			}
		}
		run(t, "podman", "import", "--change", "CMD [\"/bin/sh\"]", tar, ref)
	})
	return ref
}

// Derive builds an image from base with a Containerfile's further lines
// (RUN, COPY of files, ENV), named after its content; files are written
// into the build context first.
func Derive(t testing.TB, base string, lines []string, files map[string]string) string {
	t.Helper()
	src := "FROM " + base + "\n" + strings.Join(lines, "\n") + "\n"
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	keySrc := src
	for _, n := range names {
		keySrc += "\x00" + n + "\x00" + files[n]
	}
	ref := "localhost/porch-test-derived:" + hash(keySrc)
	withLock(t, "derived", func() {
		if exists(ref) {
			return
		}
		dir := t.TempDir()
		for _, n := range names {
			write(t, filepath.Join(dir, n), []byte(files[n]), 0o644)
		}
		write(t, filepath.Join(dir, "Containerfile"), []byte(src), 0o644)
		run(t, "podman", "build", "--isolation", "chroot", "--tag", ref, dir)
	})
	return ref
}

// Registry starts a registry (Debian's docker-registry) on a free
// loopback port for the test and returns its address, host:port. Skips
// when docker-registry is not installed.
func Registry(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("docker-registry is not installed: image pulls are tested against it on loopback (apt-get install docker-registry)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	write(t, filepath.Join(dir, "config.yml"), []byte(cfg), 0o644)
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not listen on %s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Push pushes a local image to name (host:port/repo:tag) on a loopback
// registry.
func Push(t testing.TB, image, name string) {
	t.Helper()
	run(t, "podman", "push", "--quiet", "--tls-verify=false", image, name)
}

// RegistriesConf writes a containers-registries.conf that lets podman pull
// from the loopback registry at addr without TLS, and makes it the one
// podman reads (CONTAINERS_REGISTRIES_CONF) for the rest of the test.
// mirrors maps registry prefixes (mcr.microsoft.com) to repositories on
// it, as an offline fleet mirrors public registries.
func RegistriesConf(t *testing.T, addr string, mirrors map[string]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[[registry]]\nlocation = %q\ninsecure = true\n", addr)
	for prefix, loc := range mirrors {
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", prefix, loc)
	}
	file := filepath.Join(t.TempDir(), "registries.conf")
	write(t, file, []byte(b.String()), 0o644)
	t.Setenv("CONTAINERS_REGISTRIES_CONF", file)
}

// Remove removes a local image (one a test pulled), ignoring its absence.
func Remove(t testing.TB, image string) {
	t.Helper()
	_ = exec.Command("podman", "rmi", "--force", image).Run()
}

// Running lists the running containers whose names start with prefix.
func Running(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := exec.Command("podman", "ps", "--all", "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return names
}

func exists(ref string) bool {
	return exec.Command("podman", "image", "exists", ref).Run() == nil
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func write(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

// cacheDir is where root filesystems are kept between runs.
func cacheDir(t testing.TB) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "porch-test-images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withLock runs f holding a file lock named name in the cache folder.
func withLock(t testing.TB, name string, f func()) {
	t.Helper()
	lf, err := os.OpenFile(filepath.Join(cacheDir(t), name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) }()
	f()
}

// Wheel is a pure-Python wheel of package name, version, holding module
// name/__init__.py with source, built here (no download): for a package
// index on loopback.
func Wheel(t testing.TB, name, version, source string) (string, []byte) {
	t.Helper()
	dist := name + "-" + version + ".dist-info"
	files := []struct{ path, body string }{
		{name + "/__init__.py", source},
		{dist + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{dist + "/WHEEL", "Wheel-Version: 1.0\nGenerator: porch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(dist + "/RECORD,,\n")
	w, err := zw.Create(dist + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// Index serves wheels as a PEP 503 package index on loopback for the
// test and sets PIP_INDEX_URL and PIP_TRUSTED_HOST to it (the worker's pip
// settings, which porch passes to image builds). It returns how many
// times each wheel was downloaded.
func Index(t *testing.T, wheels map[string][]byte) func(file string) int {
	t.Helper()
	var mu sync.Mutex
	downloads := map[string]int{}
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/{project}/", func(w http.ResponseWriter, r *http.Request) {
		project := r.PathValue("project")
		fmt.Fprint(w, "<html><body>\n")
		for file := range wheels {
			if strings.EqualFold(strings.SplitN(file, "-", 2)[0], strings.ReplaceAll(project, "-", "_")) {
				fmt.Fprintf(w, "<a href=\"/files/%s\">%s</a>\n", file, file)
			}
		}
		fmt.Fprint(w, "</body></html>\n")
	})
	mux.HandleFunc("/files/{file}", func(w http.ResponseWriter, r *http.Request) {
		file := r.PathValue("file")
		data, ok := wheels[file]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		downloads[file]++
		mu.Unlock()
		_, _ = w.Write(data)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PIP_INDEX_URL", "http://"+l.Addr().String()+"/simple/")
	t.Setenv("PIP_TRUSTED_HOST", "127.0.0.1")
	return func(file string) int {
		mu.Lock()
		defer mu.Unlock()
		return downloads[file]
	}
}

// RemoveNew removes, when the test ends, the images named like reference
// (localhost/porch-env) that were not there when it was called: the
// images a test made porch build, which no later run reuses.
func RemoveNew(t testing.TB, reference string) {
	t.Helper()
	list := func() map[string]bool {
		out, _ := exec.Command("podman", "images", "--quiet", "--no-trunc", "--filter", "reference="+reference).Output()
		ids := map[string]bool{}
		for _, id := range strings.Fields(string(out)) {
			ids[id] = true
		}
		return ids
	}
	before := list()
	t.Cleanup(func() {
		for id := range list() {
			if !before[id] {
				_ = exec.Command("podman", "rmi", "--force", id).Run()
			}
		}
	})
}
