package webui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/workflows"
)

// stepView is a step as the DAG draws it: its status and what its node
// shows, polled while the run runs.
type stepView struct {
	Path       string       `json:"path"`
	Status     graph.Status `json:"status"`
	Attempt    int32        `json:"attempt,omitempty"`
	Started    *time.Time   `json:"started,omitempty"`
	Ended      *time.Time   `json:"ended,omitempty"`
	Detail     string       `json:"detail,omitempty"`
	Error      string       `json:"error,omitempty"`
	WorkflowID string       `json:"workflow_id,omitempty"`
	Link       string       `json:"link,omitempty"`
}

// runState is a run and its steps, what the page polls.
type runState struct {
	Run   runView    `json:"run"`
	Steps []stepView `json:"steps"`
}

// contextFor bounds a request's Temporal calls: each is bounded by
// queryTimeout, and a large run's steps take a call a page.
func contextFor(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), requestTimeout)
}

// requestTimeout bounds a request: a run of 10,000 steps that ended is
// read in about 25 pages, each a replay of its history on a worker.
const requestTimeout = time.Minute

// run answers a run's DAG and its steps' state: what the page needs to
// draw it.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := contextFor(r)
	defer cancel()
	id := r.PathValue("run")
	g, st, what, err := s.read(ctx, id)
	if err != nil {
		s.runError(w, id, err, what)
		return
	}
	writeJSON(w, struct {
		runState
		Graph  graph.Graph   `json:"graph"`
		Layers *graph.Layers `json:"layers,omitempty"`
	}{st, g.Graph, g.layers})
}

// steps answers a run's steps' state, polled while the page shows it.
func (s *server) steps(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := contextFor(r)
	defer cancel()
	id := r.PathValue("run")
	_, st, what, err := s.read(ctx, id)
	if err != nil {
		s.runError(w, id, err, what)
		return
	}
	writeJSON(w, st)
}

func (s *server) runError(w http.ResponseWriter, id string, err error, what string) {
	if notFound(err) {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no run %q in namespace %s", id, s.opts.Namespace))
		return
	}
	apiError(w, http.StatusBadGateway, fmt.Sprintf("run %s: %s: %v: porch reads it through a query, which a worker "+
		"running porch's workflows (of this version or later) answers", id, what, err))
}

// runGraph is a run's DAG, and for a large one its layers.
type runGraph struct {
	graph.Graph
	layers *graph.Layers
}

// largeGraph is the number of steps (nested pipelines' included) above
// which the page draws a run's graph from its layers with its nested
// pipelines collapsed: elkjs takes seconds to lay out 500 steps in the
// browser, LayersOf about a millisecond.
const largeGraph = 150

// graph reads a run's DAG from its plan (workflows.RunGraph), once: a run's DAG never changes, and every poll needs it. A large one's
// layers are placed then too.
func (s *server) graph(ctx context.Context, id string) (runGraph, error) {
	s.mu.Lock()
	g, ok := s.graphs[id]
	s.mu.Unlock()
	if ok {
		return g, nil
	}
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var err error
	if g.Graph, err = workflows.RunGraph(qctx, s.opts.Client, id); err != nil {
		return g, err
	}
	if g.Len() > largeGraph {
		l := graph.LayersOf(g.Graph)
		g.layers = &l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.graphs) >= maxGraphs {
		clear(s.graphs)
	}
	s.graphs[id] = g
	return g, nil
}

// maxGraphs bounds the runs' graphs the page keeps.
const maxGraphs = 100

// query asks a workflow a query and decodes its answer into out.
func query(ctx context.Context, c client.Client, id, name string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, id, "", name)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// read asks for a run's graph, its record and its steps at once. On
// error it says what it was reading.
func (s *server) read(ctx context.Context, id string) (runGraph, runState, string, error) {
	var (
		desc *workflowservice.DescribeWorkflowExecutionResponse
		dErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		desc, dErr = s.opts.Client.DescribeWorkflowExecution(ctx, id, "")
	}()
	g, steps, what, err := s.graphAndSteps(ctx, id)
	<-done
	if err != nil {
		return g, runState{}, what, err
	}
	if dErr != nil {
		return g, runState{}, "read its steps", dErr
	}
	return g, s.state(ctx, g.Graph, desc.GetWorkflowExecutionInfo(), steps), "", nil
}

// graphAndSteps asks for a run's graph and its steps (nested pipelines'
// included) at once: each is a query, a round trip to the server and the
// run's worker. On error it says what it was reading.
func (s *server) graphAndSteps(ctx context.Context, id string) (runGraph, []workflows.StepState, string, error) {
	var (
		g    runGraph
		gErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g, gErr = s.graph(ctx, id)
	}()
	steps, err := s.snapshot(ctx, id)
	<-done
	if gErr != nil {
		return g, nil, "read its graph", gErr
	}
	if err != nil {
		return g, nil, "read its steps", err
	}
	return g, steps, "", nil
}

// state is a run's record and its steps as the page shows them.
func (s *server) state(ctx context.Context, g graph.Graph, info *workflowpb.WorkflowExecutionInfo, steps []workflows.StepState) runState {
	queues := map[string]string{}
	g.Walk(func(n graph.Node) { queues[n.Path] = n.Queue })
	out := runState{Run: s.runOf(info), Steps: make([]stepView, 0, len(steps))}
	for _, st := range steps {
		v := s.view(st)
		switch {
		case st.Status == workflows.StatusRunning && s.queues.idle(ctx, queues[st.Path]):
			v.Status = graph.Waiting
			v.Detail = strings.TrimPrefix(v.Detail+"; no worker polls task queue "+queues[st.Path], "; ")
		case !finished(st.Status) && info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
			// A run terminated from Temporal answers as it was then.
			v.Status, v.Error = graph.Canceled, "the run ended "+out.Run.Status
		}
		out.Steps = append(out.Steps, v)
	}
	return out
}

func (s *server) view(st workflows.StepState) stepView {
	v := stepView{Path: st.Path, Status: graph.StatusOf(string(st.Status)), Attempt: st.Attempt, Detail: st.Detail,
		Error: st.Error, WorkflowID: st.WorkflowID}
	if !st.Started.IsZero() {
		v.Started = &st.Started
	}
	if !st.Ended.IsZero() {
		v.Ended = &st.Ended
	}
	// A step that never started has a workflow id but no workflow.
	if st.Status != workflows.StatusWaiting && st.Status != workflows.StatusSkipped {
		v.Link = s.workflowLink(st.WorkflowID)
	}
	return v
}

// finished says whether a step status is final.
func finished(s workflows.StepStatus) bool {
	switch s {
	case workflows.StatusSucceeded, workflows.StatusFailed, workflows.StatusSkipped, workflows.StatusCanceled, workflows.StatusReused:
		return true
	}
	return false
}

// snapshot is every step of the pipeline workflow id, each nested
// pipeline's right after its own. A nested pipeline that finished is
// asked once.
func (s *server) snapshot(ctx context.Context, id string) ([]workflows.StepState, error) {
	steps, err := workflows.QuerySteps(ctx, s.opts.Client, id, queryTimeout)
	if err != nil {
		return nil, err
	}
	out := make([]workflows.StepState, 0, len(steps))
	for _, st := range steps {
		out = append(out, st)
		if st.Type != plan.StepPipeline || st.Status == workflows.StatusWaiting || st.Status == workflows.StatusSkipped ||
			st.Status == workflows.StatusReused {
			continue
		}
		if sub, ok := s.nested.get(st.WorkflowID); ok {
			out = append(out, sub...)
			continue
		}
		// A nested pipeline about to start answers nothing yet.
		sub, err := s.snapshot(ctx, st.WorkflowID)
		if err != nil {
			continue
		}
		if finished(st.Status) {
			s.nested.put(st.WorkflowID, sub)
		}
		out = append(out, sub...)
	}
	return out, nil
}

// nestedCache keeps the steps of nested pipelines that finished: they no
// longer change. It keeps at most maxNested.
type nestedCache struct {
	mu    sync.Mutex
	steps map[string][]workflows.StepState
}

const maxNested = 1000

func newNestedCache() *nestedCache {
	return &nestedCache{steps: map[string][]workflows.StepState{}}
}

func (c *nestedCache) get(id string) ([]workflows.StepState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.steps[id]
	return s, ok
}

func (c *nestedCache) put(id string, steps []workflows.StepState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.steps) >= maxNested {
		clear(c.steps)
	}
	c.steps[id] = steps
}

// queueCache says which task queues no worker polls, asking the server
// about each queue at most once per queueCheckEvery.
type queueCache struct {
	c     client.Client
	mu    sync.Mutex
	known map[string]queueCheck
}

type queueCheck struct {
	at   time.Time
	idle bool
}

const queueCheckEvery = 5 * time.Second

func newQueueCache(c client.Client) *queueCache {
	return &queueCache{c: c, known: map[string]queueCheck{}}
}

// idle says whether no worker polls queue's activities ("" is never idle:
// a nested pipeline's work is its steps').
func (q *queueCache) idle(ctx context.Context, queue string) bool {
	if queue == "" {
		return false
	}
	q.mu.Lock()
	k, ok := q.known[queue]
	q.mu.Unlock()
	if ok && time.Since(k.at) < queueCheckEvery {
		return k.idle
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	resp, err := q.c.DescribeTaskQueue(ctx, queue, enums.TASK_QUEUE_TYPE_ACTIVITY)
	// When the server cannot say, the step is not called idle.
	idle := err == nil && len(resp.GetPollers()) == 0
	q.mu.Lock()
	q.known[queue] = queueCheck{at: time.Now(), idle: idle}
	q.mu.Unlock()
	return idle
}
