package webui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/workflows"
)

// stepDetail is what the page shows of one step on click.
type stepDetail struct {
	stepView
	Reuse   *workflows.Reuse `json:"reuse,omitempty"`
	Inputs  []portView       `json:"inputs"`
	Outputs []portView       `json:"outputs"`
	Metrics []metricView     `json:"metrics,omitempty"`
	// Log names the step's log, "" for a step that has none.
	Log      string        `json:"log,omitempty"`
	Parallel *parallelView `json:"parallel,omitempty"`
	Sweep    *sweepView    `json:"sweep,omitempty"`
}

// portView is an input or output with where its data is.
type portView struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Value is a literal, or a data URI.
	Value string `json:"value,omitempty"`
	// From says what an input is bound to (another step's output, the
	// pipeline's input).
	From string `json:"from,omitempty"`
	// Local is where a data URI is on this host.
	Local string `json:"local,omitempty"`
}

// metricView is one metric a step reported.
type metricView struct {
	Key    string          `json:"key"`
	Points []metrics.Point `json:"points"`
}

// maxMetricsBytes bounds how much of a metrics file the page reads.
const maxMetricsBytes = 4 << 20

// step answers one step's details: ?path= is its path, or a sweep trial's
// (<sweep>/trial-<n>).
func (s *server) step(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := contextFor(r)
	defer cancel()
	id, path := r.PathValue("run"), r.URL.Query().Get("path")
	g, steps, what, err := s.graphAndSteps(ctx, id)
	if err != nil {
		s.runError(w, id, err, what)
		return
	}
	st, node, ok := s.findStep(ctx, id, g.Graph, steps, path)
	if !ok {
		apiError(w, http.StatusNotFound, fmt.Sprintf("run %s has no step %q", id, path))
		return
	}
	d := stepDetail{stepView: s.view(st), Reuse: st.Reuse, Inputs: []portView{}, Outputs: []portView{}}
	byPath := map[string]workflows.StepState{}
	for _, x := range steps {
		byPath[x.Path] = x
	}
	for _, in := range node.Inputs {
		p := s.input(ctx, g.Graph, byPath, path, in)
		d.Inputs = append(d.Inputs, p)
	}
	for _, o := range st.Outputs {
		d.Outputs = append(d.Outputs, portView{Name: o.Name, Value: o.URI, Local: s.local(ctx, o.URI)})
	}
	if log := logName(st.Type); log != "" && st.Status != workflows.StatusWaiting && st.Status != workflows.StatusSkipped {
		d.Log = log
		d.Metrics = s.metrics(ctx, id, st)
	}
	if st.WorkflowID != "" && st.Status != workflows.StatusWaiting && st.Status != workflows.StatusSkipped &&
		st.Status != workflows.StatusReused {
		switch st.Type {
		case plan.StepParallel:
			d.Parallel = s.parallel(ctx, id, st)
		case plan.StepSweep:
			d.Sweep = s.sweep(ctx, st.WorkflowID)
		}
	}
	writeJSON(w, d)
}

// findStep finds a step of the run, or a sweep's trial, and its node of
// the graph (a trial's is its sweep's).
func (s *server) findStep(ctx context.Context, id string, g graph.Graph, steps []workflows.StepState, path string) (workflows.StepState, graph.Node, bool) {
	nodes := map[string]graph.Node{}
	g.Walk(func(n graph.Node) { nodes[n.Path] = n })
	for _, st := range steps {
		if st.Path == path {
			return st, nodes[path], true
		}
	}
	sweepPath, _, isTrial := strings.Cut(path, "/trial-")
	if !isTrial || nodes[sweepPath].Type != plan.StepSweep {
		return workflows.StepState{}, graph.Node{}, false
	}
	for _, st := range steps {
		if st.Path != sweepPath || st.WorkflowID == "" {
			continue
		}
		var p workflows.SweepProgress
		if query(ctx, s.opts.Client, st.WorkflowID, workflows.TrialsQuery, &p) != nil {
			break
		}
		for _, t := range p.Trials {
			if t.WorkflowID == id+"/"+path {
				return trialStep(path, t), graph.Node{Path: path, Type: plan.StepCommand}, true
			}
		}
	}
	return workflows.StepState{}, graph.Node{}, false
}

// trialStep is a sweep's trial as a command step, whose log and metrics
// are read like any step's.
func trialStep(path string, t workflows.TrialState) workflows.StepState {
	st := workflows.StepState{Path: path, Type: plan.StepCommand, WorkflowID: t.WorkflowID, Started: t.Started,
		Ended: t.Ended, Error: t.Error, Outputs: t.Outputs, Status: workflows.StatusRunning}
	switch t.Status {
	case workflows.TrialCompleted:
		st.Status = workflows.StatusSucceeded
	case workflows.TrialFailed:
		st.Status = workflows.StatusFailed
	case workflows.TrialCanceled, workflows.TrialEarlyTerminated:
		st.Status = workflows.StatusCanceled
	}
	return st
}

// input resolves an input of the step at path to what it reads: a
// literal, a data URI, another step's output, or the enclosing
// pipeline's input (which may itself be bound further out).
func (s *server) input(ctx context.Context, g graph.Graph, steps map[string]workflows.StepState, path string, in graph.Port) portView {
	p := portView{Name: in.Name, Type: in.Type, Value: in.Value, From: in.From}
	switch in.Kind {
	case plan.ValueStepOutput:
		step, output, _ := strings.Cut(in.From, ".")
		if i := strings.LastIndex(path, "/"); i >= 0 {
			step = path[:i+1] + step
		}
		for _, o := range steps[step].Outputs {
			if o.Name == output {
				p.Value = o.URI
			}
		}
	case plan.ValueParentInput:
		name := strings.TrimPrefix(in.From, "parent.inputs.")
		inputs := g.Inputs
		parent := ""
		if i := strings.LastIndex(path, "/"); i >= 0 {
			parent = path[:i]
			node, _ := find(g, parent)
			inputs = node.Inputs
		}
		for _, x := range inputs {
			switch {
			case x.Name != name:
			case parent == "":
				p.Value = x.Value
			default:
				p.Value = s.input(ctx, g, steps, parent, x).Value
			}
		}
	}
	if in.Kind != plan.ValueLiteral {
		p.Local = s.local(ctx, p.Value)
	}
	return p
}

// find is the node at path.
func find(g graph.Graph, path string) (graph.Node, bool) {
	var out graph.Node
	found := false
	g.Walk(func(n graph.Node) {
		if n.Path == path {
			out, found = n, true
		}
	})
	return out, found
}

// local is where uri is on this host, "" when it is not a data URI or
// porch cannot say.
func (s *server) local(ctx context.Context, uri string) string {
	if s.opts.Files == nil || uri == "" || !strings.Contains(uri, "://") && !strings.HasPrefix(uri, "/") {
		return ""
	}
	return s.opts.Files.LocalPath(ctx, uri)
}

// logName is where a step's log is inside its artifacts: a command's
// std_log.txt, a parallel step's processed_mini-batches.csv (one row per
// attempt of a mini-batch), as porch job logs prints them.
func logName(t plan.StepType) string {
	switch t {
	case plan.StepCommand:
		return "user_logs/std_log.txt"
	case plan.StepParallel:
		return "logs/sys/job_report/processed_mini-batches.csv"
	}
	return ""
}

// metrics reads the metrics a step reported in its metrics file.
func (s *server) metrics(ctx context.Context, runID string, st workflows.StepState) []metricView {
	if s.opts.Files == nil {
		return nil
	}
	r, _, err := s.opts.Files.Open(ctx, runID, st, metrics.FileName, 0)
	if err != nil {
		return nil
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxMetricsBytes))
	if err != nil {
		return nil
	}
	recs, _ := metrics.Parse(data)
	series := metrics.Collect(recs)
	var out []metricView
	for _, r := range recs {
		if pts, ok := series[r.Key]; ok {
			out = append(out, metricView{Key: r.Key, Points: pts})
			delete(series, r.Key)
		}
	}
	return out
}
