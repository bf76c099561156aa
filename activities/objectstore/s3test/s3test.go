// Package s3test starts a real MinIO server on loopback for tests: one server
// per test process, a fresh bucket per Start.
//
// A package whose tests call Start stops the server at the end with
//
//	func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }
//
// (without it the server still dies with the test process, by a parent-death
// signal, but its data folder stays in the temporary folder).
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// InstallCommand builds the MinIO server these tests use.
const InstallCommand = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

var (
	mu      sync.Mutex
	running *server
	failed  error
	buckets atomic.Int64
)

// server is the MinIO process this test process started.
type server struct {
	cmd       *exec.Cmd
	dir       string
	endpoint  string
	accessKey string
	secretKey string
	exited    chan struct{}
	log       *bytes.Buffer
}

// Start returns a MinIO server on loopback, started on the first call, and a
// new empty bucket on it. It skips the test when no MinIO binary is found
// ($PORCH_MINIO, minio on PATH, or $(go env GOPATH)/bin/minio), saying how
// to install one.
func Start(t testing.TB) (endpoint, accessKey, secretKey, bucket string) {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skipf("no MinIO server: install it with %q (or set PORCH_MINIO to its path)", InstallCommand)
	}
	mu.Lock()
	// Another process may take a free port before MinIO binds it: try again.
	for try := 0; running == nil && try < 3; try++ {
		running, failed = start(bin)
	}
	srv, err := running, failed
	mu.Unlock()
	if err != nil {
		t.Fatalf("start MinIO: %v", err)
	}
	bucket = fmt.Sprintf("porch-test-%d", buckets.Add(1))
	client, err := minio.New(srv.endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(srv.accessKey, srv.secretKey, ""),
	})
	if err != nil {
		t.Fatalf("MinIO client: %v", err)
	}
	if err := client.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("create bucket %q on MinIO: %v", bucket, err)
	}
	return srv.endpoint, srv.accessKey, srv.secretKey, bucket
}

// Main runs the tests and then stops the server if one was started. Call it
// from TestMain: os.Exit(s3test.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the server and removes its data. Start starts a new one after.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		return
	}
	_ = running.cmd.Process.Kill()
	<-running.exited
	os.RemoveAll(running.dir)
	running = nil
}

// Binary is the MinIO server the tests run: $PORCH_MINIO, else minio on
// PATH, else $(go env GOPATH)/bin/minio; "" when there is none.
func Binary() string {
	if p := os.Getenv("PORCH_MINIO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	return gopathMinio()
}

// gopathMinio is $(go env GOPATH)/bin/minio if it exists, asked of the go
// command once per process.
var gopathMinio = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	for _, dir := range filepath.SplitList(string(bytes.TrimSpace(out))) {
		p := filepath.Join(dir, "bin", "minio")
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
})

// start launches MinIO on free loopback ports with random root credentials
// and waits until it is live.
func start(bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "porch-minio-")
	if err != nil {
		return nil, err
	}
	srv := &server{dir: dir, accessKey: "porch" + random(6), secretKey: random(20), exited: make(chan struct{}), log: &bytes.Buffer{}}
	ports := freePorts(2)
	addr, console := ports[0], ports[1]
	srv.endpoint = "http://" + addr
	srv.cmd = exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr,
		"--console-address", console, "--certs-dir", filepath.Join(dir, "certs"), "--quiet")
	srv.cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+srv.accessKey, "MINIO_ROOT_PASSWORD="+srv.secretKey,
		"MINIO_UPDATE=off", "MINIO_BROWSER=off")
	srv.cmd.Stdout, srv.cmd.Stderr = srv.log, srv.log
	// The server dies with the test process even when TestMain does not stop it.
	srv.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() {
		_ = srv.cmd.Wait()
		close(srv.exited)
	}()
	if err := srv.waitLive(); err != nil {
		_ = srv.cmd.Process.Kill()
		<-srv.exited
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w; its output:\n%s", err, srv.log.String())
	}
	return srv, nil
}

// waitLive polls MinIO until it serves requests, exits, or a minute passes.
// /minio/health/live answers 200 as soon as the HTTP server is up, before
// storage and IAM are (a bucket created then, or a key checked then, is
// refused with "not initialized"); /minio/health/cluster answers 200 only
// once all three are.
func (s *server) waitLive() error {
	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if ok(client, s.endpoint+"/minio/health/live") && ok(client, s.endpoint+"/minio/health/cluster") {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("minio exited before it was live")
		case <-deadline:
			return fmt.Errorf("minio at %s not live after a minute", s.endpoint)
		case <-tick.C:
		}
	}
}

// ok says whether a GET of url answers 200.
func ok(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freePorts returns n distinct loopback addresses no one listens on right
// now. The listeners stay open until all are chosen, so no two are the same.
func freePorts(n int) []string {
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			addrs = append(addrs, "127.0.0.1:0")
			continue
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// random returns n random bytes in hex.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
