package compiler

import "github.com/porch-pipelines/porch/compiler/plan"

// The AST keeps what the YAML says, with positions, before any checking.
// Components are shared: a component file used by several steps is parsed
// once and checked once.

// pipelineAST is a pipeline: the root job, a pipeline component file, or the
// body of a pipeline component used as a step.
type pipelineAST struct {
	File string
	// Dir is the absolute folder of File; relative paths resolve against it.
	Dir            string
	Pos            plan.Pos
	Name           *scalarAST
	DisplayName    *scalarAST
	ExperimentName *scalarAST
	Description    *scalarAST
	Tags           map[string]string
	Compute        *scalarAST
	// Identity is the job's identity type, the default of its steps.
	Identity *scalarAST
	Settings settingsAST
	Inputs   []*inputAST
	Outputs  []*outputAST
	Steps    []*stepAST
	// Component is set for a batch-endpoint style job: a top-level
	// pipeline component and no jobs.
	Component *componentAST
	// ComponentPos is where the top-level component: is named.
	ComponentPos plan.Pos
	// NotDeterministic is is_deterministic: false on the pipeline job or
	// component: none of its steps, however deeply nested, is reused.
	NotDeterministic bool

	// order is Steps in topological order, filled by the graph phase.
	order []*stepAST
	// checked is set once the check phase has run over this pipeline.
	checked bool
}

// settingsAST is a pipeline's settings: section.
type settingsAST struct {
	DefaultCompute        *scalarAST
	DefaultDatastore      *scalarAST
	ContinueOnStepFailure bool
	ForceRerun            bool
	// OnInit and OnFinalize name the setup and teardown steps, which
	// porch refuses.
	OnInit, OnFinalize *scalarAST
}

// scalarAST is a scalar as written, with its YAML tag (!!str, !!int, ...).
type scalarAST struct {
	Value string
	Tag   string
	Pos   plan.Pos
	// Quoted and Block say how it was written, to place columns inside it.
	Quoted, Block bool
	// Inline says the value is on one line of its file (neither a block
	// scalar nor spread over lines), so an offset into it is a column. It
	// is worked out once, as posAt runs for every reference in the value.
	Inline bool
}

// inputAST is an input: a declaration (components), a value (the root job)
// or a binding (steps), or several of these at once.
type inputAST struct {
	Name string
	// Pos is the key's position.
	Pos plan.Pos
	// Type is the declared type, "" when the YAML gives none.
	Type     string
	TypePos  plan.Pos
	Optional bool
	Default  *scalarAST
	Min, Max *scalarAST
	Enum     []*scalarAST
	// Value is the bound value, nil when unset.
	Value *valueAST
}

// valueAST is a value given to an input: a literal, a binding, or data.
type valueAST struct {
	Pos plan.Pos
	Lit *scalarAST
	Ref *refAST
	// Path is a data location (with Type and Mode).
	Path *scalarAST
	Mode string
	// Type is the type written next to the value, "" for none.
	Type string
	// Asset is the registered data asset or model Path names, nil for none.
	Asset *plan.Asset
}

// outputAST is an output declaration or binding.
type outputAST struct {
	Name string
	Pos  plan.Pos
	Type string
	Mode string
	Path *scalarAST
	// Ref binds the output: ${{parent.outputs.x}} on a step output,
	// ${{parent.jobs.s.outputs.y}} on a pipeline output.
	Ref *refAST
}

// refKind says what a ${{parent...}} binding points at.
type refKind int

const (
	refParentInput refKind = iota
	refParentOutput
	refStepOutput
	refStepInput
)

// refAST is a binding like ${{parent.jobs.s.outputs.y}}.
type refAST struct {
	Kind refKind
	// Step is the sibling step for refStepOutput and refStepInput.
	Step string
	Name string
	Text string
	Pos  plan.Pos
}

// stepAST is one entry of jobs:.
type stepAST struct {
	Name        string
	Pos         plan.Pos
	Type        plan.StepType
	DisplayName string
	Compute     *scalarAST
	// Identity is the step's identity type, nil for its pipeline's.
	Identity *scalarAST
	Inputs   []*inputAST
	Outputs  []*outputAST
	// Component is what the step runs: a loaded component, or for an
	// inline command step a component made from the step itself.
	Component *componentAST
	// Over holds the step's overrides of a component's run settings.
	Over commandAST
	// Par holds a parallel step's overrides of its component's settings.
	Par *parallelAST
	// par is the parallel step's settings, component and overrides
	// merged, filled by the check phase.
	par *parallelAST
	// Sweep holds a sweep step's settings; Component is then its trial.
	Sweep *sweepAST
	// Tier is queue_settings.job_tier in lower case, "" for none.
	Tier string
	// NotDeterministic is the step's is_deterministic: false.
	NotDeterministic bool
	// index is the declaration order.
	index int
	// deps are the sibling steps this one consumes outputs of, filled by
	// the check phase.
	deps []string
}

// componentAST is a command, parallel or pipeline component.
type componentAST struct {
	File string
	Dir  string
	Pos  plan.Pos
	Type plan.StepType
	// Inline is set for a command step without component: its inputs are
	// inferred from the step's own bindings.
	Inline      bool
	DisplayName string
	// NotDeterministic is is_deterministic: false.
	NotDeterministic bool
	Inputs           []*inputAST
	Outputs          []*outputAST
	Command          commandAST
	Pipeline         *pipelineAST
	// Parallel is set for parallel components and inline parallel steps.
	Parallel *parallelAST
	// SweepJob marks the trial of a standalone sweep job: its inputs are
	// the job's and the search space's, and its command is checked by
	// checkSweep, which knows the ${{search_space.x}} references.
	SweepJob bool
}

// commandAST is how a command runs. Zero fields mean "not given".
type commandAST struct {
	Command  *scalarAST
	Template plan.Template
	// RefPos are the positions of Template's references, in the order
	// walkRefs visits them.
	RefPos      []plan.Pos
	Code        string
	Environment string
	Env         *plan.Environment
	EnvVars     map[string]string
	Timeout     int
	Resources   *plan.Resources
	Dist        *plan.Distribution
	// SearchRefs are, for a standalone sweep trial, the positions of the
	// template's references written as ${{search_space.x}} or
	// {search_space.x}, by the parameter they name.
	SearchRefs []searchRef
}
