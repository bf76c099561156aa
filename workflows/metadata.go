package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/sweep"
)

// User metadata: the labels Temporal's UI shows for porch's workflows,
// activities and timers (Timeline bars, the User Metadata tab) and that
// `temporal workflow describe` prints. They are not part of command
// matching, so histories recorded without them replay unchanged; they are
// built from what the workflow already holds, never from I/O.

// Bounds of user metadata: a summary is one line of a Timeline bar; details
// are markdown, kept well under Temporal's payload limits.
const (
	maxSummary  = 100
	maxCommand  = 60
	maxDetails  = 16 << 10
	maxCodeText = 2 << 10
)

// oneLine is the first non-blank line of s with its runs of white space
// collapsed, cut to at most n characters (an ellipsis says it was cut, and
// so does one for the lines after it).
func oneLine(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.Join(strings.Fields(lines[0]), " ")
	more := len(lines) > 1
	if utf8.RuneCountInString(line) > n {
		r := []rune(line)
		line = strings.TrimRight(string(r[:n-1]), " ")
		more = true
	}
	if more {
		line += "…"
	}
	return line
}

// cut bounds markdown details at about n bytes: on a line boundary, or
// for one long line before the character that n splits.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
		s = s[:i+1]
	} else {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "\n"
	}
	return s + "\n… (cut by porch)\n"
}

// RunSummary is a run's one-line label: "pipeline train: 4 steps".
func RunSummary(p *plan.Plan) string {
	name := p.DisplayName
	if name == "" {
		name = p.Name
	}
	return oneLine(fmt.Sprintf("pipeline %s: %s", name, plural(int64(len(p.Pipeline.Steps)), "step", "steps")), maxSummary)
}

// stepSummary is a step workflow's label: "train · command on cpu-cluster",
// or for a nested pipeline "sub · pipeline: 3 steps".
func stepSummary(s plan.Step) string {
	if s.Type == plan.StepPipeline && s.Pipeline != nil {
		return oneLine(fmt.Sprintf("%s · pipeline: %s", s.Path, plural(int64(len(s.Pipeline.Steps)), "step", "steps")), maxSummary)
	}
	return oneLine(fmt.Sprintf("%s · %s on %s", s.Path, s.Type, computeName(s.Compute)), maxSummary)
}

// trialSummary is a sweep trial's label: "trial 3: lr=0.01, depth=4".
func trialSummary(n int, a sweep.Assignment) string {
	return oneLine(fmt.Sprintf("trial %d: %s", n, params(a)), maxSummary)
}

// params is "lr=0.01, depth=4", in the order the sampler gave them.
func params(a sweep.Assignment) string {
	parts := make([]string, 0, len(a))
	for _, v := range a {
		parts = append(parts, v.Name+"="+v.Text)
	}
	return strings.Join(parts, ", ")
}

// commandSummary is a RunCommand activity's label: "run train: python
// train.py --epochs ${{inputs.epochs}}…", the command as written, first
// line only.
func commandSummary(stepPath string, c plan.Command) string {
	return oneLine("run "+stepPath+": "+oneLine(c.Template.Source, maxCommand), maxSummary)
}

// miniBatchSummary is a RunMiniBatch activity's label: "mini-batch 17 of
// 400 (4 files)", numbered from 0 as in the step's logs. The file count is
// there only when the plan's counts show the input was cut into batches of
// a number of files.
func miniBatchSummary(i int, p plan.Parallel, pl parallel.ParallelPlan) string {
	s := fmt.Sprintf("mini-batch %d of %d", i, pl.Batches)
	if n := batchFiles(i, p, pl); n > 0 {
		s += " (" + plural(int64(n), "file", "files") + ")"
	}
	return s
}

// groupSummary is a RunMiniBatches activity's label: "mini-batches 8-27
// of 400", or for mini-batches not in a row "20 mini-batches from 8 of
// 400".
func groupSummary(batch []int, pl parallel.ParallelPlan) string {
	first, last := batch[0], batch[len(batch)-1]
	if last-first == len(batch)-1 {
		return fmt.Sprintf("mini-batches %d-%d of %d", first, last, pl.Batches)
	}
	return fmt.Sprintf("%d mini-batches from %d of %d", len(batch), first, pl.Batches)
}

// batchFiles is how many files mini-batch i holds, 0 when the workflow
// cannot tell: mini_batch_size in bytes, tabular input, or counts that do
// not add up to batches of that many files.
func batchFiles(i int, p plan.Parallel, pl parallel.ParallelPlan) int {
	if pl.Tabular || len(p.PartitionKeys) > 0 || pl.Files <= 0 || i < 0 || i >= pl.Batches {
		return 0
	}
	per := minibatch.DefaultFiles
	if p.MiniBatchSize != "" {
		n, err := strconv.Atoi(p.MiniBatchSize)
		if err != nil || n < 1 {
			return 0
		}
		per = n
	}
	if (pl.Files+per-1)/per != pl.Batches {
		return 0
	}
	return min(per, pl.Files-i*per)
}

// commandEnded is a command step's current details once its command has
// ended: "succeeded", "succeeded on attempt 2", "failed: …", "canceled".
func commandEnded(r command.RunCommandResult, err error) string {
	switch {
	case err == nil && r.Attempt > 1:
		return withNote(fmt.Sprintf("succeeded on attempt %d", r.Attempt), r.EnvironmentNote)
	case err == nil:
		return withNote("succeeded", r.EnvironmentNote)
	case isCanceled(err):
		return "canceled"
	}
	return "failed: " + oneLine(ErrorMessage(err), maxSummary)
}

// withNote is s, then note when there is one.
func withNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + "; " + note
}

// sleep is workflow.Sleep with a label for the timer.
func sleep(ctx workflow.Context, d time.Duration, summary string) error {
	return workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary}).Get(ctx, nil)
}

// newTimer is workflow.NewTimer with a label.
func newTimer(ctx workflow.Context, d time.Duration, summary string) workflow.Future {
	return workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary})
}

// metricsSummary is a ReadTrialMetrics activity's label: "metrics poll:
// trials 0, 1, 3".
func metricsSummary(trials []int) string {
	if len(trials) == 1 {
		return fmt.Sprintf("metrics poll: trial %d", trials[0])
	}
	if len(trials) > 8 {
		return fmt.Sprintf("metrics poll: %d trials", len(trials))
	}
	parts := make([]string, len(trials))
	for i, n := range trials {
		parts[i] = strconv.Itoa(n)
	}
	return "metrics poll: trials " + strings.Join(parts, ", ")
}
