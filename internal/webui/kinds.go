package webui

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/sweep"
	"github.com/porch-pipelines/porch/workflows"
)

// parallelView is a parallel step's mini-batches: how many succeeded,
// failed, run and wait, and the failed ones with their errors.
type parallelView struct {
	Phase     workflows.ParallelPhase `json:"phase"`
	Summary   string                  `json:"summary"`
	Batches   int                     `json:"batches"`
	Succeeded int                     `json:"succeeded"`
	Failed    int                     `json:"failed"`
	Running   int                     `json:"running"`
	Pending   int                     `json:"pending"`
	// FailedBatches are the mini-batches whose last attempt failed, from
	// the step's processed_mini-batches.csv (at most maxFailedShown).
	FailedBatches []failedBatch `json:"failed_batches,omitempty"`
}

type failedBatch struct {
	Batch   int    `json:"batch"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node,omitempty"`
	Error   string `json:"error"`
}

// maxFailedShown bounds the failed mini-batches the page lists.
const maxFailedShown = 100

// parallel asks a parallel step for its progress and reads its failed
// mini-batches from its report.
func (s *server) parallel(ctx context.Context, runID string, st workflows.StepState) *parallelView {
	var p workflows.ParallelProgress
	if query(ctx, s.opts.Client, st.WorkflowID, workflows.ProgressQuery, &p) != nil {
		return nil
	}
	c := p.Counters
	v := &parallelView{Phase: p.Phase, Summary: p.Summary(), Batches: c.Batches, Succeeded: c.Succeeded + c.Skipped,
		Failed: c.Failed, Running: c.Running}
	v.Pending = max(c.Batches-v.Succeeded-v.Failed-v.Running, 0)
	if c.Failed > 0 && s.opts.Files != nil {
		if r, _, err := s.opts.Files.Open(ctx, runID, st, logName(st.Type), 0); err == nil {
			v.FailedBatches = failedBatches(r)
			r.Close()
		}
	}
	return v
}

// failedBatches reads processed_mini-batches.csv (one row per attempt:
// mini_batch_id, attempt, result, node, ..., error) and lists the
// mini-batches whose last attempt failed.
func failedBatches(r io.Reader) []failedBatch {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	last := map[int]failedBatch{}
	failed := map[int]bool{}
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(row) < 10 {
			continue // the header, or a row being written
		}
		batch, err1 := strconv.Atoi(row[0])
		attempt, err2 := strconv.Atoi(row[1])
		if err1 != nil || err2 != nil || attempt < last[batch].Attempt {
			continue
		}
		last[batch] = failedBatch{Batch: batch, Attempt: attempt, Node: row[3], Error: row[9]}
		failed[batch] = row[2] == "failed"
	}
	var out []failedBatch
	for b, f := range failed {
		if f {
			out = append(out, last[b])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Batch < out[j].Batch })
	if len(out) > maxFailedShown {
		out = out[:maxFailedShown]
	}
	return out
}

// sweepView is a sweep's trials: their parameters, status and primary
// metric, and which is best.
type sweepView struct {
	Metric    string      `json:"metric"`
	Goal      string      `json:"goal"`
	MaxTrials int         `json:"max_trials"`
	Summary   string      `json:"summary"`
	Best      int         `json:"best"`
	Trials    []trialView `json:"trials"`
}

// trialView is one trial. Value is the primary metric the sweep compares
// it on (its last report), At when it reported it (its end, or now for a
// trial still running).
type trialView struct {
	Trial      int                   `json:"trial"`
	Path       string                `json:"path"`
	Status     workflows.TrialStatus `json:"status"`
	Params     sweep.Assignment      `json:"params"`
	Value      *float64              `json:"value,omitempty"`
	BestValue  *float64              `json:"best_value,omitempty"`
	Reports    int                   `json:"reports"`
	Started    time.Time             `json:"started"`
	Ended      *time.Time            `json:"ended,omitempty"`
	At         *time.Time            `json:"at,omitempty"`
	Error      string                `json:"error,omitempty"`
	WorkflowID string                `json:"workflow_id"`
	Link       string                `json:"link,omitempty"`
}

// sweep asks a sweep step for its trials.
func (s *server) sweep(ctx context.Context, workflowID string) *sweepView {
	var p workflows.SweepProgress
	if query(ctx, s.opts.Client, workflowID, workflows.TrialsQuery, &p) != nil {
		return nil
	}
	best, _ := p.Best()
	v := &sweepView{Metric: p.Metric, Goal: p.Goal, MaxTrials: p.MaxTrials, Summary: p.Summary(), Best: best,
		Trials: make([]trialView, 0, len(p.Trials))}
	now := time.Now()
	for _, t := range p.Trials {
		tv := trialView{Trial: t.Trial, Path: trialPath(workflowID, t), Status: t.Status, Params: t.Params,
			Reports: len(t.Points), Started: t.Started, Error: t.Error, WorkflowID: t.WorkflowID, Link: s.workflowLink(t.WorkflowID)}
		if !t.Ended.IsZero() {
			ended := t.Ended
			tv.Ended = &ended
		}
		if k := len(t.Points); k > 0 && finite(t.Points[k-1].Value) {
			last := t.Points[k-1].Value
			at := now
			if tv.Ended != nil {
				at = *tv.Ended
			}
			tv.Value, tv.At = &last, &at
		}
		if b, ok := t.BestValue(p.Goal); ok && finite(b) {
			tv.BestValue = &b
		}
		v.Trials = append(v.Trials, tv)
	}
	return v
}

// trialPath is a trial's path in the run: its sweep's path and
// trial-<n>, as porch job logs names it.
func trialPath(sweepWorkflowID string, t workflows.TrialState) string {
	_, path, _ := strings.Cut(sweepWorkflowID, "/")
	return path + "/trial-" + strconv.Itoa(t.Trial)
}

// finite says whether JSON can carry v.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
