package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
)

// The embedded server is started once for the package: real Temporal,
// real SQLite (in memory), real processes.
var (
	temporalClient client.Client
	serverAddress  string
)

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) != "" {
		os.Exit(runCLI())
	}
	if os.Getenv(workerAddressEnv) != "" {
		os.Exit(runWorkerProcess())
	}
	if os.Getenv(serverProcessEnv) != "" {
		os.Exit(runServerProcess())
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx := context.Background()
	// Entry scripts run on Debian's interpreter when there is one: it starts
	// fast, and it is the one python3-pandas installs for.
	if _, err := os.Stat("/usr/bin/python3"); err == nil && os.Getenv("PORCH_PYTHON") == "" {
		os.Setenv("PORCH_PYTHON", "/usr/bin/python3")
	}
	stopSite, err := startWebSite()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the test web site:", err)
		return 1
	}
	defer stopSite()
	srv, err := devserver.Start(ctx, devserver.Options{SearchAttributes: workflows.SearchAttributes()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded temporal:", err)
		return 1
	}
	defer srv.Stop()
	defer s3test.Stop()
	serverAddress = srv.FrontendAddress()
	// Uncompressed, as porch's CLI talks to a server on its host.
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Logger: quietLogger{},
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	temporalClient = c
	return m.Run()
}

// harness is one porch home with a worker serving every compute a test uses.
type harness struct {
	t    *testing.T
	home string
}

func newHarness(t *testing.T, computes ...string) *harness {
	t.Helper()
	h := &harness{t: t, home: t.TempDir()}
	w := startWorker(t, h.home, computes...)
	t.Cleanup(w.Stop)
	return h
}

func startWorker(t testing.TB, home string, computes ...string) *worker.Worker {
	w, err := worker.Start(temporalClient, worker.Options{Home: home, Computes: append([]string{""}, computes...), Workflows: true})
	require.NoError(t, err)
	return w
}

func startRun(p *plan.Plan, src []byte) (client.WorkflowRun, error) {
	return workflows.Start(context.Background(), temporalClient, p, workflows.NewRunID(p), src)
}

// compile compiles a pipeline whose steps all run (settings.force_rerun):
// the tests of this package run pipelines again in one home, and test
// what running does; reuse_test.go tests reuse, with compileReusable.
func compile(t *testing.T, path string, set map[string]string) *plan.Plan {
	t.Helper()
	p := compileReusable(t, path, set)
	p.Settings.ForceRerun = true
	return p
}

// compileReusable compiles a pipeline as written.
func compileReusable(t *testing.T, path string, set map[string]string) *plan.Plan {
	t.Helper()
	p, diags := compiler.Compile(path, compiler.Options{Set: set})
	require.False(t, diags.HasErrors(), diags.Error())
	return p
}

// start submits a plan under a fresh run id.
func (h *harness) start(p *plan.Plan) client.WorkflowRun {
	h.t.Helper()
	src, err := os.ReadFile(p.Source)
	require.NoError(h.t, err)
	run, err := startRun(p, src)
	require.NoError(h.t, err)
	return run
}

func (h *harness) run(p *plan.Plan) (string, error) {
	return h.runWithin(p, 2*time.Minute)
}

// runWithin runs p and waits at most d for it to end: for pipelines whose
// own work takes most of run's two minutes on a busy 2-core machine.
func (h *harness) runWithin(p *plan.Plan, d time.Duration) (string, error) {
	run := h.start(p)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return run.GetID(), run.Get(ctx, nil)
}

func steps(t *testing.T, workflowID string) map[string]workflows.StepState {
	t.Helper()
	st, err := workflows.QuerySteps(context.Background(), temporalClient, workflowID, time.Minute)
	require.NoError(t, err)
	out := map[string]workflows.StepState{}
	for _, s := range st {
		out[s.Path] = s
	}
	return out
}

func (h *harness) localPath(uri string) string {
	p, err := stepio.LocalPath(h.home, uri)
	require.NoError(h.t, err)
	return p
}

func TestHelloPipelinesFromAzureMLExamplesRun(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "azureml-examples", "cli", "jobs", "basics", "hello-pipeline*.yml"))
	if len(files) == 0 {
		t.Skip("../shared/azureml-examples is absent")
	}
	require.Len(t, files, 14)
	h := newHarness(t, "cpu-cluster")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			id, err := h.run(compile(t, f, nil))
			require.NoError(t, err)
			for path, s := range steps(t, id) {
				require.Equal(t, workflows.StatusSucceeded, s.Status, path)
			}
		})
	}
}

func TestOutputsFlowBetweenRealProcesses(t *testing.T) {
	f := filepath.Join("..", "..", "shared", "azureml-examples", "cli", "jobs", "basics", "hello-pipeline-io.yml")
	if _, err := os.Stat(f); err != nil {
		t.Skip("../shared/azureml-examples is absent")
	}
	h := newHarness(t, "cpu-cluster")
	id, err := h.run(compile(t, f, nil))
	require.NoError(t, err)
	st := steps(t, id)
	var out string
	for _, o := range st["hello_job"].Outputs {
		if o.Name == "world_output" {
			out = o.URI
		}
	}
	require.NotEmpty(t, out)
	b, err := os.ReadFile(filepath.Join(h.localPath(out), "world.txt"))
	require.NoError(t, err)
	require.Equal(t, "world\n", string(b))
	log, err := os.ReadFile(filepath.Join(h.localPath(artifacts(st["world_job"])), "user_logs", "std_log.txt"))
	require.NoError(t, err)
	require.Contains(t, string(log), "world", "world_job's cat of hello_job's output is in its log")
}

func artifacts(s workflows.StepState) string {
	for _, o := range s.Outputs {
		if o.Name == plan.ArtifactsOutput {
			return o.URI
		}
	}
	return ""
}

func writePipeline(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pipeline.yml")
	require.NoError(t, os.WriteFile(f, []byte(body), 0o644))
	return f
}

func TestFailingStepReportsExitCodeAndStderrTail(t *testing.T) {
	h := newHarness(t)
	f := writePipeline(t, `type: pipeline
name: failing
jobs:
  ok:
    command: echo fine
  broken:
    command: for i in $(seq 1 30); do echo "line $i" >&2; done; exit 7
`)
	id, err := h.run(compile(t, f, nil))
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.Equal(t, workflows.StepFailedType, app.Type())
	var cf command.CommandFailure
	for e := error(app); e != nil; e = errors.Unwrap(e) {
		var inner *temporal.ApplicationError
		if errors.As(e, &inner) && inner.Type() == command.CommandFailedType {
			require.NoError(t, inner.Details(&cf))
			break
		}
	}
	require.Equal(t, 7, cf.ExitCode)
	require.Equal(t, int32(1), cf.Attempt, "the failure names the attempt that failed")
	require.Len(t, cf.StderrTail, 20)
	require.Equal(t, "line 30", cf.StderrTail[19])
	st := steps(t, id)
	require.Equal(t, workflows.StatusFailed, st["broken"].Status)
	require.Contains(t, st["broken"].Error, "code 7")
}

func TestCancelKillsTheStepProcesses(t *testing.T) {
	h := newHarness(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	f := writePipeline(t, fmt.Sprintf(`type: pipeline
name: cancelled
jobs:
  sleepy:
    command: sleep 300 & echo $! > %s; wait
`, pidFile))
	run := h.start(compile(t, f, nil))
	var pid int
	require.Eventually(t, func() bool { // waits for the step's background sleep to start
		b, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, time.Minute, 20*time.Millisecond)
	require.True(t, alive(pid), "the step's process runs")

	require.NoError(t, temporalClient.CancelWorkflow(context.Background(), run.GetID(), ""))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run.Get(ctx, nil)
	var canceled *temporal.CanceledError
	require.True(t, errors.As(err, &canceled), "run ends cancelled, got %v", err)
	require.Eventually(t, func() bool { // waits for the killed process to die
		return !alive(pid)
	}, 30*time.Second, 20*time.Millisecond, "the step's child process is gone")
	require.Equal(t, workflows.StatusCanceled, steps(t, run.GetID())["sleepy"].Status)
}

// alive reports whether pid is a live process: not gone, and not a zombie
// left for an init that may never reap it.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// quietLogger drops the SDK's logs: the tests assert on results.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

func TestLimitsTimeoutStopsTheStep(t *testing.T) {
	h := newHarness(t)
	f := writePipeline(t, `type: pipeline
name: slow
jobs:
  slow:
    command: sleep 120
    limits:
      timeout: 2
`)
	id, err := h.run(compile(t, f, nil))
	require.Error(t, err)
	st := steps(t, id)["slow"]
	require.Equal(t, workflows.StatusFailed, st.Status)
	require.Contains(t, st.Error, "limits.timeout of 2s")
	require.Less(t, st.Ended.Sub(st.Started), time.Minute, "the step is stopped, not waited out")
}

func TestARegisteredLocalDatastoreHoldsTheStepsOutputs(t *testing.T) {
	h := newHarness(t)
	shared := t.TempDir()
	name := "nfs" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, err := workflows.RegisterCatalogEntry(context.Background(), temporalClient,
		workflows.CatalogEntry{Datastore: &plan.Datastore{Name: name, Type: plan.DatastoreLocal, Path: shared}})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = workflows.RemoveCatalogEntry(context.Background(), temporalClient, workflows.CatalogRemoval{Kind: workflows.KindDatastore, Name: name})
	})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(fmt.Sprintf(`type: pipeline
name: ds
settings:
  default_datastore: azureml:%s
jobs:
  write:
    command: echo shared > ${{outputs.out}}/x.txt
    outputs:
      out:
        type: uri_folder
  read:
    command: cat ${{inputs.x}}/x.txt > ${{outputs.out}}/y.txt
    inputs:
      x: ${{parent.jobs.write.outputs.out}}
    outputs:
      out:
        type: uri_folder
`, name)), 0o644))
	runID, err := h.run(compile(t, filepath.Join(dir, "p.yml"), nil))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(shared, "azureml", runID, "read", "out", "y.txt"))
	require.NoError(t, err)
	assert.Equal(t, "shared\n", string(data), "both steps' outputs are in the registered datastore's folder")
	assert.NoDirExists(t, filepath.Join(h.home, "datastores", name), "nothing lands under the porch home")
}
