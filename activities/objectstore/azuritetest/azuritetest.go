// Package azuritetest starts Azurite, Microsoft's Azure Storage emulator,
// for tests: one blob service per test process on a free loopback port,
// serving the emulator's well-known account and the extra Accounts (all
// with its well-known key), and a fresh container per Start.
//
// A package whose tests call Start stops Azurite at the end with
//
//	func TestMain(m *testing.M) { os.Exit(azuritetest.Main(m)) }
//
// (without it Azurite still dies with the test process, by a parent-death
// signal, but its data folder stays in the temporary folder).
package azuritetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/porch-pipelines/porch/activities/objectstore/internal/testprocess"
)

// InstallCommand installs the Azurite these tests use.
const InstallCommand = "npm install -g azurite@3.37.0"

// Account and Key are the emulator's well-known account and key.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Accounts are the other accounts Azurite serves, with Key: the accounts
// azureml-examples' data lives in, and a spare one for tests that need two.
var Accounts = []string{"azuremlexamples", "dprepdata", "porchspare"}

// ErrNoAzurite is returned by NewContainer when azurite-blob is not
// installed; its message says how to install it.
var ErrNoAzurite = errors.New("no azurite-blob binary")

// Server is a running Azurite blob service.
type Server struct {
	// Base is its URL, http://127.0.0.1:PORT; an account's blob endpoint
	// is Base/<account> (path-style, as emulators are addressed).
	Base string
}

// Endpoint is account's blob service URL.
func (s Server) Endpoint(account string) string { return s.Base + "/" + account }

// ConnectionString is a connection string for account with its key and
// Azurite's endpoint, as AZURE_STORAGE_CONNECTION_STRING takes it.
func (s Server) ConnectionString(account string) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;", account, Key, s.Endpoint(account))
}

// Container is a client of container name of account, with the account key.
func (s Server) Container(account, name string) (*container.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(account, Key)
	if err != nil {
		return nil, err
	}
	return container.NewClientWithSharedKeyCredential(s.Endpoint(account)+"/"+name, cred, nil)
}

// SAS makes a container SAS for account's container name with
// permissions perms ("rwdlac") that expires at expiry.
func (s Server) SAS(account, name, perms string, expiry time.Time) (string, error) {
	cred, err := azblob.NewSharedKeyCredential(account, Key)
	if err != nil {
		return "", err
	}
	p := sas.ContainerPermissions{Read: strings.Contains(perms, "r"), Write: strings.Contains(perms, "w"),
		Delete: strings.Contains(perms, "d"), List: strings.Contains(perms, "l"), Add: strings.Contains(perms, "a"),
		Create: strings.Contains(perms, "c")}
	q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: time.Now().Add(-time.Hour).UTC(),
		ExpiryTime: expiry.UTC(), Permissions: p.String(), ContainerName: name}.SignWithSharedKey(cred)
	if err != nil {
		return "", err
	}
	return q.Encode(), nil
}

var (
	mu         sync.Mutex
	running    *server
	failed     error
	containers atomic.Int64
)

type server struct {
	Server
	proc *testprocess.Process
}

// Start returns Azurite, started on the first call, and the name of a new
// empty container of account. It skips the test when azurite-blob is not
// installed, saying how to install it.
func Start(t testing.TB, account string) (Server, string) {
	t.Helper()
	srv, name, err := NewContainer(account)
	if errors.Is(err, ErrNoAzurite) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return srv, name
}

// NewContainer is Start for callers without a testing.TB: Azurite, started
// on the first call, and a new empty container of account. The error wraps
// ErrNoAzurite when azurite-blob is not installed.
func NewContainer(account string) (Server, string, error) {
	srv, err := Run()
	if err != nil {
		return Server{}, "", err
	}
	name := fmt.Sprintf("porch-test-%d", containers.Add(1))
	c, err := srv.Container(account, name)
	if err == nil {
		_, err = c.Create(context.Background(), nil)
	}
	if err != nil {
		return Server{}, "", fmt.Errorf("create container %q of %s on Azurite: %v", name, account, err)
	}
	return srv, name, nil
}

// Run returns Azurite, started on the first call.
func Run() (Server, error) {
	bin, err := exec.LookPath("azurite-blob")
	if err != nil {
		return Server{}, fmt.Errorf("%w: install it with %q (it needs Node.js)", ErrNoAzurite, InstallCommand)
	}
	mu.Lock()
	defer mu.Unlock()
	// Another process may take the free port before Azurite binds it: try
	// again.
	for try := 0; running == nil && try < 3; try++ {
		running, failed = start(bin)
	}
	if failed != nil {
		return Server{}, fmt.Errorf("start Azurite: %v", failed)
	}
	return running.Server, nil
}

// Main runs the tests and then stops Azurite if one was started. Call it
// from TestMain: os.Exit(azuritetest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops Azurite and removes its data.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		return
	}
	running.proc.Stop()
	running = nil
}

// start runs azurite-blob on a free loopback port and waits until it
// answers.
func start(bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "porch-azurite-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	accounts := []string{Account + ":" + Key}
	for _, a := range Accounts {
		accounts = append(accounts, a+":"+Key)
	}
	srv := &server{Server: Server{Base: "http://127.0.0.1:" + port}}
	cmd := exec.Command(bin, "--location", dir, "--blobHost", "127.0.0.1", "--blobPort", port,
		"--skipApiVersionCheck", "--disableTelemetry", "--silent")
	cmd.Env = append(os.Environ(), "AZURITE_ACCOUNTS="+strings.Join(accounts, ";"))
	// It takes about 3 s to start.
	probe := &http.Client{Timeout: 2 * time.Second}
	srv.proc, err = testprocess.Start("azurite-blob", srv.Base, dir, cmd, func() bool {
		resp, err := probe.Get(srv.Endpoint(Account) + "?comp=list")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// freePort is a loopback port no one listens on right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
