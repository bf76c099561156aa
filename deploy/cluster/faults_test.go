package cluster

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// measureEmbedded runs the same pipeline on porch's embedded server
// (`porch dev`: one process, one worker for both computes) against the
// same MinIO, for the figures beside the cluster's.
func (c *cluster) measureEmbedded(python string) rate {
	t := c.t
	home := t.TempDir()
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, "127.0.0.1", 1)[0]))
	_, port, _ := net.SplitHostPort(address)
	cmd := exec.Command(c.bins.Porch, "dev", "--port", port, "--ui-port", "0", "--fleet=false",
		"--compute", "alpha", "--compute", "beta")
	cmd.Env = append(os.Environ(), "PORCH_HOME="+home, "PORCH_PYTHON="+python, "PORCH_RUNTIME=host")
	log, err := os.Create(filepath.Join(home, "porch-dev.out"))
	require.NoError(t, err)
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	// porch dev serves the catalogue once its server and worker are up.
	require.Eventually(t, func() bool {
		argv := []string{"datastore", "create", "--address", address, "-f", c.datastoreFile()}
		probe := exec.Command(c.bins.Porch, argv...)
		probe.Env = append(os.Environ(), "PORCH_HOME="+t.TempDir())
		return probe.Run() == nil
	}, time.Minute, 200*time.Millisecond, "porch dev serves its catalogue")
	return c.measure(address, nil, nil)
}

// runThroughFaults runs the pipeline while one worker is cut off in the
// middle of the parallel step and, right after, the server is killed with
// SIGKILL and restarted on the same database: the run completes with the
// same outputs as an undisturbed one.
func (c *cluster) runThroughFaults() {
	t := c.t
	path, state := writePipeline(t, c.store.Name, 0.4)
	runID := c.porch(c.server.Address, c.conn, "run", "--detach", path)
	cl := dial(t, c.server.Address, c.host)
	victim := c.workers[2]

	require.Eventually(t, func() bool { return len(marks(t, state, victim.Name)) >= 2 },
		2*time.Minute, 50*time.Millisecond, "worker %s scores mini-batches", victim.Name)
	c.net.cut(victim.Node)
	cut := time.Now()
	byVictim := len(marks(t, state, victim.Name))
	t.Logf("cut %s off after it scored %d mini-batches", victim.Name, byVictim)

	// And kill the server while the workers wait for their heartbeat
	// timeouts: the timers and tasks are in PostgreSQL.
	c.server.kill()
	t.Log("killed the temporal server (SIGKILL)")
	restart := time.Now()
	c.server.start(c.host)
	t.Logf("restarted the temporal server on the same database in %s", time.Since(restart).Round(100*time.Millisecond))

	score := waitClosed(t, cl, runID+"/score", 2*time.Minute)
	requireCompleted(t, cl, score)
	after := score.WorkflowExecutionInfo.CloseTime.AsTime().Sub(cut)
	t.Logf("the parallel step ended %s after the cut", after.Round(100*time.Millisecond))
	// What is left after the cut: at most 36 mini-batches of 0.4 s on four
	// processes, the server's restart, the heartbeat timeout for those the
	// cut worker held, and slack for a loaded CI machine.
	assert.Less(t, after, heartbeat*time.Second+4*time.Second+45*time.Second,
		"the cut worker's mini-batches finish on the others after the heartbeat timeout")

	requireCompleted(t, cl, waitClosed(t, cl, runID, 3*time.Minute))
	c.checkOutputs(c.server.Address, c.conn, runID)
}

// marks are the mini-batches the entry script scored on the named worker
// (by every process, in every attempt).
func marks(t *testing.T, state, node string) []string {
	t.Helper()
	entries, err := os.ReadDir(state)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), node+".") {
			out = append(out, e.Name())
		}
	}
	return out
}
