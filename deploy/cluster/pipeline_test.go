package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The pipeline: prep writes one small file per item, score (a parallel
// step, one item per mini-batch) turns each into a row appended to
// append_row_to, tune (a sweep) runs trials, and report (on the other
// compute) joins both. Every step's data goes through the MinIO datastore.
//
// tune's trials run on beta, across the three workers: the sweep reads
// each trial's final metrics from the datastore, where the trial's worker
// copied them.
const (
	items = 36
	// heartbeat is the mini-batches' progress_update_timeout, in seconds:
	// the time a cut worker's mini-batches wait before they run elsewhere.
	// It is not shorter because the undisturbed runs must ride out a
	// server stalled by a loaded machine: at 3 s, a `make test` on 2 cores
	// (PostgreSQL's writes competing with every other package's tests)
	// timed out all three attempts of one mini-batch and failed the step.
	heartbeat = 10
)

// scoreScript sleeps a little per mini-batch, so the step is still running
// when the test cuts a worker off, and leaves a mark per mini-batch in the
// state folder (which every namespace sees: they share the file system) so
// the test knows which worker is busy.
const scoreScript = `import argparse, os, time

args = None

def init():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--state", required=True)
    p.add_argument("--sleep", type=float, default=0)
    args, _ = p.parse_known_args()

def run(mini_batch):
    out = []
    for path in mini_batch:
        time.sleep(args.sleep)
        name = os.path.basename(path)
        out.append("%s,%s" % (name, open(path).read().strip()))
        open(os.path.join(args.state, "%s.%s.%d" % (os.environ.get("CLUSTER_NODE", "?"), name, os.getpid())), "w").close()
    return out
`

// pipelineYAML is the pipeline on computes alpha and beta; %s are the
// datastore, the state folder and the seconds each mini-batch sleeps.
const pipelineYAML = `type: pipeline
name: cluster
settings:
  default_datastore: azureml:%[1]s
  default_compute: azureml:alpha
jobs:
  prep:
    command: >-
      for i in $(seq 0 %[4]d); do printf '%%d' $i > ${{outputs.data}}/item$(printf '%%03d' $i).txt; done
    outputs:
      data:
        type: uri_folder
  score:
    type: parallel
    inputs:
      data: ${{parent.jobs.prep.outputs.data}}
    outputs:
      scores:
        type: uri_folder
    input_data: ${{inputs.data}}
    mini_batch_size: "1"
    resources:
      instance_count: 3
    max_concurrency_per_instance: 2
    mini_batch_error_threshold: 0
    task:
      type: run_function
      code: ./src
      entry_script: score.py
      program_arguments: --state %[2]s --sleep %[3]s --progress_update_timeout %[5]d
      append_row_to: ${{outputs.scores}}
  tune:
    type: sweep
    compute: azureml:beta
    trial:
      type: command
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu:1
      inputs:
        x:
          type: number
      outputs:
        model:
          type: uri_folder
      command: >-
        python3 -c "import mlflow; mlflow.log_metric('loss', (${{inputs.x}} - 3) ** 2)" &&
        echo ${{inputs.x}} > ${{outputs.model}}/x.txt
    sampling_algorithm: grid
    search_space:
      x:
        type: choice
        values: [1, 2, 3, 4]
    objective:
      primary_metric: loss
      goal: minimize
    limits:
      max_total_trials: 4
      max_concurrent_trials: 2
    outputs:
      model:
        type: uri_folder
  report:
    compute: azureml:beta
    command: >-
      wc -l < ${{inputs.scores}}/parallel_run_step.txt > ${{outputs.out}}/rows.txt &&
      cp ${{inputs.model}}/x.txt ${{outputs.out}}/best.txt
    inputs:
      scores: ${{parent.jobs.score.outputs.scores}}
      model: ${{parent.jobs.tune.outputs.model}}
    outputs:
      out:
        type: uri_folder
`

// stepsPerRun counts the pipeline's step workflows: prep, score, tune and
// its four trials, report.
const stepsPerRun = 8

// writePipeline lays the pipeline out in a fresh folder and returns its
// file and the entry script's state folder.
func writePipeline(t *testing.T, datastore string, sleep float64) (string, string) {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(state, 0o777))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "score.py"), []byte(scoreScript), 0o644))
	path := filepath.Join(dir, "pipeline.yml")
	yml := fmt.Sprintf(pipelineYAML, datastore, state, fmt.Sprint(sleep), items-1, heartbeat)
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))
	return path, state
}

// wantRows is what append_row_to must hold: every item once, in order.
func wantRows() []string {
	var want []string
	for i := range items {
		want = append(want, fmt.Sprintf("item%03d.txt,%d", i, i))
	}
	return want
}
