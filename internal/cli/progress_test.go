package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/stretchr/testify/assert"
)

var t0 = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func step(path string, status workflows.StepStatus, started, ended float64) workflows.StepState {
	s := workflows.StepState{Path: path, Type: plan.StepCommand, Status: status, Attempt: 1}
	if started >= 0 {
		s.Started = at(started)
	}
	if ended >= 0 {
		s.Ended = at(ended)
	}
	return s
}

func TestPlainProgress(t *testing.T) {
	var b bytes.Buffer
	p := newPlainProgress(&b, time.UTC)
	const none = -1
	p.Update(at(0), []workflows.StepState{
		step("a", workflows.StatusRunning, 1, none),
		step("b", workflows.StatusWaiting, none, none),
		step("c", workflows.StatusWaiting, none, none),
	})
	// Nothing changed: nothing printed.
	p.Update(at(1.5), []workflows.StepState{
		step("a", workflows.StatusRunning, 1, none),
		step("b", workflows.StatusWaiting, none, none),
		step("c", workflows.StatusWaiting, none, none),
	})
	failed := step("c", workflows.StatusFailed, 2.5, 2.8)
	failed.Error = "command exited with code 3\nline one\nline two"
	retried := step("b", workflows.StatusRunning, 2.5, none)
	retried.Attempt = 2
	p.Update(at(3), []workflows.StepState{
		step("a", workflows.StatusSucceeded, 1, 2.2),
		retried,
		failed, // started and ended between two polls
	})
	p.Done(at(4), []workflows.StepState{
		step("a", workflows.StatusSucceeded, 1, 2.2),
		step("b", workflows.StatusCanceled, 2.5, 3.5),
		failed,
		step("d", workflows.StatusSkipped, none, none),
	})
	want := `12:00:01 step a started
12:00:02 step a succeeded in 1.2s
12:00:02 step b started (attempt 2)
12:00:02 step c started
12:00:02 step c failed in 0.3s: command exited with code 3
12:00:03 step b canceled in 1.0s
12:00:04 step d skipped
`
	assert.Equal(t, want, b.String())
}

func TestPlainProgressRetry(t *testing.T) {
	var b bytes.Buffer
	p := newPlainProgress(&b, time.UTC)
	s := step("train", workflows.StatusRunning, 0, -1)
	p.Update(at(0), []workflows.StepState{s})
	s.Attempt = 2
	p.Update(at(5), []workflows.StepState{s})
	assert.Equal(t, "12:00:00 step train started\n12:00:05 step train retrying (attempt 2)\n", b.String())
}

func TestTermProgress(t *testing.T) {
	var b bytes.Buffer
	p := &termProgress{w: &b}
	const none = -1
	p.Update(at(2), []workflows.StepState{
		step("prep", workflows.StatusSucceeded, 0, 1.5),
		step("sub/train", workflows.StatusRunning, 1.5, none),
	})
	first := b.String()
	assert.NotContains(t, first, "\x1b[2F", "the first frame moves nowhere")
	lines := strings.Split(strings.TrimSuffix(first, "\x1b[J"), "\n")
	assert.Equal(t, "\x1b[2K✓ prep       1.5s", lines[0])
	assert.Equal(t, "\x1b[2K"+spinnerFrames[1]+" sub/train  0.5s", lines[1])

	b.Reset()
	retried := step("sub/train", workflows.StatusFailed, 1.5, 3)
	retried.Attempt = 3
	retried.Error = "command exited with code 1"
	p.Done(at(9), []workflows.StepState{
		step("prep", workflows.StatusSucceeded, 0, 1.5),
		retried,
		step("report", workflows.StatusSkipped, none, none),
	})
	second := b.String()
	assert.True(t, strings.HasPrefix(second, "\x1b[2F"), "redraws over the 2 lines drawn before: %q", second)
	assert.Contains(t, second, "✗ sub/train  1.5s  attempt 3  command exited with code 1\n")
	assert.Contains(t, second, "- report     skipped\n")
	assert.Equal(t, 3, p.lines)
}

func TestFormatDuration(t *testing.T) {
	assert.Equal(t, "0.0s", formatDuration(0))
	assert.Equal(t, "1.2s", formatDuration(1234*time.Millisecond))
	assert.Equal(t, "59.9s", formatDuration(59940*time.Millisecond))
	assert.Equal(t, "2m05s", formatDuration(125*time.Second))
	assert.Equal(t, "1h02m03s", formatDuration(time.Hour+2*time.Minute+3*time.Second))
}

func TestPlainProgressNestedOrder(t *testing.T) {
	var b bytes.Buffer
	p := newPlainProgress(&b, time.UTC)
	pipe := step("english", workflows.StatusSucceeded, 0, 2)
	pipe.Type = plan.StepPipeline
	// One poll sees the whole nested pipeline: lines come in time order,
	// the pipeline's end after its steps' ends.
	p.Update(at(3), []workflows.StepState{
		pipe,
		step("english/split", workflows.StatusSucceeded, 0, 1),
		step("english/count", workflows.StatusSucceeded, 1, 2),
	})
	want := `12:00:00 step english started
12:00:00 step english/split started
12:00:01 step english/split succeeded in 1.0s
12:00:01 step english/count started
12:00:02 step english/count succeeded in 1.0s
12:00:02 step english succeeded in 2.0s
`
	assert.Equal(t, want, b.String())
}

// TestWhyAStepRanIsToldOnce: a step that ran although a record of it
// existed gets one line saying why, in the plain view as it starts and in
// the redrawn view below the last frame; a first run, a reused step and a
// step that never started get none.
func TestWhyAStepRanIsToldOnce(t *testing.T) {
	const none = -1
	changed := step("a", workflows.StatusRunning, 1, none)
	changed.Reuse = &workflows.Reuse{Reason: `input "n" changed (content 3f2a1c0e… → 9c1b77d2…)`, WasRun: "r0"}
	first := step("b", workflows.StatusRunning, 1, none)
	first.Reuse = &workflows.Reuse{Reason: "first run"}
	reused := step("c", workflows.StatusReused, none, 1)
	reused.Reuse = &workflows.Reuse{FromRun: "r0", WasRun: "r0"}
	undecided := step("d", workflows.StatusRunning, 1, none)
	undecided.Reuse = &workflows.Reuse{Reason: workflows.ReasonUndecided + "activity timed out"}
	steps := []workflows.StepState{changed, first, reused, undecided}

	var b bytes.Buffer
	p := newPlainProgress(&b, time.UTC)
	p.Update(at(1), steps)
	done := steps
	done[0].Status, done[0].Ended = workflows.StatusSucceeded, at(2)
	p.Done(at(3), done)
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, "step a ran:"), out)
	assert.Contains(t, out, "12:00:01 step a ran: input \"n\" changed (content 3f2a1c0e… → 9c1b77d2…)\n12:00:01 step a started\n")
	assert.Contains(t, out, "12:00:01 step d ran: reuse not decided: activity timed out\n")
	assert.NotContains(t, out, "step b ran")
	assert.NotContains(t, out, "step c ran")

	b.Reset()
	term := &termProgress{w: &b}
	term.Update(at(1), steps)
	assert.NotContains(t, b.String(), " ran: ", "the redrawn view tells it once, at the end")
	term.Done(at(3), done)
	assert.True(t, strings.HasSuffix(b.String(), "\x1b[J"+
		"step a ran: input \"n\" changed (content 3f2a1c0e… → 9c1b77d2…)\nstep d ran: reuse not decided: activity timed out\n"), "%q", b.String())
}
