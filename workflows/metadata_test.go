package workflows

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

func TestOneLineKeepsTheFirstLineAndCutsIt(t *testing.T) {
	assert.Equal(t, "python train.py --lr 0.1", oneLine("  python   train.py\t--lr 0.1 \n", 60))
	assert.Equal(t, "python train.py…", oneLine("python train.py\necho done", 60))
	assert.Equal(t, "abcd…", oneLine("abcdefgh", 5))
	assert.Equal(t, "ééé…", oneLine("éééééé", 4), "cuts characters, not bytes")
	assert.Equal(t, "éé\n\n… (cut by porch)\n", cut("éééééé", 5), "details are cut between characters")
	assert.Equal(t, "a\nb\n\n… (cut by porch)\n", cut("a\nb\ncdef\n", 6), "details are cut after a line")
}

func TestRunLabelsNameThePipelineItsStepsAndWhereThingsLand(t *testing.T) {
	p, diags := compiler.Compile("testdata/nested.yaml", compiler.Options{})
	require.False(t, diags.HasErrors(), diags.Error())
	assert.Equal(t, "pipeline nested: 3 steps", RunSummary(p))
	p.DisplayName = "Nested demo"
	assert.Equal(t, "pipeline Nested demo: 3 steps", RunSummary(p))

	d := RunDetails(p, "nested-abc")
	assert.Contains(t, d, "`nested-abc` of `"+p.Source+"`")
	assert.Contains(t, d, "- `n` (integer): `3`")
	assert.Contains(t, d, "- `first` · pipeline\n")
	assert.Contains(t, d, "- `first/make` · command on default\n", "a nested pipeline's steps are listed by path")
	assert.Contains(t, d, "- `last` · command on default · after second\n")
	assert.Contains(t, d, "azureml://datastores/workspaceblobstore/paths/azureml/nested-abc/STEP/OUTPUT/")
	assert.Contains(t, d, "porch job logs nested-abc STEP")
}

func TestRunDetailsAreBounded(t *testing.T) {
	p := &plan.Plan{Name: "big", Source: "big.yml"}
	for i := range 2000 {
		p.Pipeline.Steps = append(p.Pipeline.Steps, plan.Step{Name: "s", Path: strings.Repeat("x", 20) + string(rune('a'+i%26)), Type: plan.StepCommand})
	}
	d := RunDetails(p, "big-1")
	assert.LessOrEqual(t, len(d), maxDetails+100)
	assert.True(t, strings.HasSuffix(d, "… (cut by porch)\n"))
}

// TestTheMemoOfABigRunIsBounded builds the start request of a 10,000-step
// plan, one nested pipeline among them, with 1 MB of YAML: the memo, which
// the server writes again with every update of the run, keeps at most
// 16 KB of each, cut at a line, and says what it left out and where the
// rest is.
func TestTheMemoOfABigRunIsBounded(t *testing.T) {
	p := &plan.Plan{Name: "big", Source: "/work/big.yml"}
	inner := plan.Pipeline{Steps: []plan.Step{{Name: "a", Type: plan.StepCommand}, {Name: "b", Type: plan.StepCommand}}}
	for i := range 9997 {
		p.Pipeline.Steps = append(p.Pipeline.Steps, plan.Step{Name: fmt.Sprintf("step%d", i), Type: plan.StepCommand})
	}
	p.Pipeline.Steps = append(p.Pipeline.Steps, plan.Step{Name: "nest", Type: plan.StepPipeline, Pipeline: &inner})
	yml := []byte("jobs:\n" + strings.Repeat("  s: {command: échoé}\n", 50000))
	r := NewStartRequest(p, "big-1", yml)

	source := r.Options.Memo[MemoSource].(string)
	assert.LessOrEqual(t, len(source), maxMemoSource+200)
	assert.True(t, utf8.ValidString(source), "cut between lines, not inside a character")
	assert.Regexp(t, `\n# \.\.\. truncated by porch after \d+ of 1200006 bytes: the whole file is /work/big.yml\n$`, source)
	summary := r.Options.Memo[MemoPlan].(string)
	assert.LessOrEqual(t, len(summary), maxMemoPlan+200)
	assert.True(t, strings.HasPrefix(summary, "big (/work/big.yml)\n  step0  command\n"))
	shown := strings.Count(summary, "  command\n")
	assert.Contains(t, summary, fmt.Sprintf("  ... and %d more steps: porch job show big-1 lists them all\n", 10000-shown))

	small := NewStartRequest(&plan.Plan{Name: "small", Pipeline: inner}, "small-1", []byte("jobs: {}\n"))
	assert.Equal(t, "jobs: {}\n", small.Options.Memo[MemoSource])
	assert.Equal(t, "small ()\n  a  command\n  b  command\n", small.Options.Memo[MemoPlan])
}

func TestStepLabels(t *testing.T) {
	s := plan.Step{Path: "train", Type: plan.StepCommand, Compute: "azureml:cpu-cluster",
		Command: &plan.Command{Template: plan.Template{Source: "python train.py --epochs ${{inputs.epochs}} --data ${{inputs.data}} --out ${{outputs.model}}"}}}
	assert.Equal(t, "train · command on azureml:cpu-cluster", stepSummary(s))
	s.Compute = ""
	assert.Equal(t, "train · command on default", stepSummary(s))
	assert.Equal(t, "run train: python train.py --epochs ${{inputs.epochs}} --data ${{input…",
		commandSummary(s.Path, *s.Command))
	d := stepDetails("r1", "", s, []plan.Input{{Name: "epochs", Type: "integer", Value: plan.Value{Kind: plan.ValueLiteral, Literal: "3"}}},
		[]plan.Output{{Name: "model", Path: "azureml://datastores/ws/paths/m/"}})
	assert.Contains(t, d, "python train.py --epochs")
	assert.Contains(t, d, "- `epochs` (integer): `3`")
	assert.Contains(t, d, "- `model`: `azureml://datastores/ws/paths/m/`")
	assert.Contains(t, d, "**Logs** in `azureml://datastores/workspaceblobstore/paths/azureml/r1/train/artifacts/`")

	a := sweep.Assignment{{Name: "lr", Text: "0.01"}, {Name: "depth", Text: "4"}}
	assert.Equal(t, "trial 3: lr=0.01, depth=4", trialSummary(3, a))
	assert.Equal(t, "metrics poll: trial 3", metricsSummary([]int{3}))
	assert.Equal(t, "metrics poll: trials 0, 2", metricsSummary([]int{0, 2}))
}

func TestMiniBatchSummaryCountsFilesOnlyWhenTheCountsSaySo(t *testing.T) {
	files := parallel.ParallelPlan{Batches: 4, Files: 14}
	p := plan.Parallel{MiniBatchSize: "4"}
	assert.Equal(t, "mini-batch 0 of 4 (4 files)", miniBatchSummary(0, p, files))
	assert.Equal(t, "mini-batch 3 of 4 (2 files)", miniBatchSummary(3, p, files))
	assert.Equal(t, "mini-batch 0 of 2 (10 files)", miniBatchSummary(0, plan.Parallel{}, parallel.ParallelPlan{Batches: 2, Files: 11}),
		"the default is 10 files")
	assert.Equal(t, "mini-batch 0 of 1 (1 file)", miniBatchSummary(0, p, parallel.ParallelPlan{Batches: 1, Files: 1}))
	assert.Equal(t, "mini-batch 1 of 4", miniBatchSummary(1, plan.Parallel{MiniBatchSize: "1mb"}, files), "a size in bytes")
	assert.Equal(t, "mini-batch 1 of 5", miniBatchSummary(1, p, parallel.ParallelPlan{Batches: 5, Files: 14}), "counts that do not add up")
	assert.Equal(t, "mini-batch 1 of 4", miniBatchSummary(1, p, parallel.ParallelPlan{Batches: 4, Files: 14, Tabular: true}))
}
