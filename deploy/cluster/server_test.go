package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/porch-pipelines/porch/workflows"
)

// binaries are the programs the cluster runs, built from this module: the
// Temporal server and schema tool at the version porch embeds (go.mod's
// tool directives pin them), and porch.
type binaries struct{ Server, SQLTool, Porch string }

// build builds the three programs and logs how long that took: on a cold
// build cache it is most of the test's time. The go command keeps the
// tools' executables in its build cache (`go tool -n` prints where), so
// only porch is linked again on every run.
func build(t *testing.T) binaries {
	t.Helper()
	start := time.Now()
	var b binaries
	for _, tool := range []struct {
		name string
		path *string
	}{{"server", &b.Server}, {"sql", &b.SQLTool}} {
		out, err := exec.Command("go", "tool", "-n", tool.name).Output()
		require.NoError(t, err, "build %s with go tool -n %s: %s", tool.name, tool.name, stderrOf(err))
		*tool.path = strings.TrimSpace(string(out))
	}
	b.Porch = filepath.Join(t.TempDir(), "porch")
	run(t, exec.Command("go", "build", "-o", b.Porch, "github.com/porch-pipelines/porch/cmd/porch"))
	t.Logf("built the Temporal server, temporal-sql-tool and porch in %s", time.Since(start).Round(100*time.Millisecond))
	return b
}

// stderrOf is the standard error an *exec.ExitError kept.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// temporalServer is the Temporal server process, started from
// deploy/temporal/config.yaml with its settings in the environment.
type temporalServer struct {
	t       *testing.T
	bin     string
	env     []string
	Address string
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *os.File
}

// serverOptions is what changes between runs of the same config file.
type serverOptions struct {
	Databases     databases
	FrontendIP    string
	FrontendCert  keyPair
	ClientCA      string
	SystemWorker  keyPair
	DynamicConfig string
}

// newTemporalServer chooses the server's ports and writes its environment;
// start runs it.
func newTemporalServer(t *testing.T, bin string, o serverOptions) *temporalServer {
	t.Helper()
	ports := freePorts(t, "127.0.0.1", 9)
	frontend := freePorts(t, o.FrontendIP, 1)[0]
	s := &temporalServer{t: t, bin: bin, Address: net.JoinHostPort(o.FrontendIP, strconv.Itoa(frontend))}
	s.env = append(os.Environ(),
		"POSTGRES_SEEDS="+pgHost, "DB_PORT="+pgPort, "POSTGRES_USER="+pgUser,
		"DBNAME="+o.Databases.Main, "VISIBILITY_DBNAME="+o.Databases.Visibility,
		"BIND_ON_IP=127.0.0.1", "FRONTEND_BIND_ON_IP="+o.FrontendIP,
		"FRONTEND_GRPC_PORT="+strconv.Itoa(frontend),
		"FRONTEND_HTTP_PORT="+strconv.Itoa(ports[0]), "FRONTEND_MEMBERSHIP_PORT="+strconv.Itoa(ports[1]),
		"HISTORY_GRPC_PORT="+strconv.Itoa(ports[2]), "HISTORY_MEMBERSHIP_PORT="+strconv.Itoa(ports[3]),
		"MATCHING_GRPC_PORT="+strconv.Itoa(ports[4]), "MATCHING_MEMBERSHIP_PORT="+strconv.Itoa(ports[5]),
		"WORKER_GRPC_PORT="+strconv.Itoa(ports[6]), "WORKER_MEMBERSHIP_PORT="+strconv.Itoa(ports[7]),
		"PROMETHEUS_ENDPOINT=127.0.0.1:"+strconv.Itoa(ports[8]),
		"NUM_HISTORY_SHARDS=4", "LOG_LEVEL=warn", "DYNAMIC_CONFIG_FILE_PATH="+o.DynamicConfig,
	)
	s.env = append(s.env,
		"TEMPORAL_TLS_FRONTEND_CERT="+o.FrontendCert.Cert, "TEMPORAL_TLS_FRONTEND_KEY="+o.FrontendCert.Key,
		"TEMPORAL_TLS_CLIENT_CA_CERT="+o.ClientCA, "TEMPORAL_TLS_SERVER_CA_CERT="+o.ClientCA,
		"TEMPORAL_TLS_FRONTEND_SERVER_NAME="+serverName,
		"TEMPORAL_TLS_SYSTEM_WORKER_CERT="+o.SystemWorker.Cert, "TEMPORAL_TLS_SYSTEM_WORKER_KEY="+o.SystemWorker.Key)
	var err error
	s.log, err = os.Create(filepath.Join(t.TempDir(), "temporal-server.log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			data, _ := os.ReadFile(s.log.Name())
			t.Logf("temporal server log (last 8 KB):\n%s", tail(data, 8<<10))
		}
		s.log.Close()
	})
	return s
}

// configFile is deploy/temporal/config.yaml, the file compose and
// Kubernetes use too.
func configFile(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("..", "temporal", "config.yaml"))
	require.NoError(t, err)
	return p
}

// start runs the server and waits until its frontend answers over mTLS.
func (s *temporalServer) start(tlsConfig *tls.Config) {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--config-file", configFile(s.t), "--allow-no-auth", "start")
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, s.cmd.Start())
	exited := make(chan struct{})
	s.exited = exited
	go func(cmd *exec.Cmd) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd)
	s.waitHealthy(tlsConfig)
}

// kill ends the server with SIGKILL, as a crashed machine would: nothing
// is flushed, the database keeps what was committed.
func (s *temporalServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

func (s *temporalServer) waitHealthy(tlsConfig *tls.Config) {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			data, _ := os.ReadFile(s.log.Name())
			s.t.Fatalf("the temporal server exited before it served; its log:\n%s", tail(data, 8<<10))
		default:
		}
		c, err := client.Dial(client.Options{HostPort: s.Address, ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
		if err == nil {
			_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return
			}
		}
		last = err
		time.Sleep(200 * time.Millisecond) // polls a process starting up: nothing to wait on
	}
	s.t.Fatalf("the temporal server at %s did not answer within 90 s: %v", s.Address, last)
}

// prepareNamespace creates the namespace "default" and registers porch's
// search attributes in it, as deploy/compose/scripts/setup-namespace.sh
// does for compose.
func prepareNamespace(t *testing.T, address string, tlsConfig *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: address, ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	require.NoError(t, err)
	defer nc.Close()
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: "default",
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	if _, exists := err.(*serviceerror.NamespaceAlreadyExists); err != nil && !exists {
		require.NoError(t, err, "register the namespace")
	}
	c, err := client.Dial(client.Options{HostPort: address, ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	require.NoError(t, err)
	defer c.Close()
	// The frontend learns of a new namespace on its next cache refresh.
	require.Eventually(t, func() bool {
		_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: "default", SearchAttributes: workflows.SearchAttributes()})
		return err == nil
	}, 30*time.Second, 250*time.Millisecond, "register porch's search attributes")
	// The history service learns of them on its cache's next refresh: until
	// then a start that sets one is refused. Probe with such a start.
	probe := temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.AttrUser).ValueSet("probe"))
	require.Eventually(t, func() bool {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cluster-search-attribute-probe",
			TaskQueue: "cluster-probe", TypedSearchAttributes: probe}, "Probe")
		if err != nil {
			return false
		}
		_ = c.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "probe")
		return true
	}, 90*time.Second, 250*time.Millisecond, "the server accepts porch's search attributes")
}

// freePorts returns n ports of host no one listens on right now, below
// 32768: Temporal keeps membership ports in a SMALLINT column, and the
// kernel's own choice of a free port is above that.
func freePorts(t *testing.T, host string, n int) []int {
	t.Helper()
	var ports []int
	for try := 0; len(ports) < n && try < 1000; try++ {
		port := 20000 + mathrand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, port)
	}
	require.Len(t, ports, n, "free ports on %s between 20000 and 32000", host)
	return ports
}

// tail is the last n bytes of data.
func tail(data []byte, n int) string {
	if len(data) > n {
		data = data[len(data)-n:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return strings.TrimSpace(string(data))
}

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", strings.Join(cmd.Args, " "), out)
	return string(out)
}
