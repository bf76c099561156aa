package devserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const taskQueue = "devserver-test"

var (
	attrRun   = temporal.NewSearchAttributeKeyKeyword("TestRun")
	attrSteps = temporal.NewSearchAttributeKeyInt64("TestSteps")
)

var testAttrs = map[string]enumspb.IndexedValueType{
	attrRun.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	attrSteps.GetName(): enumspb.INDEXED_VALUE_TYPE_INT,
}

// chain runs n no-op activities one after the other and returns n.
func chain(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	for i := range n {
		if err := workflow.ExecuteActivity(ctx, "Noop", i).Get(ctx, nil); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func noop(context.Context, int) error { return nil }

// startServer starts a server stopped at the end of the test.
func startServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := Start(context.Background(), opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Stop()) })
	return s
}

// connect dials the server's local address and runs a worker for chain,
// windowed and noop on taskQueue.
func connect(tb testing.TB, s *Server) client.Client {
	tb.Helper()
	c, err := client.Dial(client.Options{HostPort: s.LocalAddress(), Logger: quietLogger{}})
	require.NoError(tb, err)
	w := worker.New(c, taskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 2 * window})
	w.RegisterWorkflowWithOptions(chain, workflow.RegisterOptions{Name: "Chain"})
	w.RegisterWorkflowWithOptions(windowed, workflow.RegisterOptions{Name: "Window"})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "Noop"})
	require.NoError(tb, w.Start())
	tb.Cleanup(func() { w.Stop(); c.Close() })
	return c
}

// runChain runs a chain of n steps under id, tagged with run, and returns once
// it completes.
func runChain(tb testing.TB, c client.Client, id, run string, n int) {
	tb.Helper()
	ctx := context.Background()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(attrRun.ValueSet(run), attrSteps.ValueSet(int64(n))),
	}, "Chain", n)
	require.NoError(tb, err)
	var got int
	require.NoError(tb, wr.Get(ctx, &got))
	require.Equal(tb, n, got)
}

// listIDs returns the ids of the workflows query matches.
func listIDs(t *testing.T, c client.Client, query string) []string {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err)
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids
}

// requireListed waits until query lists exactly ids; visibility records are
// written asynchronously after the workflow closes.
func requireListed(t *testing.T, c client.Client, query string, ids ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return strings.Join(listIDs(t, c, query), ",") == strings.Join(ids, ",")
	}, 10*time.Second, 20*time.Millisecond, "waiting for visibility to list %v for %q", ids, query)
}

func customAttrs(t *testing.T, c client.Client) map[string]enumspb.IndexedValueType {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(context.Background(),
		&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	return resp.GetCustomAttributes()
}

func TestInMemoryRunsWorkflowWithSearchAttributes(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{SearchAttributes: testAttrs})
	require.Empty(t, s.UIAddress())
	c := connect(t, s)

	got := customAttrs(t, c)
	for name, typ := range testAttrs {
		require.Equal(t, typ, got[name], "search attribute %q", name)
	}

	runChain(t, c, "wf-a", "run-a", 3)
	runChain(t, c, "wf-b", "run-b", 2)
	requireListed(t, c, `TestRun = "run-a"`, "wf-a")
	requireListed(t, c, `TestSteps = 2`, "wf-b")
	require.Empty(t, listIDs(t, c, `TestRun = "run-c"`))

	desc, err := c.WorkflowService().DescribeNamespace(context.Background(),
		&workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
}

func TestTwoServersAreIndependent(t *testing.T) {
	t.Parallel()
	a := startServer(t, Options{SearchAttributes: testAttrs, Namespace: "porch-a"})
	b := startServer(t, Options{})
	require.NotEqual(t, a.FrontendAddress(), b.FrontendAddress())

	ca, err := client.Dial(client.Options{HostPort: a.FrontendAddress(), Namespace: "porch-a", Logger: quietLogger{}})
	require.NoError(t, err)
	defer ca.Close()
	cb := connect(t, b)

	_, err = ca.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: "only-on-a", TaskQueue: taskQueue,
	}, "Chain", 1)
	require.NoError(t, err)
	_, err = cb.DescribeWorkflowExecution(context.Background(), "only-on-a", "")
	require.Error(t, err, "server b must not see server a's workflow")
	_, err = ca.DescribeWorkflowExecution(context.Background(), "only-on-a", "")
	require.NoError(t, err)
}

// TestStopReleasesPortsAndWorkers is not parallel: it counts the SDK worker
// goroutines of the whole process, which must be the server's own.
func TestStopReleasesPortsAndWorkers(t *testing.T) {
	uiPort, err := FreePort()
	require.NoError(t, err)
	s, err := Start(context.Background(), Options{UIPort: uiPort})
	require.NoError(t, err)
	require.NotZero(t, sdkWorkerGoroutines(), "the server runs system workers while up")
	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop(), "a second Stop is a no-op")

	_, port, err := splitAddr(s.FrontendAddress())
	require.NoError(t, err)
	require.NoError(t, checkPortFree(defaultIP, port))
	require.NoError(t, checkPortFree(defaultIP, uiPort))
	// Stopped workers' poll loops return asynchronously.
	require.Eventually(t, func() bool { return sdkWorkerGoroutines() == 0 },
		10*time.Second, 10*time.Millisecond, "waiting for the server's SDK workers to exit")
}

func TestFileDatabaseSurvivesRestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "porch.db")
	opts := Options{DBFile: db, SearchAttributes: map[string]enumspb.IndexedValueType{
		attrRun.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}}
	s, err := Start(context.Background(), opts)
	require.NoError(t, err)
	c := connect(t, s)
	ctx := context.Background()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "persisted", TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(attrRun.ValueSet("run-p")),
	}, "Chain", 2)
	require.NoError(t, err)
	require.NoError(t, wr.Get(ctx, nil))
	requireListed(t, c, `TestRun = "run-p"`, "persisted")
	c.Close()
	require.NoError(t, s.Stop())
	header := make([]byte, 20)
	f, err := os.Open(db)
	require.NoError(t, err)
	_, err = io.ReadFull(f, header)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.Equal(t, []byte{2, 2}, header[18:20], "SQLite header: the file is in WAL mode")

	// The second start adds a search attribute to the existing namespace.
	opts.SearchAttributes = testAttrs
	s2 := startServer(t, opts)
	c2, err := client.Dial(client.Options{HostPort: s2.FrontendAddress(), Logger: quietLogger{}})
	require.NoError(t, err)
	defer c2.Close()
	require.Equal(t, testAttrs, customAttrs(t, c2))
	requireListed(t, c2, `TestRun = "run-p"`, "persisted")
	require.Empty(t, listIDs(t, c2, `TestSteps = 1`))
	desc, err := c2.DescribeWorkflowExecution(ctx, "persisted", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
}

func TestUIServesTemporalUI(t *testing.T) {
	t.Parallel()
	uiPort, err := FreePort()
	require.NoError(t, err)
	s := startServer(t, Options{UIPort: uiPort})
	require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", uiPort), s.UIAddress())

	body, resp := get(t, s.UIAddress()+"/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Contains(t, body, "_app/immutable", "the Temporal UI's SvelteKit bundle")

	// The UI's API proxies to this server's frontend.
	body, resp = get(t, s.UIAddress()+"/api/v1/namespaces/default")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var ns struct {
		NamespaceInfo struct{ Name string } `json:"namespaceInfo"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ns), body)
	require.Equal(t, "default", ns.NamespaceInfo.Name)

	// Under /porch/, on the same origin, the pages ServePages serves: 503
	// until then, then the handler, which sees paths without the prefix.
	_, resp = get(t, s.UIAddress()+"/porch/")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	s.ServePages(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "page %s", r.URL.Path)
	}))
	body, resp = get(t, s.UIAddress()+"/porch/api/runs")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "page /api/runs", body)
	body, _ = get(t, s.UIAddress()+"/porch")
	require.Equal(t, "page /", body, "/porch redirects to /porch/")
	body, _ = get(t, s.UIAddress()+"/")
	require.Contains(t, body, "_app/immutable", "the Temporal UI is still served beside them")
}

func get(t *testing.T, url string) (string, *http.Response) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b), resp
}

func TestStartRejectsBadOptions(t *testing.T) {
	t.Parallel()
	busy, err := Start(context.Background(), Options{})
	require.NoError(t, err)
	defer busy.Stop()
	_, busyPort, err := splitAddr(busy.FrontendAddress())
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"log level":           {Options{LogLevel: "loud"}, `log level "loud"`},
		"ip":                  {Options{IP: "localhost:1"}, `IP "localhost:1" is not an IP address`},
		"port":                {Options{Port: 70000}, "port 70000 is out of range"},
		"busy port":           {Options{Port: busyPort}, "is not free"},
		"busy UI":             {Options{UIPort: busyPort}, "web UI: port"},
		"db dir":              {Options{DBFile: filepath.Join(t.TempDir(), "missing", "x.db")}, "directory"},
		"too many attributes": {Options{SearchAttributes: manyBools(40)}, "cannot have more than"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.opts)
			if s != nil {
				_ = s.Stop()
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func manyBools(n int) map[string]enumspb.IndexedValueType {
	m := map[string]enumspb.IndexedValueType{}
	for i := range n {
		m[fmt.Sprintf("Flag%d", i)] = enumspb.INDEXED_VALUE_TYPE_BOOL
	}
	return m
}

func TestLogsGoToLogWriterAtLevel(t *testing.T) {
	t.Parallel()
	var info, warn lockedBuffer
	startServer(t, Options{LogWriter: &info, LogLevel: "info"})
	startServer(t, Options{LogWriter: &warn})
	require.Contains(t, info.String(), "level=INFO")
	require.Contains(t, info.String(), "component=temporal")
	require.NotContains(t, warn.String(), "level=INFO")
}

func TestStartRemovesScratchDatabasesOfDeadProcesses(t *testing.T) {
	dir := scratchDir()
	// A pid far above any pid_max on Linux is never alive.
	stale := filepath.Join(dir, "porch-temporal-999999999-1.db")
	require.NoError(t, os.WriteFile(stale, []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(stale+"-wal", []byte("x"), 0o644))
	live := filepath.Join(dir, fmt.Sprintf("porch-temporal-%d-999.db", os.Getppid()))
	require.NoError(t, os.WriteFile(live, []byte("x"), 0o644))
	t.Cleanup(func() { os.Remove(live) })

	srv, err := Start(context.Background(), Options{})
	require.NoError(t, err)
	require.NoError(t, srv.Stop())

	require.NoFileExists(t, stale)
	require.NoFileExists(t, stale+"-wal")
	require.FileExists(t, live, "a live process's scratch database stays")
}
