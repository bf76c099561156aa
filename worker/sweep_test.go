package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/workflows"
)

// trialScript reports the metric "score" steps times, sleep seconds apart,
// at a level its --quality picks, the way an Azure ML training script does
// (mlflow). It notes its start and end in the state folder.
const trialScript = `import argparse, os, time
import mlflow

p = argparse.ArgumentParser()
p.add_argument("--quality", required=True)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--sleep", type=float, default=0.1)
p.add_argument("--state", required=True)
p.add_argument("--model", required=True)
args = p.parse_args()
level = {"good": 0.9, "mid": 0.5, "bad": 0.1, "slow": 0.95}[args.quality]
with open(os.path.join(args.state, "%s-%d.pid" % (args.quality, os.getpid())), "w") as f:
    f.write(str(os.getpid()))
with open(os.path.join(args.state, "times.log"), "a") as f:
    f.write("start %f\n" % time.time())
with mlflow.start_run():
    for i in range(args.steps):
        mlflow.log_metric("score", level + i * 0.001, step=i + 1)
        time.sleep(args.sleep if args.quality != "slow" else 600)
os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.txt"), "w") as f:
    f.write(args.quality + "\n")
with open(os.path.join(args.state, "times.log"), "a") as f:
    f.write("end %f\n" % time.time())
`

// sweepCase is a pipeline whose sweep step runs trialScript.
type sweepCase struct {
	qualities string // the choice's values, e.g. "[good, bad]"
	steps     int
	sleep     float64
	sweep     string // more YAML under the sweep step, indented by 4
}

func (c sweepCase) write(t *testing.T) (string, string) {
	t.Helper()
	needPython(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "trial.py"), []byte(trialScript), 0o644))
	yml := fmt.Sprintf(`type: pipeline
name: sweeptest
jobs:
  tune:
    type: sweep
    trial:
      type: command
      environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu:1
      code: ./src
      inputs:
        quality:
          type: string
      outputs:
        model:
          type: uri_folder
      command: >-
        python3 trial.py --quality ${{inputs.quality}} --steps %d --sleep %g
        --state %s --model ${{outputs.model}}
    search_space:
      quality:
        type: choice
        values: %s
    objective:
      primary_metric: score
      goal: maximize
%s
  use:
    command: cat ${{inputs.model}}/model.txt > ${{outputs.out}}/picked.txt
    inputs:
      model: ${{parent.jobs.tune.outputs.model}}
    outputs:
      out:
        type: uri_folder
`, c.steps, c.sleep, state, c.qualities, c.sweep)
	path := filepath.Join(dir, "pipeline.yml")
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o644))
	return path, state
}

func sweepTrials(t *testing.T, runID string) workflows.SweepProgress {
	t.Helper()
	v, err := temporalClient.QueryWorkflow(context.Background(), runID+"/tune", "", workflows.TrialsQuery)
	require.NoError(t, err)
	var p workflows.SweepProgress
	require.NoError(t, v.Get(&p))
	return p
}

func statuses(p workflows.SweepProgress) map[string][]workflows.TrialStatus {
	out := map[string][]workflows.TrialStatus{}
	for _, tr := range p.Trials {
		out[tr.Params[0].Text] = append(out[tr.Params[0].Text], tr.Status)
	}
	return out
}

func (h *harness) picked(runID string) string {
	data, err := os.ReadFile(filepath.Join(h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/use/out/", runID)), "picked.txt"))
	require.NoError(h.t, err)
	return strings.TrimSpace(string(data))
}

func TestSweepGridRunsEveryTrialAndTheBestFeedsTheNextStep(t *testing.T) {
	h := newHarness(t)
	path, _ := sweepCase{qualities: "[bad, good, mid]", steps: 3, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 10
      max_concurrent_trials: 2`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	p := sweepTrials(t, runID)
	require.Len(t, p.Trials, 3, "grid stops at the 3 points of its space")
	best, v := p.Best()
	assert.Equal(t, "good", p.Trials[best].Params[0].Text)
	assert.InDelta(t, 0.902, v, 1e-9)
	assert.Equal(t, "good", h.picked(runID), "the downstream step got the best trial's model")
	csv, err := os.ReadFile(filepath.Join(h.localPath(fmt.Sprintf("azureml://datastores/workspaceblobstore/paths/azureml/%s/tune/artifacts/", runID)), "trials.csv"))
	require.NoError(t, err)
	assert.Contains(t, string(csv), "trial,quality,last_score,best_score,status,duration_seconds,best,error")
	assert.Regexp(t, `\n1,good,0\.902,0\.902,completed,[0-9.]+,\*,\n`, string(csv))
}

// banditSweep is a sweep of two trials, a good one and a bad one, whose
// bandit policy stops the bad one.
var banditSweep = sweepCase{qualities: "[good, bad]", steps: 12, sleep: 0.5, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 2
    early_termination:
      type: bandit
      slack_factor: 0.1
      evaluation_interval: 1
      delay_evaluation: 1`}

func TestSweepBanditStopsTheTrialsThatFallBehind(t *testing.T) {
	h := newHarness(t)
	path, state := banditSweep.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	got := statuses(sweepTrials(t, runID))
	assert.Equal(t, []workflows.TrialStatus{workflows.TrialCompleted}, got["good"])
	assert.Equal(t, []workflows.TrialStatus{workflows.TrialEarlyTerminated}, got["bad"])
	assertTrialKilled(t, state, "bad")
}

func TestSweepNeverRunsMoreThanMaxConcurrentTrials(t *testing.T) {
	h := newHarness(t)
	path, state := sweepCase{qualities: "[good, mid, bad]", steps: 3, sleep: 0.2, sweep: `    sampling_algorithm:
      type: random
      seed: 3
    limits:
      max_total_trials: 6
      max_concurrent_trials: 2`}.write(t)
	_, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	// The trials' own start and end times, as the processes saw them.
	type mark struct {
		at    float64
		start bool
	}
	var marks []mark
	for _, l := range lines(t, filepath.Join(state, "times.log")) {
		kind, at, _ := strings.Cut(l, " ")
		v, err := strconv.ParseFloat(at, 64)
		require.NoError(t, err)
		marks = append(marks, mark{v, kind == "start"})
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].at < marks[j].at })
	running, most := 0, 0
	for _, m := range marks {
		if m.start {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	assert.Len(t, marks, 12, "6 trials started and ended")
	assert.Equal(t, 2, most, "two trials ran at once, never more")
}

func TestSweepTrialTimeoutKillsTheTrial(t *testing.T) {
	h := newHarness(t)
	path, state := sweepCase{qualities: "[good, slow]", steps: 2, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      trial_timeout: 10`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	got := statuses(sweepTrials(t, runID))
	assert.Equal(t, []workflows.TrialStatus{workflows.TrialFailed}, got["slow"])
	assert.Equal(t, "good", h.picked(runID))
	assertTrialKilled(t, state, "slow")
}

func TestSweepTimeoutEndsWithTheBestSoFar(t *testing.T) {
	h := newHarness(t)
	path, state := sweepCase{qualities: "[mid, slow]", steps: 2, sleep: 0.05, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      timeout: 12`}.write(t)
	start := time.Now()
	runID, err := h.run(compile(t, path, nil))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Minute, "the sweep ended at its timeout, not the slow trial's end")
	got := statuses(sweepTrials(t, runID))
	assert.Equal(t, []workflows.TrialStatus{workflows.TrialCompleted}, got["mid"])
	assert.Equal(t, []workflows.TrialStatus{workflows.TrialCanceled}, got["slow"])
	assert.Equal(t, "mid", h.picked(runID))
	assertTrialKilled(t, state, "slow")
}

// assertTrialKilled checks the trial processes of that quality are gone.
func assertTrialKilled(t *testing.T, state, quality string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, quality+"-*.pid"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		assertPIDGone(t, string(data))
	}
}

func TestSweepOverAPipelineComponentReadsTheMetricStep(t *testing.T) {
	needPython(t)
	h := newHarness(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trial.yml"), []byte(`type: pipeline
name: trial_pipeline
inputs:
  factor:
    type: number
outputs:
  result:
    type: uri_folder
jobs:
  make:
    command: echo ${{inputs.factor}} > ${{outputs.out}}/factor.txt
    inputs:
      factor: ${{parent.inputs.factor}}
    outputs:
      out:
        type: uri_folder
  score:
    command: >-
      python3 -c "import mlflow; f = float(open('${{inputs.made}}/factor.txt').read());
      mlflow.log_metric('loss', (f - 3) ** 2)" && cp ${{inputs.made}}/factor.txt ${{outputs.result}}/
    inputs:
      made: ${{parent.jobs.make.outputs.out}}
    outputs:
      result: ${{parent.outputs.result}}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pipeline.yml"), []byte(`type: pipeline
name: pipesweep
jobs:
  tune:
    type: sweep
    trial: ./trial.yml
    metric_step: score
    sampling_algorithm: grid
    search_space:
      factor:
        type: choice
        values: [1, 3, 4]
    objective:
      primary_metric: loss
      goal: minimize
    limits:
      max_total_trials: 3
    outputs:
      result:
        type: uri_folder
  use:
    command: cp ${{inputs.best}}/factor.txt ${{outputs.out}}/picked.txt
    inputs:
      best: ${{parent.jobs.tune.outputs.result}}
    outputs:
      out:
        type: uri_folder
`), 0o644))
	runID, err := h.run(compile(t, filepath.Join(dir, "pipeline.yml"), nil))
	require.NoError(t, err)
	p := sweepTrials(t, runID)
	require.Len(t, p.Trials, 3)
	best, loss := p.Best()
	assert.Equal(t, "3", p.Trials[best].Params[0].Text)
	assert.Zero(t, loss)
	assert.Equal(t, "3", h.picked(runID), "each trial is a whole pipeline; the best one's output feeds the next step")
}

// TestASweepWhoseTrialsAllFailNamesTheirError: every trial fails the same
// way (an unknown --quality): the sweep's failure names that error, not
// only the missing primary metric.
func TestASweepWhoseTrialsAllFailNamesTheirError(t *testing.T) {
	h := newHarness(t)
	path, _ := sweepCase{qualities: "[broken, wrong]", steps: 1, sleep: 0, sweep: `    sampling_algorithm: grid
    limits:
      max_total_trials: 2
      max_concurrent_trials: 2`}.write(t)
	runID, err := h.run(compile(t, path, nil))
	require.Error(t, err)
	msg := workflows.ErrorMessage(err)
	assert.Contains(t, msg, `no trial completed with primary metric "score" (2 failed): 2 of 2 failed trials ended with: command exited with code 1; see `)
	record(t, "v2-sweep-failure-cause", runID)
}
