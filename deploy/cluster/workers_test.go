package cluster

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// porchWorker is a `porch worker` process running in a node's namespace.
type porchWorker struct {
	Name string
	Home string
	Node *netNode
	cmd  *exec.Cmd
	log  string
}

// workerSetup is what every worker of the cluster shares.
type workerSetup struct {
	Porch   string
	Address string
	Python  string
	Env     []string // s3 credentials and the like
	Conn    []string // porch's flags to reach the server
}

// startWorker starts `porch worker args...` inside node's namespace, with a
// porch home of its own: workers share nothing but the server and the
// object store. It is killed when the test ends.
func startWorker(t *testing.T, s workerSetup, node *netNode, name string, args ...string) *porchWorker {
	t.Helper()
	w := &porchWorker{Name: name, Home: t.TempDir(), Node: node}
	w.log = filepath.Join(w.Home, "worker.log")
	f, err := os.Create(w.log)
	require.NoError(t, err)
	argv := append([]string{"worker", "--address", s.Address, "--node", name,
		"--metrics-address", node.ip + ":" + metricsPort}, s.Conn...)
	w.cmd = node.command(s.Porch, append(argv, args...)...)
	w.cmd.Env = append(os.Environ(), append(s.Env, "PORCH_HOME="+w.Home, "PORCH_PYTHON="+s.Python,
		// The pipeline names Azure's curated images, which a machine without
		// internet cannot pull: steps run on the worker's host.
		"PORCH_RUNTIME=host",
		// The entry script and trials say which worker ran them.
		"CLUSTER_NODE="+name)...)
	w.cmd.Stdout, w.cmd.Stderr = f, f
	// `ip netns exec` execs porch in place: the pid is porch's.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
		f.Close()
		if t.Failed() {
			data, _ := os.ReadFile(w.log)
			t.Logf("worker %s log (last 4 KB):\n%s", name, tail(data, 4<<10))
		}
	})
	return w
}

// waitReady waits for the worker to poll its task queues, as a fleet's
// readiness probe does: a worker waits for a server that does not answer
// yet, so one started as the server settles is ready a little later.
func (w *porchWorker) waitReady(t *testing.T) {
	t.Helper()
	url := "http://" + w.Node.ip + ":" + metricsPort + "/readyz"
	require.Eventually(t, func() bool {
		resp, err := httpClient.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 90*time.Second, 200*time.Millisecond, "worker %s never became ready (%s)", w.Name, url)
}
