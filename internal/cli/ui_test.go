package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/internal/devserver"
)

// TestUICommandServesThePage runs porch ui against porch dev, as for any
// Temporal server: the page, its run list filtered by porch's search
// attributes, a run's graph and steps, a step's inputs, outputs and log,
// all through the server's queries and the datastore.
func TestUICommandServesThePage(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envHome, filepath.Join(dir, "home"))
	t.Setenv(envAddress, "")
	addr, devUI := startDevForPage(t, dir)
	file := filepath.Join(dir, "chain.yml")
	require.NoError(t, os.WriteFile(file, []byte(`type: pipeline
name: ui-chain
experiment_name: ui-cmd
inputs:
  greeting: bonjour
jobs:
  make:
    command: echo ${{inputs.msg}} | tee ${{outputs.out}}/m.txt
    inputs:
      msg: ${{parent.inputs.greeting}}
    outputs:
      out:
  use:
    command: cat ${{inputs.data}}/m.txt
    inputs:
      data: ${{parent.jobs.make.outputs.out}}
`), 0o644))
	run := submit(t, addr, file)
	var out, errOut syncBuffer
	require.Equal(t, ExitOK, Run(context.Background(), []string{"job", "show", "--watch", "--address", addr, run}, nil, &out, &errOut),
		"%s%s", &out, &errOut)

	port, err := devserver.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"ui", "--address", addr, "--port", fmt.Sprint(port)}, nil, &stdout, &stderr)
	}()
	line := regexp.MustCompile(`porch ui: (http://\S+/porch/) \(runs of ` + regexp.QuoteMeta(addr) + `, namespace default\)`)
	// Waits for porch ui to listen.
	require.Eventually(t, func() bool { return line.MatchString(stdout.String()) }, time.Minute, 20*time.Millisecond, "%s", &stderr)
	base := line.FindStringSubmatch(stdout.String())[1]

	page := getText(t, base)
	assert.Contains(t, page, `<script type="module" src="static/app.js">`)
	assert.Contains(t, getText(t, base+"static/vendor/elk-api.js"), "ELK")

	var runs struct{ Runs []pageRunRow }
	getJSON(t, base+"api/runs?experiment=ui-cmd&status=succeeded", &runs)
	require.Len(t, runs.Runs, 1)
	assert.Equal(t, pageRunRow{ID: run, Status: "succeeded", Pipeline: "ui-chain", Experiment: "ui-cmd",
		Link: devUI + "/namespaces/default/workflows/" + run}, runs.Runs[0])
	getJSON(t, base+"api/runs?status=failed", &runs)
	assert.Empty(t, runs.Runs)

	var view struct {
		Graph graph.Graph
		Steps []struct{ Path, Status string }
	}
	getJSON(t, base+"api/runs/"+run, &view)
	assert.Equal(t, []graph.Edge{{From: "make", Output: "out", To: "use", Input: "data"}}, view.Graph.Edges)
	assert.Equal(t, []struct{ Path, Status string }{{"make", "succeeded"}, {"use", "succeeded"}}, view.Steps)

	var step struct {
		Inputs  []struct{ Name, Value, From, Local string }
		Outputs []struct{ Name, Value, Local string }
		Log     string
	}
	getJSON(t, base+"api/runs/"+run+"/step?path=use", &step)
	require.Len(t, step.Inputs, 1)
	assert.Equal(t, "make.out", step.Inputs[0].From)
	assert.Equal(t, "azureml://datastores/workspaceblobstore/paths/azureml/"+run+"/make/out/", step.Inputs[0].Value)
	assert.DirExists(t, step.Inputs[0].Local, "the input's folder on this host")
	assert.Equal(t, "user_logs/std_log.txt", step.Log)

	var log struct {
		Text   string
		Offset int64
		Where  string
	}
	getJSON(t, base+"api/runs/"+run+"/log?path=use", &log)
	assert.Contains(t, log.Text, "bonjour\n", "the step's output in its log")
	assert.FileExists(t, log.Where)
	getJSON(t, base+fmt.Sprintf("api/runs/%s/log?path=use&offset=%d", run, log.Offset), &log)
	assert.Empty(t, log.Text, "nothing after the end")

	resp, err := http.Get(base + "api/runs/nope-1")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A step on a compute no worker serves (porch dev runs no fleet here)
	// is waiting for a worker; the one after it is queued.
	compute := filepath.Join(dir, "idle.yml")
	require.NoError(t, os.WriteFile(compute, []byte("name: idle\ntype: amlcompute\nsize: Standard_D4s_v3\nmax_instances: 1\n"), 0o644))
	require.Equal(t, ExitOK, Run(context.Background(), []string{"compute", "create", "--address", addr, "-f", compute}, nil, &out, &errOut),
		"%s", &errOut)
	idle := filepath.Join(dir, "idle-run.yml")
	require.NoError(t, os.WriteFile(idle, []byte(`type: pipeline
name: ui-idle
jobs:
  stuck:
    command: echo never
    compute: azureml:idle
    outputs:
      out:
  next:
    command: ls ${{inputs.x}}
    inputs:
      x: ${{parent.jobs.stuck.outputs.out}}
`), 0o644))
	stuck := submit(t, addr, idle)
	var state struct {
		Steps []struct{ Path, Status, Detail string }
	}
	// Waits for the step's workflow to start and the page to see no poller.
	require.Eventually(t, func() bool {
		getJSON(t, base+"api/runs/"+stuck+"/steps", &state)
		return len(state.Steps) == 2 && state.Steps[0].Status == "waiting"
	}, time.Minute, 100*time.Millisecond, "%+v", &state)
	assert.Contains(t, state.Steps[0].Detail, "no worker polls task queue porch-compute-idle")
	assert.Equal(t, "queued", state.Steps[1].Status)
	require.Equal(t, ExitOK, Run(context.Background(), []string{"job", "cancel", "--address", addr, stuck}, nil, &out, &errOut))

	cancel()
	assert.Equal(t, ExitOK, <-done, "%s", &stderr)
}

// TestUICommandRefusesAnOpenIP checks that porch ui, which has no
// authentication, listens beyond loopback only when told --insecure.
func TestUICommandRefusesAnOpenIP(t *testing.T) {
	var stdout, stderr syncBuffer
	code := Run(context.Background(), []string{"ui", "--ip", "0.0.0.0", "--address", "127.0.0.1:1"}, nil, &stdout, &stderr)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr.String(), "--ip 0.0.0.0 is not a loopback address")
}

// pageRunRow is a row of the page's run list, without its times.
type pageRunRow struct{ ID, Status, Pipeline, Experiment, User, Link string }

func (r *pageRunRow) UnmarshalJSON(b []byte) error {
	var v struct {
		ID, Status, Pipeline, Experiment, Link string
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = pageRunRow{ID: v.ID, Status: v.Status, Pipeline: v.Pipeline, Experiment: v.Experiment, Link: v.Link}
	return nil
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	return string(body)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(getText(t, url)), v), url)
}
