package worker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/worker"
)

// The test binary doubles as a porch worker process, so a test can kill a
// real worker with SIGKILL. These variables ask it to be one.
const (
	workerAddressEnv = "PORCH_TEST_WORKER_ADDRESS"
	workerHomeEnv    = "PORCH_TEST_WORKER_HOME"
	workerComputeEnv = "PORCH_TEST_WORKER_COMPUTE"
	workerNodeEnv    = "PORCH_TEST_WORKER_NODE"
	// workerRoutingEnv holds JSON of worker.Options's InstanceTypes,
	// Labels and Capacity.
	workerRoutingEnv = "PORCH_TEST_WORKER_ROUTING"
)

// routing is what workerRoutingEnv carries.
type routing struct {
	InstanceTypes []string
	Labels        []plan.Label
	Capacity      plan.ResourceList
	Preemptible   *bool
	// Workflows makes the worker run workflows too.
	Workflows bool
}

// runWorkerProcess serves one compute until SIGTERM or SIGKILL.
func runWorkerProcess() int {
	c, err := client.Dial(client.Options{HostPort: os.Getenv(workerAddressEnv), Logger: quietLogger{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	var opts worker.Options
	if r := os.Getenv(workerRoutingEnv); r != "" {
		var rt routing
		if err := json.Unmarshal([]byte(r), &rt); err != nil {
			fmt.Fprintln(os.Stderr, "routing options:", err)
			return 1
		}
		opts.InstanceTypes, opts.Labels, opts.Capacity = rt.InstanceTypes, rt.Labels, rt.Capacity
		opts.Preemptible, opts.Workflows = rt.Preemptible, rt.Workflows
	}
	opts.Home, opts.Computes, opts.Node = os.Getenv(workerHomeEnv), []string{os.Getenv(workerComputeEnv)}, os.Getenv(workerNodeEnv)
	w, err := worker.Start(c, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start worker:", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if w.Preemptible() {
		w.Preempt()
		return 0
	}
	w.Stop()
	return 0
}

// startWorkerProcess starts the test binary as a worker serving compute
// under home, named node. The test's cleanup kills it.
func startWorkerProcess(t *testing.T, home, compute, node string) *exec.Cmd {
	return startRoutedWorkerProcess(t, home, compute, node, worker.Options{})
}

// startRoutedWorkerProcess is startWorkerProcess with the instance types,
// labels and capacity of routing.
func startRoutedWorkerProcess(t *testing.T, home, compute, node string, opts worker.Options) *exec.Cmd {
	t.Helper()
	r, err := json.Marshal(routing{InstanceTypes: opts.InstanceTypes, Labels: opts.Labels, Capacity: opts.Capacity,
		Preemptible: opts.Preemptible, Workflows: opts.Workflows})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		workerAddressEnv+"="+serverAddress, workerHomeEnv+"="+home,
		workerComputeEnv+"="+compute, workerNodeEnv+"="+node, workerRoutingEnv+"="+string(r))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return cmd
}
