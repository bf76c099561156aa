// Package graph is a pipeline's DAG as people look at it: its steps as
// nodes, nested pipelines inside their step, and an edge for every step
// output another step reads, labelled "output → input". It is built from a
// plan (Of), answered by the Pipeline workflow's graph query, drawn by
// porch's web page (a large one from its layers, LayersOf), and printed as
// Mermaid or Graphviz DOT text, with a run's statuses when there is a run
// (Mermaid, DOT).
//
// The package is pure: a plan in, values and text out.
package graph

import (
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Graph is one pipeline's DAG: the root job's, or a nested pipeline's.
type Graph struct {
	// Inputs are the pipeline's inputs: values for the root, the
	// declarations a nested pipeline's step binds.
	Inputs []Port `json:"inputs,omitempty"`
	// Outputs are the pipeline's outputs, each naming the step output
	// that produces it in From.
	Outputs []Port `json:"outputs,omitempty"`
	// Nodes are the steps in plan order: topological, ties by declaration.
	Nodes []Node `json:"nodes"`
	// Edges run between sibling steps only: an edge into a nested
	// pipeline ends at its step, and one out of it starts there.
	Edges []Edge `json:"edges,omitempty"`
}

// Node is one step.
type Node struct {
	// Path is the step's path from the root ("train", "sub/train"): the
	// path the steps query reports, and the step workflow id's suffix.
	Path        string        `json:"path"`
	Name        string        `json:"name"`
	DisplayName string        `json:"display_name,omitempty"`
	Type        plan.StepType `json:"type"`
	// Compute is the step's compute, "" for the default queue; Queue is
	// the task queue its work waits on ("" for a nested pipeline). A
	// serverless step's is the default queue, whose workers serve every
	// serverless instance type they fit.
	Compute     string `json:"compute,omitempty"`
	Queue       string `json:"queue,omitempty"`
	Environment string `json:"environment,omitempty"`
	// Command is a command step's command (a sweep's trial's), as written.
	Command string `json:"command,omitempty"`
	// Inputs are the step's inputs with what each is bound to.
	Inputs  []Port `json:"inputs,omitempty"`
	Outputs []Port `json:"outputs,omitempty"`
	// Sweep is set on sweep steps: what the trials are compared on.
	Sweep *Sweep `json:"sweep,omitempty"`
	// Pipeline is a nested pipeline step's own graph.
	Pipeline *Graph `json:"pipeline,omitempty"`
}

// Port is an input or output of a step or pipeline.
type Port struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Kind says where an input's value comes from (plan.ValueKind);
	// outputs have none.
	Kind plan.ValueKind `json:"kind,omitempty"`
	// Value is a literal or a data path, or an output's path as written
	// ("" for the default location).
	Value string `json:"value,omitempty"`
	// From names what an input is bound to: "step.output" for another
	// step's output, "parent.inputs.x" for the pipeline's input; on a
	// pipeline's output, the step output that produces it.
	From string `json:"from,omitempty"`
}

// Sweep is what a sweep step optimises.
type Sweep struct {
	Metric    string `json:"metric"`
	Goal      string `json:"goal"`
	MaxTrials int    `json:"max_trials"`
}

// Edge is a step output that another step reads.
type Edge struct {
	From   string `json:"from"`
	Output string `json:"output"`
	To     string `json:"to"`
	Input  string `json:"input"`
}

// Label is the edge's label: "output → input", or one name when both are
// the same.
func (e Edge) Label() string {
	if e.Output == e.Input {
		return e.Output
	}
	return e.Output + " → " + e.Input
}

// Of is the graph of a pipeline.
func Of(p plan.Pipeline) Graph {
	g := Graph{Nodes: make([]Node, 0, len(p.Steps))}
	for _, in := range p.Inputs {
		g.Inputs = append(g.Inputs, inputPort(in))
	}
	for _, o := range p.Outputs {
		g.Outputs = append(g.Outputs, Port{Name: o.Name, Type: o.Type, Value: o.Path, From: joinNonEmpty(o.Step, o.StepOutput)})
	}
	paths := map[string]string{}
	for _, s := range p.Steps {
		paths[s.Name] = s.Path
	}
	for _, s := range p.Steps {
		g.Nodes = append(g.Nodes, node(s))
		for _, in := range s.Inputs {
			if in.Value.Kind != plan.ValueStepOutput || paths[in.Value.Step] == "" {
				continue
			}
			g.Edges = append(g.Edges, Edge{From: paths[in.Value.Step], Output: in.Value.Output, To: s.Path, Input: in.Name})
		}
	}
	return g
}

func node(s plan.Step) Node {
	n := Node{Path: s.Path, Name: s.Name, DisplayName: s.DisplayName, Type: s.Type, Compute: s.Compute}
	for _, in := range s.Inputs {
		n.Inputs = append(n.Inputs, inputPort(in))
	}
	for _, o := range s.Outputs {
		n.Outputs = append(n.Outputs, Port{Name: o.Name, Type: o.Type, Value: o.Path})
	}
	if s.Command != nil {
		n.Command = s.Command.Template.Source
		n.Environment = s.Command.Environment
		n.Queue = queue(s.Compute, s.Command.Resources)
	}
	if s.Parallel != nil {
		n.Environment = s.Parallel.Task.Environment
		n.Command = strings.TrimSpace("entry script " + s.Parallel.Task.EntryScript + " " + s.Parallel.Task.ProgramArguments.Source)
		n.Queue = queue(s.Compute, s.Parallel.Resources)
	}
	if s.Sweep != nil {
		n.Sweep = &Sweep{Metric: s.Sweep.Objective.PrimaryMetric, Goal: s.Sweep.Objective.Goal, MaxTrials: s.Sweep.Limits.MaxTotalTrials}
	}
	if s.Pipeline != nil && s.Type == plan.StepPipeline {
		sub := Of(*s.Pipeline)
		n.Pipeline = &sub
	}
	return n
}

func queue(compute string, r plan.Resources) string {
	if r.Serverless != nil {
		return plan.DefaultTaskQueue
	}
	return r.Queue(compute)
}

func inputPort(in plan.Input) Port {
	p := Port{Name: in.Name, Type: in.Type, Kind: in.Value.Kind}
	switch in.Value.Kind {
	case plan.ValueLiteral:
		p.Value = in.Value.Literal
	case plan.ValueData:
		if in.Value.Data != nil {
			p.Value = in.Value.Data.Path
		}
	case plan.ValueStepOutput:
		p.From = in.Value.Step + "." + in.Value.Output
	case plan.ValueParentInput:
		p.From = "parent.inputs." + in.Value.Input
	}
	return p
}

func joinNonEmpty(a, b string) string {
	if a == "" || b == "" {
		return ""
	}
	return a + "." + b
}

// Walk calls fn for every node of g and of its nested pipelines, each
// nested pipeline's nodes right after its own.
func (g Graph) Walk(fn func(Node)) {
	for _, n := range g.Nodes {
		fn(n)
		if n.Pipeline != nil {
			n.Pipeline.Walk(fn)
		}
	}
}

// Len is the number of nodes of g, nested pipelines' included.
func (g Graph) Len() int {
	n := 0
	g.Walk(func(Node) { n++ })
	return n
}
