package parallel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/entryscript"
	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/metrics"
	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/redact"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// newRuntime reads the step's spec and manifest, prepares this worker's
// working folder (the code) and renders the entry script's arguments.
func (a *Activities) newRuntime(ctx context.Context, ref ParallelStepRef) (*parallelRuntime, error) {
	f, err := a.parallelFolders(ref)
	if err != nil {
		return nil, err
	}
	spec, err := f.readSpec(ctx, ref.StepPath, ref.Digest)
	if err != nil {
		return nil, err
	}
	if spec.Plan.Ref.Digest != ref.Digest {
		return nil, fmt.Errorf("step %q was planned again (manifest %.12s, this mini-batch belongs to %.12s): the step's newer attempt runs it", ref.StepPath, spec.Plan.Ref.Digest, ref.Digest)
	}
	m, err := f.openManifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := ensureReport(f); err != nil {
		m.Close()
		return nil, fmt.Errorf("step %q: start processed_mini-batches.csv: %w", ref.StepPath, err)
	}
	rt := &parallelRuntime{
		a: a, ref: ref, folders: f, spec: spec, manifest: m, node: a.NodeName(), lastUsed: time.Now(),
		appendTo: spec.Input.Parallel.Task.AppendRowTo != "",
		work:     filepath.Join(a.Home, "work", spec.Input.RunID, filepath.FromSlash(spec.Input.StepPath), a.NodeName()),
	}
	opts, err := a.entryScriptOptions(ctx, rt)
	if err != nil {
		if rt.releaseDevices != nil {
			rt.releaseDevices()
		}
		rt.instance.stop()
		m.Close()
		return nil, err
	}
	rt.pool = entryscript.NewPool(opts, max(spec.Plan.Instances*spec.Plan.PerInstance, 1))
	return rt, nil
}

// openManifest opens the step's manifest for ref's digest: this worker's
// copy when it is that one, else the shared one, dropping this worker's
// copies of another plan's done records and results.
func (f parallelFolders) openManifest(ctx context.Context, ref ParallelStepRef) (*minibatch.Manifest, error) {
	if m, err := minibatch.Open(f.manifest()); err == nil {
		if m.Summary().Digest == ref.Digest {
			return m, nil
		}
		m.Close()
	}
	if err := f.share.forget(doneRel, resultsRel); err != nil {
		return nil, fmt.Errorf("step %q: drop stale mini-batch records: %w", ref.StepPath, err)
	}
	if _, err := f.share.fetch(ctx, manifestRel); err != nil {
		return nil, fmt.Errorf("step %q: fetch the manifest: %w", ref.StepPath, err)
	}
	m, err := minibatch.Open(f.manifest())
	if err != nil {
		return nil, fmt.Errorf("step %q: open manifest: %w", ref.StepPath, err)
	}
	if m.Summary().Digest != ref.Digest {
		m.Close()
		return nil, fmt.Errorf("step %q was planned again (manifest %.12s, this mini-batch belongs to %.12s): the step's newer attempt runs it", ref.StepPath, m.Summary().Digest, ref.Digest)
	}
	return m, nil
}

// entryScriptOptions prepares this node's working folder and says how the
// step's entry-script processes run.
func (a *Activities) entryScriptOptions(ctx context.Context, rt *parallelRuntime) (entryscript.Options, error) {
	spec, f, work := rt.spec, rt.folders, rt.work
	in := spec.Input
	p := in.Parallel
	sf := stepio.Folders{ArtifactsURI: f.artifactsURI, Artifacts: f.artifacts, Work: work}
	if err := os.RemoveAll(work); err != nil {
		return entryscript.Options{}, fmt.Errorf("remove stale working folder: %w", err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return entryscript.Options{}, fmt.Errorf("create working folder: %w", err)
	}
	if err := a.CopyCode(ctx, in.StepPath, p.Task.Code, sf); err != nil {
		return entryscript.Options{}, err
	}
	cmd := stepio.Step{
		RunID: in.RunID, StepPath: in.StepPath, DefaultDatastore: in.DefaultDatastore,
		Command: plan.Command{Template: p.Task.ProgramArguments, Code: p.Task.Code, EnvironmentVariables: p.EnvironmentVariables,
			Identity: p.Identity},
		Inputs: a.withoutSplitInput(in), Outputs: in.Outputs, SubmittedBy: in.SubmittedBy,
	}
	b, err := a.Bind(ctx, cmd, sf)
	if err != nil {
		return entryscript.Options{}, err
	}
	rt.outputs = &objectOutputs{a: a}
	for _, u := range b.Uploads {
		switch {
		case u.Name == p.Task.AppendRowTo:
		case outputType(in.Outputs, u.Name) == "uri_file":
			return entryscript.Options{}, stepio.Invalid("step %q: output %q is a uri_file on s3 datastore %q: a parallel step's workers write to object storage through uri_folder outputs and append_row_to; declare it uri_folder, or write it to a local datastore", in.StepPath, u.Name, u.Store.Name)
		default:
			rt.outputs.ups = append(rt.outputs.ups, u)
		}
	}
	args, err := stepio.SplitArgs(p.Task.ProgramArguments.Render(b.Lookup(cmd)))
	if err != nil {
		return entryscript.Options{}, stepio.Invalid("step %q: %v", in.StepPath, err)
	}
	img, err := a.environment(ctx, rt)
	if err != nil {
		return entryscript.Options{}, err
	}
	env, idNote := b.Env(cmd)
	if img != nil {
		env, idNote = b.ContainerEnv(cmd)
	}
	env = append(env, "AZUREML_PARALLEL_NODE="+a.NodeName())
	if b.Python.Note != "" && img == nil {
		rt.log(b.Python.Note + " (node " + a.NodeName() + ")")
	}
	if idNote != "" {
		rt.log(idNote)
	}
	env = a.withMlflow(ctx, rt, img, env)
	cpus, limitEnv, note, release := a.Devices.LimitEntryScripts(p, spec.Plan.PerInstance)
	rt.releaseDevices = release
	if note != "" {
		rt.log(note + " on node " + a.NodeName())
	}
	opts := entryscript.Options{
		Python: a.Python, Dir: work, Script: p.Task.EntryScript, Args: args, Env: append(env, limitEnv...), CPUs: cpus,
		LogDir: f.logs, Node: a.NodeName(), LoggingLevel: p.LoggingLevel, KillGrace: a.StopGrace(),
		Tabular: spec.Plan.Tabular, OutputDir: filepath.Join(f.artifacts, "outputs"),
		SecretVars: redact.Vars(p.Identity),
	}
	if img != nil {
		// The container's GPUs are its own; its cores are its cpuset.
		opts.Env = append(env, slices.DeleteFunc(slices.Clone(limitEnv), func(kv string) bool {
			return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=")
		})...)
		if rt.instance, err = a.startInstance(ctx, rt, *img, b.ContainerMounts(cmd, sf), opts.Env, cpus, visibleGPUs(limitEnv)); err != nil {
			return entryscript.Options{}, err
		}
		opts.Python, opts.CPUs = "python3", nil
		opts.Container = &entryscript.Container{Runtime: a.Runtime, Name: rt.instance.name, FifoDir: filepath.Join(work, ".porch-fifo")}
	}
	return opts, nil
}

// withMlflow gives entry scripts porch's mlflow module as command steps get
// it: on PYTHONPATH when the worker's Python has no mlflow of its own, a real
// one staying in charge. What the scripts log with it goes to this node's
// logs/user/metrics/<node>.jsonl, one file a node so workers sharing the
// logs through object storage do not overwrite each other's. Only scripts
// that import mlflow need the module, so failing to provide it is a note in
// the step's porch log, not a failed step.
func (a *Activities) withMlflow(ctx context.Context, rt *parallelRuntime, img *launch.Image, env []string) []string {
	python := entryscript.Interpreter(a.Python)
	file := filepath.Join(rt.folders.logs, "user", "metrics", rt.node+".jsonl")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		// mlflow calls must still succeed.
		rt.log(fmt.Sprintf("porch: node %s: cannot create the entry scripts' metrics folder (%v): what they log with mlflow is dropped", rt.node, err))
		file = os.DevNull
	}
	var out []string
	var err error
	if img != nil {
		python = "the image's python3"
		out, err = metrics.ExtendProbed(env, a.Images().HasModule(ctx, *img, "mlflow"), file, "")
	} else {
		out, err = metrics.Extend(env, python, file, "")
	}
	switch {
	case err != nil:
		rt.log(fmt.Sprintf("porch: node %s: porch's mlflow module is not available to the entry scripts (%v): scripts that import mlflow fail unless %s has mlflow", rt.node, err, python))
	case len(out) > len(env)+1:
		rt.log(fmt.Sprintf("porch: node %s: %s has no mlflow: porch's mlflow module is on PYTHONPATH and records what the entry scripts log in %s", rt.node, python, file))
	}
	return out
}

// withoutSplitInput is the step's inputs with input_data, when it is on
// object storage, bound to its URI: each worker fetches only its
// mini-batches' objects, never the whole input.
func (a *Activities) withoutSplitInput(in PlanMiniBatchesInput) []plan.Input {
	out := make([]plan.Input, len(in.Inputs))
	for i, inp := range in.Inputs {
		out[i] = inp
		if inp.Name == in.Parallel.InputData && inp.Value.Kind == plan.ValueData && inp.Value.Data != nil {
			if _, _, ok := a.ObjectLocation(inp.Value.Data.Path); ok {
				out[i].Value = plan.Value{Kind: plan.ValueLiteral, Literal: inp.Value.Data.Path}
			}
		}
	}
	return out
}
