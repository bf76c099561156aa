// Package compiler turns an Azure Machine Learning CLI v2 pipeline job YAML,
// with the component files it references, into a *plan.Plan that porch's
// workflows run, or into diagnostics that name file:line:col and say what to
// do.
//
// The compiler is pure: its only I/O is Options.ReadFile, by default
// regular files only, each within Limits.MaxFileBytes. Options.Limits bound
// the YAML nodes it decodes and what it builds as it expands pipeline
// components and YAML aliases, and
// CompileContext stops it when its context is done. It runs in phases,
// each collecting all its problems and stopping compilation when one is an
// error: parse (YAML to an AST with positions; syntax, tabs, duplicate and
// unknown keys, unsupported step types, unresolvable references), check
// (bindings, types, required inputs, command references), graph (cycles and
// topological order) and lower (AST to plan; root inputs, --set overrides,
// compute).
//
// # The plan contract
//
// A plan returned without errors guarantees:
//
//   - Plan.Name is safe as a Temporal workflow id prefix: lower-case letters,
//     digits, '-' and '_', at most 40 characters. It comes from name:, else
//     display_name:, else the file's base name.
//   - Steps of every pipeline are in topological order, ties broken by
//     declaration order. Step.DependsOn lists the sibling steps whose outputs
//     the step consumes, sorted and unique, and every name in it is earlier in
//     the list. There are no cycles.
//   - Step.Inputs bind every input the step declares (its component's, or the
//     ones an inline command step binds), in declaration order. A value is
//     ValueLiteral (the literal as written: "1e-3" stays "1e-3", "False"
//     stays "False", of the declared type; outside min, max or enum, or a
//     fractional number for an integer, it is a warning, as Azure ML's
//     client lets it through),
//     ValueData (an absolute local path, or a URI kept as written),
//     ValueStepOutput (a sibling step and one of its outputs, possibly the
//     reserved plan.ArtifactsOutput), ValueParentInput (an input of the
//     enclosing pipeline, for the root and nested pipelines alike) or ValueNone
//     (an optional input left unset). ${{parent.jobs.s.inputs.y}} is replaced
//     by what s's input y is bound to.
//   - Data written as azureml:<name>:<version>, azureml:<name>@latest or
//     azureml:<name>:latest (a path:, a --set value, or a bare value bound
//     to a data input) is the Options.Catalog asset's Path, kept as
//     registered; latest is the version registered last. Its Data.Type is
//     the input's declared type, which the asset's type fits (the same; an
//     mltable for a uri_folder; a uri_file or uri_folder for a model), else
//     the asset's. A component: written that way is the registered
//     ComponentAsset.Source compiled as the file <Dir>/<name>.yml, so its
//     relative paths resolve against Dir and its diagnostics name that file.
//     Registry references (azureml://registries/...) are refused.
//   - Step names (keys of jobs:) match ^[a-z_][a-z0-9_]*$, input and output
//     names ^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$ with no two
//     of one mapping equal but for case, as Azure ML requires: a step's
//     Path is its names joined by "/", none empty, "." or "..".
//   - The root Pipeline.Inputs are resolved: --set overrides applied,
//     defaults taken, no references. A nested Pipeline.Inputs are
//     declarations; their values come from the step that uses the pipeline.
//     A pipeline component used by several steps gives each its own nested
//     plan.Pipeline.
//   - Every ${{inputs.x}} and ${{outputs.x}} of a command template names a
//     declared input or output; $[[...]] groups are plan.Part.Optional. A
//     parameter group's member is an input declared flat, as Azure ML
//     flattens it ("group.x"): ${{inputs.group.x}} and
//     ${{parent.inputs.group.x}} name it.
//   - Distribution.Type is pytorch, mpi or tensorflow, in lower case
//     whatever the YAML's case.
//   - Compute names are normalised ("azureml:cpu-cluster" and an ARM id
//     ending in /computes/cpu-cluster are "cpu-cluster"; serverless, local
//     and unset are ""), resolved at compile time when written as
//     ${{parent.inputs.c}}, and a step without one falls back to the
//     enclosing pipeline step's compute, then settings.default_compute. A
//     step's own serverless or local is "", whatever the default compute. When Options.Catalog
//     has computes registered, a literal compute name must be one of them,
//     and resources.instance_type an applied instance type (or
//     defaultinstancetype); without registered computes any name is a task
//     queue.
//   - Output paths are "" (the default location) or datastore URIs,
//     azureml://datastores/<name>/paths/<path>, whose path has no ".."
//     segment, plain or percent-encoded; settings.default_datastore is a
//     datastore name. They hold no ${{...}} but exactly ${{name}} and
//     ${{default_datastore}}, which the workflow substitutes. A step output
//     bound to a pipeline output records it in Output.Parent and takes its
//     type, mode and path; the pipeline output names the producer in
//     Output.Step and Output.StepOutput.
//   - Command.Code is an absolute path; Command.Environment is a one-line
//     description of the environment as written (never an error: porch runs
//     on the worker's host).
//   - A parallel step (Step.Type plan.StepParallel) has Step.Parallel and no
//     Command. Parallel.InputData names one of the step's inputs, of type
//     uri_folder, uri_file or mltable; PartitionKeys are only set with
//     mltable. MiniBatchSize is as written and matches ^\d+([kKmMgG][bB])?$
//     (or is "" for the default). Task.Code is absolute and Task.EntryScript,
//     relative to it, named a readable file at compile time. Every default
//     is filled (instance_count 1, max_retries 2, timeout 60, thresholds -1,
//     allowed_failed_percent 100, logging level INFO in upper case, ...).
//     The program_arguments flags porch reads (--error_threshold,
//     --allowed_failed_percent, --task_overhead_timeout,
//     --progress_update_timeout, --first_task_creation_timeout,
//     --copy_logs_to_parent, --resource_monitor_interval, --logging_level,
//     or unambiguous prefixes of them) are in their fields, winning over the
//     YAML keys of the same meaning, and removed from
//     Task.ProgramArguments, whose references are checked like a command's.
//     Task.AppendRowTo names a declared output.
//   - A sweep step (Step.Type plan.StepSweep) has Step.Sweep, and its trial
//     in Step.Command (a command component, its template checked like a
//     command step's) or Step.Pipeline (a pipeline component, compiled as a
//     nested pipeline). Step.Inputs bind every trial input; each name the
//     search space sets, nested choice keys included, is a trial input of a
//     string, integer, number or boolean type its values fit, bound to
//     plan.ValueSearchSpace. Sweep.SearchSpace is sorted by name; choice
//     literals are as written. Every default is filled: sampling random
//     (rule random), limits.max_total_trials 1000, max_concurrent_trials the
//     total, timeout 5184000 s (60 days), evaluation_interval 1,
//     delay_evaluation 0. Goal and algorithm are lower case. Grid sweeps
//     hold only choices, bayesian ones only choice, uniform and quniform.
//     min_value <= max_value; sigma, q > 0; randint upper >= 1; bandit has
//     exactly one slack; truncation_percentage is 1..99. MetricStep, set
//     only with a pipeline trial, names a step path inside it.
//   - A standalone sweep job file (type: sweep at the top) compiles to a
//     plan whose root pipeline has the job's inputs and outputs and one
//     sweep step, named after the job's name: (else "sweep"), whose outputs
//     are bound to the pipeline's. Its trial's inputs are the job's inputs
//     (bound to them) and the search space's names; ${{search_space.x}} and
//     {search_space.x} in the command are plan.RefInput references to x
//     (Template.Source keeps them as written). The job's compute: is the
//     default compute.
package compiler
