// Package s3test starts a real S3-compatible server for tests (on loopback
// unless ListenHost says otherwise): one server per test process, a fresh
// bucket per Start.
//
// The server is MinIO by default; PORCH_S3_SERVER=versitygw runs the Versity
// S3 Gateway (its posix backend) instead, to check porch against a second
// implementation of the protocol.
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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/porch-pipelines/porch/activities/objectstore/internal/testprocess"
)

// InstallCommand builds the MinIO server these tests use.
const InstallCommand = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// VersityInstallCommand builds the Versity S3 Gateway, the server used when
// PORCH_S3_SERVER=versitygw.
const VersityInstallCommand = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// ServerEnv chooses the server: "minio" (the default) or "versitygw".
const ServerEnv = "PORCH_S3_SERVER"

// ErrNoServer is returned by NewBucket when the chosen server's binary is
// not installed; its message says how to install it.
var ErrNoServer = errors.New("no S3 server binary")

// ListenHost is the address the server listens on. A test whose clients
// live in other network namespaces sets it, before its first Start, to an
// address they reach.
var ListenHost = "127.0.0.1"

var (
	mu      sync.Mutex
	running *server
	failed  error
	buckets atomic.Int64
)

// Server is a running S3 server: its endpoint URL and root credentials.
type Server struct {
	Endpoint, AccessKey, SecretKey string
}

// server is the process this test process started.
type server struct {
	Server
	proc *testprocess.Process
}

// kind is one S3 server porch's tests can start.
type kind struct {
	name    string
	install string
	// binEnv names the variable that gives the binary's path.
	binEnv string
	// command is the server's command line, serving dir on addr.
	command func(bin, dir, addr string, ports []string, access, secret string) *exec.Cmd
	// ports is how many free loopback ports command needs besides addr.
	ports int
}

var kinds = map[string]kind{
	"minio": {name: "minio", install: InstallCommand, binEnv: "PORCH_MINIO", ports: 1,
		command: func(bin, dir, addr string, ports []string, access, secret string) *exec.Cmd {
			cmd := exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr,
				"--console-address", ports[0], "--certs-dir", filepath.Join(dir, "certs"), "--quiet")
			cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+access, "MINIO_ROOT_PASSWORD="+secret,
				"MINIO_UPDATE=off", "MINIO_BROWSER=off")
			return cmd
		}},
	"versitygw": {name: "versitygw", install: VersityInstallCommand, binEnv: "PORCH_VERSITYGW",
		command: func(bin, dir, addr string, _ []string, access, secret string) *exec.Cmd {
			data, meta := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
			// Object metadata goes to a sidecar folder: the temporary
			// folder may not take extended attributes. A folder that cannot
			// be made shows as the server's own error.
			_ = os.MkdirAll(data, 0o755)
			_ = os.MkdirAll(meta, 0o755)
			cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", "--sidecar", meta, data)
			cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+access, "ROOT_SECRET_ACCESS_KEY="+secret)
			return cmd
		}},
}

// chosen is the server PORCH_S3_SERVER names.
func chosen() (kind, error) {
	name := os.Getenv(ServerEnv)
	if name == "" {
		name = "minio"
	}
	k, ok := kinds[name]
	if !ok {
		return kind{}, fmt.Errorf("%s=%q: expected minio or versitygw", ServerEnv, name)
	}
	return k, nil
}

// Start returns a server on ListenHost, started on the first call, and a new
// empty bucket on it. It skips the test when the chosen server's binary is
// not found, saying how to install it.
func Start(t testing.TB) (endpoint, accessKey, secretKey, bucket string) {
	t.Helper()
	srv, bucket, err := NewBucket()
	if errors.Is(err, ErrNoServer) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return srv.Endpoint, srv.AccessKey, srv.SecretKey, bucket
}

// NewBucket is Start for callers without a testing.TB (testscript
// commands): the server, started on the first call, and a new empty bucket.
// The error wraps ErrNoServer when the binary is not installed.
func NewBucket() (Server, string, error) {
	k, err := chosen()
	if err != nil {
		return Server{}, "", err
	}
	bin := binary(k)
	if bin == "" {
		return Server{}, "", fmt.Errorf("%w: install %s with %q (or set %s to its path)", ErrNoServer, k.name, k.install, k.binEnv)
	}
	mu.Lock()
	// Another process may take a free port before the server binds it: try
	// again.
	for try := 0; running == nil && try < 3; try++ {
		running, failed = start(k, bin)
	}
	srv, err := running, failed
	mu.Unlock()
	if err != nil {
		return Server{}, "", fmt.Errorf("start %s: %v", k.name, err)
	}
	bucket := fmt.Sprintf("porch-test-%d", buckets.Add(1))
	client, err := srv.client()
	if err != nil {
		return Server{}, "", fmt.Errorf("%s client: %v", k.name, err)
	}
	if err := client.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		return Server{}, "", fmt.Errorf("create bucket %q on %s: %v", bucket, k.name, err)
	}
	return srv.Server, bucket, nil
}

func (s *server) client() (*minio.Client, error) {
	return minio.New(s.Endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
	})
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
	running.proc.Stop()
	running = nil
}

// Binary is the chosen server's binary (see binary); "" when there is none.
func Binary() string {
	k, err := chosen()
	if err != nil {
		return ""
	}
	return binary(k)
}

// binary is the server's binary: $<binEnv>, else its name on PATH, else
// $(go env GOPATH)/bin/<name>; "" when there is none.
func binary(k kind) string {
	if p := os.Getenv(k.binEnv); p != "" {
		return p
	}
	if p, err := exec.LookPath(k.name); err == nil {
		return p
	}
	return gopathBin(k.name)
}

// gopathBin is $(go env GOPATH)/bin/name if it exists; GOPATH is asked of
// the go command once per process.
func gopathBin(name string) string {
	for _, dir := range filepath.SplitList(gopath()) {
		p := filepath.Join(dir, "bin", name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

var gopath = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
})

// start launches the server on free ports of ListenHost with random root
// credentials and waits until it serves requests.
func start(k kind, bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "porch-"+k.name+"-")
	if err != nil {
		return nil, err
	}
	srv := &server{Server: Server{AccessKey: "porch" + random(6), SecretKey: random(20)}}
	ports := freePorts(1 + k.ports)
	srv.Endpoint = "http://" + ports[0]
	cmd := k.command(bin, dir, ports[0], ports[1:], srv.AccessKey, srv.SecretKey)
	client, err := srv.client()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client.SetAppInfo("porch-s3test", "1")
	probe := &http.Client{Timeout: 2 * time.Second}
	// MinIO answers its health endpoints before its storage and IAM are
	// ready (a bucket created then is refused with "not initialized"); a
	// signed listing works only once both are, on any server.
	srv.proc, err = testprocess.Start(k.name, srv.Endpoint, dir, cmd, func() bool {
		if !listening(probe, srv.Endpoint) {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := client.ListBuckets(ctx)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// listening says whether an HTTP server answers at url, whatever its status:
// minio-go retries a refused connection for seconds, so it is asked only
// once something listens.
func listening(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// freePorts returns n distinct addresses of ListenHost no one listens on
// right now. The listeners stay open until all are chosen, so no two are the same.
func freePorts(n int) []string {
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(ListenHost, "0"))
		if err != nil {
			addrs = append(addrs, net.JoinHostPort(ListenHost, "0"))
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
