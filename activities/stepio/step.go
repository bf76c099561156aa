package stepio

import "github.com/porch-pipelines/porch/compiler/plan"

// Step is one step as the workflow resolved it: what names its folders and
// binds its command's inputs and outputs. It carries references (URIs,
// paths), never data.
type Step struct {
	// RunID is the root run's id; StepPath the step's path ("train",
	// "sub/train"). Together they name the step's folders.
	RunID    string `json:"run_id"`
	StepPath string `json:"step_path"`
	// DefaultDatastore is the pipeline's default datastore name.
	DefaultDatastore string       `json:"default_datastore"`
	Command          plan.Command `json:"command"`
	// Inputs are the step's inputs with values resolved by the workflow:
	// ValueLiteral, ValueData (a URI or absolute path) or ValueNone.
	Inputs []plan.Input `json:"inputs,omitempty"`
	// Outputs are the step's outputs; Path is a resolved URI (no ${{...}}).
	Outputs []plan.Output `json:"outputs,omitempty"`
	// SubmittedBy is the user who submitted the run (user@host).
	SubmittedBy string `json:"submitted_by,omitempty"`
}
