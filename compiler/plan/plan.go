// Package plan is the serialisable form of a compiled pipeline: what the
// compiler produces and the DAG workflow interprets.
//
// A plan holds no maps that order work: steps are in topological order, ties
// broken by declaration order. Values that are only known at run time (where
// a step's outputs live, the run's name) are kept as references or templates
// and resolved by the workflow; local paths are resolved by the activity that
// runs on the worker.
package plan

import "sort"

// Version is the plan format version. A workflow refuses a plan whose version
// it does not know.
const Version = 1

// DefaultTaskQueue serves workflows and every step whose compute is
// serverless, local or unset.
const DefaultTaskQueue = "porch"

// NodeTaskQueue is the task queue only the worker called node polls: the
// resource monitor of a node runs there, and a command step that moved
// from a local activity is followed there.
func NodeTaskQueue(node string) string { return DefaultTaskQueue + "-node-" + node }

// DefaultDatastore is the datastore outputs land in when the pipeline names none.
const DefaultDatastore = "workspaceblobstore"

// TaskQueue returns the task queue that serves a compute target. The empty
// compute is the default queue.
func TaskQueue(compute string) string {
	if compute == "" {
		return DefaultTaskQueue
	}
	return DefaultTaskQueue + "-compute-" + compute
}

// InstanceTaskQueue returns the task queue that serves one instance type
// of a kubernetes compute: porch-compute-<compute>-<instance type>. Workers
// serving that type take its steps, each holding the type's requests.
func InstanceTaskQueue(compute, instanceType string) string {
	return TaskQueue(compute) + "-" + instanceType
}

// Plan is a compiled pipeline job.
type Plan struct {
	Version        int               `json:"version"`
	Name           string            `json:"name"`
	DisplayName    string            `json:"display_name,omitempty"`
	ExperimentName string            `json:"experiment_name,omitempty"`
	Description    string            `json:"description,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	// Source is the path of the YAML file the plan was compiled from.
	Source   string   `json:"source"`
	Settings Settings `json:"settings"`
	// Pipeline is the root graph. Its inputs are already resolved to
	// literals or data (no references).
	Pipeline Pipeline `json:"pipeline"`
}

// Settings are the pipeline-wide settings.
type Settings struct {
	// DefaultCompute is the normalised compute name ("" for the default queue).
	DefaultCompute        string `json:"default_compute,omitempty"`
	DefaultDatastore      string `json:"default_datastore"`
	ContinueOnStepFailure bool   `json:"continue_on_step_failure,omitempty"`
	ForceRerun            bool   `json:"force_rerun,omitempty"`
	// SubmittedBy is the user who submitted the run (user@host), set by
	// porch run, not the YAML; "" for a plan that was only compiled.
	SubmittedBy string `json:"submitted_by,omitempty"`
}

// Pipeline is one DAG: the root job or a pipeline component used as a step.
type Pipeline struct {
	// Inputs are the pipeline's inputs. For the root they hold resolved
	// values; for a nested pipeline they are declarations whose values come
	// from the step that uses it.
	Inputs  []Input  `json:"inputs,omitempty"`
	Outputs []Output `json:"outputs,omitempty"`
	// Steps are in topological order, ties broken by declaration order.
	Steps []Step `json:"steps"`
}

// Step is one node of a pipeline.
type Step struct {
	// Name is the step's key under jobs:.
	Name string `json:"name"`
	// Path is the step's path from the root, segments joined with "/"
	// ("train", "sub/train").
	Path        string   `json:"path"`
	Type        StepType `json:"type"`
	DisplayName string   `json:"display_name,omitempty"`
	// DependsOn names the sibling steps this one consumes outputs of,
	// sorted, without duplicates.
	DependsOn []string `json:"depends_on,omitempty"`
	// Compute is the normalised compute name ("" for the default queue).
	Compute string `json:"compute,omitempty"`
	// NotDeterministic is is_deterministic: false on the step or its
	// component: the step never reuses an earlier run's outputs.
	NotDeterministic bool `json:"not_deterministic,omitempty"`
	// Inputs bind every input the step declares, in declaration order.
	Inputs  []Input  `json:"inputs,omitempty"`
	Outputs []Output `json:"outputs,omitempty"`
	// Command is set for command steps.
	Command *Command `json:"command,omitempty"`
	// Pipeline is set for pipeline steps (a nested DAG).
	Pipeline *Pipeline `json:"pipeline,omitempty"`
	// Parallel is set for parallel steps.
	Parallel *Parallel `json:"parallel,omitempty"`
	// Sweep is set for sweep steps; their trial is Command or Pipeline.
	Sweep *Sweep `json:"sweep,omitempty"`
	Pos   Pos    `json:"pos"`
}

// StepType says how a step runs.
type StepType string

// Step types.
const (
	StepCommand  StepType = "command"
	StepPipeline StepType = "pipeline"
)

// Command is what a command step runs.
type Command struct {
	// Template is the command line with its ${{...}} and $[[...]] parts.
	Template Template `json:"template"`
	// Code is the absolute path of the folder (or file) copied into the
	// working folder, "" for none. A submitted plan may name the code's
	// snapshot on a datastore instead (azureml://datastores/<ds>/paths/
	// LocalUpload/<hash>/<name>/, see activities/codesnapshot).
	Code string `json:"code,omitempty"`
	// Environment describes the environment as written (a reference, an
	// image, a conda file), one line for display.
	Environment string `json:"environment,omitempty"`
	// Env is the environment the step runs in, resolved; nil runs it on
	// the worker's host (no environment:, or a plan recorded before
	// porch ran environments).
	Env                  *Environment      `json:"environment_spec,omitempty"`
	EnvironmentVariables map[string]string `json:"environment_variables,omitempty"`
	// TimeoutSeconds is limits.timeout; 0 means none.
	TimeoutSeconds int           `json:"timeout_seconds,omitempty"`
	Resources      Resources     `json:"resources"`
	Distribution   *Distribution `json:"distribution,omitempty"`
	// Identity is the job's identity type (JobIdentityUser, ...), the
	// step's own or else its pipeline's; "" for none.
	Identity string `json:"identity,omitempty"`
}

// Resources is the step's resources: section.
type Resources struct {
	InstanceCount int    `json:"instance_count,omitempty"`
	InstanceType  string `json:"instance_type,omitempty"`
	ShmSize       string `json:"shm_size,omitempty"`
	// Size is the VM size of the step's compute and Cores the cores of one
	// instance, resolved from the registered compute and instance type
	// when the pipeline is submitted; 0 cores when unknown, and then no
	// quota applies to the step.
	Size  string `json:"size,omitempty"`
	Cores int    `json:"cores,omitempty"`
	// TaskQueue is the task queue of the step's instance type on a
	// registered kubernetes compute (InstanceTaskQueue), resolved when the
	// pipeline is submitted, or the default queue for a step of an
	// unregistered compute on a porch dev server; "" means the compute's
	// own queue.
	TaskQueue string `json:"task_queue,omitempty"`
	// Serverless is set for a serverless step whose instance type porch
	// picks when it runs, from the live workers' (see ServerlessFor);
	// nil for every other step.
	Serverless *Serverless `json:"serverless,omitempty"`
	// JobTier is queue_settings.job_tier in lower case ("" for none);
	// LowPriority says the step's compute is a low_priority amlcompute,
	// resolved when the pipeline is submitted. Either TierSpot or a low
	// priority compute makes the step preemptible (Spot).
	JobTier     string `json:"job_tier,omitempty"`
	LowPriority bool   `json:"low_priority,omitempty"`
}

// Instances is the step's instance count: at least 1.
func (r Resources) Instances() int { return max(r.InstanceCount, 1) }

// Queue is the task queue the step's activities run on: its instance
// type's queue when the compiler resolved one, else the compute's.
func (r Resources) Queue(compute string) string {
	if r.TaskQueue != "" {
		return r.TaskQueue
	}
	return TaskQueue(compute)
}

// OnInstanceType says whether the step runs on an instance type's queue,
// whose workers count capacity: a task queue was resolved for it, and it
// is not the default queue (where a porch dev server runs the steps of
// unregistered computes).
func (r Resources) OnInstanceType() bool {
	return r.TaskQueue != "" && r.TaskQueue != DefaultTaskQueue
}

// Distribution is a distributed-training configuration.
type Distribution struct {
	// Type is pytorch, mpi or tensorflow.
	Type string `json:"type"`
	// ProcessCountPerInstance is pytorch's process_count_per_instance or
	// mpi's process_count_per_instance; 0 means 1.
	ProcessCountPerInstance int `json:"process_count_per_instance,omitempty"`
	// WorkerCount and ParameterServerCount are tensorflow's.
	WorkerCount          int `json:"worker_count,omitempty"`
	ParameterServerCount int `json:"parameter_server_count,omitempty"`
}

// ValueKind says where an input's value comes from.
type ValueKind string

// Value kinds.
const (
	// ValueNone is an optional input left unset.
	ValueNone ValueKind = "none"
	// ValueLiteral is a string, integer, number or boolean.
	ValueLiteral ValueKind = "literal"
	// ValueData is a data location (uri_file, uri_folder, mltable, models).
	ValueData ValueKind = "data"
	// ValueStepOutput is an output of a sibling step.
	ValueStepOutput ValueKind = "step_output"
	// ValueParentInput is an input of the enclosing pipeline.
	ValueParentInput ValueKind = "parent_input"
)

// Input is an input declaration together with its bound value.
type Input struct {
	Name string `json:"name"`
	// Type is string, integer, number, boolean, uri_file, uri_folder,
	// mltable, custom_model, mlflow_model, ...
	Type     string `json:"type"`
	Optional bool   `json:"optional,omitempty"`
	Value    Value  `json:"value"`
	// Mode is how the step reads a data input, as the step's binding says
	// (ro_mount, download, direct, eval_mount, eval_download); "" when the
	// binding names none: the data's own input mode then, else ro_mount.
	// A binding to another step's output keeps its mode only here.
	Mode string `json:"mode,omitempty"`
	Pos  Pos    `json:"pos"`
}

// Value is a bound value.
type Value struct {
	Kind ValueKind `json:"kind"`
	// Literal is the literal as the author wrote it ("1e-3", "False"); it is
	// rendered into commands unchanged.
	Literal string `json:"literal,omitempty"`
	// Data is the location of a data value.
	Data *Data `json:"data,omitempty"`
	// Step and Output name a sibling step's output (ValueStepOutput).
	Step   string `json:"step,omitempty"`
	Output string `json:"output,omitempty"`
	// Input names the enclosing pipeline's input (ValueParentInput).
	Input string `json:"input,omitempty"`
}

// Data is a data location.
type Data struct {
	Type string `json:"type"`
	// Path is a URI (azureml://datastores/<ds>/paths/<p>, file://...) or an
	// absolute local path.
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"`
}

// Output is an output declaration.
type Output struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Mode string `json:"mode,omitempty"`
	// Path is where the output goes, as a template that may hold ${{name}}
	// (the run's id) and ${{default_datastore}}; "" means the default
	// location azureml://datastores/<default>/paths/azureml/<run>/<step path>/<output>/.
	Path string `json:"path,omitempty"`
	// Parent names the enclosing pipeline's output this step output is
	// bound to, "" for none.
	Parent string `json:"parent,omitempty"`
	// Step and StepOutput, on a pipeline's own outputs, name the step
	// output that produces it.
	Step       string `json:"step,omitempty"`
	StepOutput string `json:"step_output,omitempty"`
	Pos        Pos    `json:"pos"`
}

// ArtifactsOutput is the reserved output every step has: its working folder,
// which holds ./outputs and ./logs.
const ArtifactsOutput = "artifacts"

// Pos is a position in a source file.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// DatastoreURI returns the URI of a path inside a datastore.
func DatastoreURI(datastore, path string) string {
	return "azureml://datastores/" + datastore + "/paths/" + path
}

// DefaultOutputURI is where a step output without a path goes: a folder
// azureml/<run>/<step path>/<output>/ in the datastore.
func DefaultOutputURI(datastore, runID, stepPath, output string) string {
	return DatastoreURI(datastore, "azureml/"+runID+"/"+stepPath+"/"+output+"/")
}

// Computes returns the computes the plan's command steps run on, nested
// pipelines included, sorted, without duplicates; "" is the default queue.
func (p *Plan) Computes() []string {
	seen := map[string]bool{}
	var walk func(pl Pipeline)
	walk = func(pl Pipeline) {
		for _, s := range pl.Steps {
			if s.Pipeline != nil {
				walk(*s.Pipeline)
				continue
			}
			seen[s.Compute] = true
		}
	}
	walk(p.Pipeline)
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// ComputeQueue is a task queue a plan's steps run on and their compute.
type ComputeQueue struct {
	Compute string
	Queue   string
}

// TaskQueues returns the task queues the plan's command, parallel and
// sweep steps run on, nested pipelines included, sorted by queue, without
// duplicates.
func (p *Plan) TaskQueues() []ComputeQueue {
	seen := map[ComputeQueue]bool{}
	var walk func(pl Pipeline)
	walk = func(pl Pipeline) {
		for _, s := range pl.Steps {
			switch {
			case s.Command != nil:
				seen[ComputeQueue{s.Compute, s.Command.Resources.Queue(s.Compute)}] = true
			case s.Parallel != nil:
				seen[ComputeQueue{s.Compute, s.Parallel.Resources.Queue(s.Compute)}] = true
			}
			if s.Pipeline != nil {
				walk(*s.Pipeline)
			}
		}
	}
	walk(p.Pipeline)
	out := make([]ComputeQueue, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out
}
