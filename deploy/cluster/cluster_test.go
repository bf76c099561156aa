package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// cluster is everything TestCluster started.
type cluster struct {
	t       *testing.T
	bins    binaries
	server  *temporalServer
	net     *network
	pki     *pki
	host    *tls.Config // the test's own client: mTLS, as the workers
	conn    []string    // porch's flags for the same
	store   plan.Datastore
	workers []*porchWorker
}

// TestCluster runs porch on a real Temporal cluster: the official server
// built from the module porch embeds, on PostgreSQL, configured by
// deploy/temporal/config.yaml with TLS on the frontend, and three porch
// workers in network namespaces of their own that reach it only with mTLS
// and share a MinIO datastore. One pipeline with command, parallel and
// sweep steps runs through it three times: once undisturbed beside the
// same pipeline on the embedded server (docs/cluster.md's figures), with the
// workers' /metrics scraped after it, and once while one worker is cut off
// mid parallel step and the server is killed with SIGKILL and restarted on
// the same database.
func TestCluster(t *testing.T) {
	needPostgres(t)
	python := needPython(t)
	started := time.Now()
	c := &cluster{t: t}
	c.net = newNetwork(t)
	s3test.ListenHost = c.net.HostIP()
	endpoint, access, secret, bucket := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	c.store = plan.Datastore{Name: "minio", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Region: "us-east-1"}

	c.bins = build(t)
	dbs := newDatabases(t, c.bins.SQLTool)
	c.startServer(dbs)
	prepareNamespace(t, c.server.Address, c.host)

	setup := workerSetup{Porch: c.bins.Porch, Address: c.server.Address, Python: python, Conn: c.conn,
		Env: []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}}
	// Every worker serves both computes. w1 also serves the default queue
	// (porch's own activities, such as a sweep's metric reads: a cluster
	// needs one such worker) and porch's workflows, w2 workflows too; w3,
	// the one cut off below, runs steps only, so what the cut tests is the
	// mini-batches' failover.
	for i, args := range [][]string{
		{"--workflows", "--compute", "", "--compute", "alpha", "--compute", "beta"},
		{"--workflows", "--compute", "alpha", "--compute", "beta"},
		{"--compute", "alpha", "--compute", "beta"},
	} {
		c.workers = append(c.workers, startWorker(t, setup, c.net.addNode(i+1), fmt.Sprintf("w%d", i+1), args...))
	}
	for _, w := range c.workers {
		w.waitReady(t)
	}
	c.porch(c.server.Address, c.conn, "datastore", "create", "-f", c.datastoreFile())
	t.Logf("cluster ready in %s", time.Since(started).Round(100*time.Millisecond))

	clusterRate := c.measure(c.server.Address, c.conn, c.host)
	c.checkMetrics()
	embeddedRate := c.measureEmbedded(python)
	t.Logf("throughput, 3 workers on the cluster: %s", clusterRate)
	t.Logf("throughput, the embedded server (porch dev): %s", embeddedRate)

	c.runThroughFaults()
	t.Logf("TestCluster took %s", time.Since(started).Round(100*time.Millisecond))
}

// startServer makes the certificates and starts the Temporal server with
// TLS on its frontend, requiring client certificates from the test's CA.
func (c *cluster) startServer(dbs databases) {
	t := c.t
	c.pki = newPKI(t)
	dynamic, err := filepath.Abs(filepath.Join("..", "compose", "dynamicconfig", "porch.yaml"))
	require.NoError(t, err)
	client := c.pki.client("porch")
	c.host = c.pki.clientTLS(client)
	c.conn = []string{"--tls-cert-path", client.Cert, "--tls-key-path", client.Key,
		"--tls-ca-path", c.pki.CAFile, "--tls-server-name", serverName}
	c.server = newTemporalServer(t, c.bins.Server, serverOptions{Databases: dbs, FrontendIP: c.net.HostIP(),
		DynamicConfig: dynamic, FrontendCert: c.pki.server(c.net.HostIP()), ClientCA: c.pki.CAFile,
		SystemWorker: c.pki.client("temporal-system-worker")})
	start := time.Now()
	c.server.start(c.host)
	t.Logf("temporal server up at %s in %s", c.server.Address, time.Since(start).Round(100*time.Millisecond))
}

// datastoreFile writes the MinIO datastore's YAML, as a user would.
func (c *cluster) datastoreFile() string {
	path := filepath.Join(c.t.TempDir(), "minio.yml")
	require.NoError(c.t, os.WriteFile(path, []byte(fmt.Sprintf(
		"name: %s\ntype: s3\nendpoint: %s\nbucket: %s\nregion: us-east-1\n",
		c.store.Name, c.store.Endpoint, c.store.Bucket)), 0o644))
	return path
}

// porch runs the porch CLI on the host against address and returns its
// standard output.
func (c *cluster) porch(address string, conn []string, args ...string) string {
	c.t.Helper()
	out, err := c.porchCommand(address, conn, args...).Output()
	require.NoError(c.t, err, "porch %s:\n%s", strings.Join(args, " "), stderrOf(err))
	return strings.TrimSpace(string(out))
}

// porchOutput is porch's output whether or not it succeeds.
func (c *cluster) porchOutput(address string, conn []string, args ...string) string {
	out, _ := c.porchCommand(address, conn, args...).CombinedOutput()
	return string(out)
}

// porchCommand is the porch CLI with args, the first being a command
// that takes --address (and the connection flags in conn).
func (c *cluster) porchCommand(address string, conn []string, args ...string) *exec.Cmd {
	i := 1
	if args[0] == "job" || args[0] == "datastore" {
		i = 2
	}
	argv := append(append(append([]string{}, args[:i]...), "--address", address), conn...)
	cmd := exec.Command(c.bins.Porch, append(argv, args[i:]...)...)
	cmd.Env = append(os.Environ(), "PORCH_HOME="+c.t.TempDir())
	return cmd
}

// dial is a Temporal client for the server at address.
func dial(t *testing.T, address string, tlsConfig *tls.Config) client.Client {
	t.Helper()
	cl, err := client.Dial(client.Options{HostPort: address, ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// waitClosed polls a workflow until it closes, riding out a server that
// is down, and returns its description. If it does not close in time, the
// test fails with what the workflow and its children wait for.
func waitClosed(t *testing.T, cl client.Client, id string, timeout time.Duration) *workflowservice.DescribeWorkflowExecutionResponse {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d, err := cl.DescribeWorkflowExecution(ctx, id, "")
		cancel()
		if err == nil && d.WorkflowExecutionInfo.Status != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %q did not close within %s:\n%s", id, timeout, pending(cl, id, ""))
		}
		time.Sleep(100 * time.Millisecond) // polls another process's state: nothing to wait on
	}
}

// pending says what a running workflow and its running children wait for.
func pending(cl client.Client, id, indent string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return fmt.Sprintf("%s%s: %v\n", indent, id, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s: %s\n", indent, id, d.WorkflowExecutionInfo.Status)
	for _, a := range d.PendingActivities {
		fmt.Fprintf(&b, "%s  activity %s %s attempt %d state %s worker %q last failure %v\n", indent,
			a.ActivityId, a.ActivityType.GetName(), a.Attempt, a.State, a.LastWorkerIdentity, a.LastFailure.GetMessage())
	}
	for _, c := range d.PendingChildren {
		b.WriteString(pending(cl, c.WorkflowId, indent+"  "))
	}
	return b.String()
}

// requireCompleted fails the test with the run's error unless it
// completed.
func requireCompleted(t *testing.T, cl client.Client, d *workflowservice.DescribeWorkflowExecutionResponse) {
	t.Helper()
	if err := runError(cl, d); err != nil {
		t.Fatalf("run %s ended %s: %v", d.WorkflowExecutionInfo.Execution.WorkflowId, d.WorkflowExecutionInfo.Status, err)
	}
}

// runError is the error a closed workflow ended with, nil if it completed.
func runError(cl client.Client, d *workflowservice.DescribeWorkflowExecutionResponse) error {
	info := d.WorkflowExecutionInfo
	if info.Status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		return nil
	}
	err := cl.GetWorkflow(context.Background(), info.Execution.WorkflowId, info.Execution.RunId).Get(context.Background(), nil)
	if err == nil {
		err = fmt.Errorf("status %s", info.Status)
	}
	return err
}

// took is how long a closed workflow ran, by the server's clock.
func took(d *workflowservice.DescribeWorkflowExecutionResponse) time.Duration {
	info := d.WorkflowExecutionInfo
	return info.CloseTime.AsTime().Sub(info.StartTime.AsTime())
}

// rate is a run's throughput.
type rate struct{ run, parallel time.Duration }

func (r rate) String() string {
	return fmt.Sprintf("%d step executions in %s (%.2f steps/s), %d mini-batches in %s (%.1f mini-batches/s)",
		stepsPerRun, r.run.Round(10*time.Millisecond), float64(stepsPerRun)/r.run.Seconds(),
		items, r.parallel.Round(10*time.Millisecond), float64(items)/r.parallel.Seconds())
}

// measure runs the pipeline undisturbed on the server at address and
// checks what it wrote.
func (c *cluster) measure(address string, conn []string, tlsConfig *tls.Config) rate {
	t := c.t
	path, _ := writePipeline(t, c.store.Name, 0)
	runID := c.porch(address, conn, "run", "--detach", path)
	cl := dial(t, address, tlsConfig)
	d := waitClosed(t, cl, runID, 3*time.Minute)
	requireCompleted(t, cl, d)
	c.checkOutputs(address, conn, runID)
	return rate{run: took(d), parallel: took(waitClosed(t, cl, runID+"/score", time.Minute))}
}

// checkOutputs reads the run's outputs from MinIO: every item's row once,
// in order, and the report built from them and from the best trial.
func (c *cluster) checkOutputs(address string, conn []string, runID string) {
	t := c.t
	s, err := objectstore.Open(c.store)
	require.NoError(t, err)
	dir := t.TempDir()
	ctx := context.Background()
	_, err = s.Download(ctx, "azureml/"+runID+"/score/scores", filepath.Join(dir, "scores"))
	require.NoError(t, err)
	rows, err := os.ReadFile(filepath.Join(dir, "scores", plan.AppendRowFileName))
	require.NoError(t, err)
	assert.Equal(t, wantRows(), strings.Split(strings.TrimSpace(string(rows)), "\n"), "run %s: every row once, in order", runID)
	_, err = s.Download(ctx, "azureml/"+runID+"/report/out", filepath.Join(dir, "report"))
	require.NoError(t, err)
	read := func(file string) string {
		data, err := os.ReadFile(filepath.Join(dir, "report", file))
		require.NoError(t, err)
		return strings.TrimSpace(string(data))
	}
	assert.Equal(t, fmt.Sprint(items), read("rows.txt"), "run %s: report/rows.txt", runID)
	if !assert.Equal(t, "3", read("best.txt"), "run %s: report/best.txt: the trial with the least loss", runID) {
		t.Logf("porch job show:\n%s", c.porchOutput(address, conn, "job", "show", runID))
	}
}

// needPython returns the interpreter for entry scripts, or skips.
func needPython(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PORCH_PYTHON"); p != "" {
		return p
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("the cluster test's parallel step runs a Python entry script: install python3 or set PORCH_PYTHON")
	}
	return p
}
