package stepio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Bindings are a step's inputs and outputs as the command sees them.
type Bindings struct {
	// inputs holds the set inputs: a literal as written or a local path.
	inputs map[string]string
	// Outputs are the outputs' locations in declaration order, artifacts
	// included (last when not declared).
	Outputs []OutputLocation
	// Uploads are the outputs on s3 datastores, staged locally and
	// uploaded when the step succeeds.
	Uploads []Upload
	// Mounts are the inputs on s3 datastores mounted for the command;
	// unmount them when it ends.
	Mounts mountSet
	// staged are the outputs on local datastores the attempt writes in
	// staging (Folders.Attempt), published when it succeeds.
	staged []staged
	// Python is the worker's Python, first on the command's PATH.
	Python StepPython
}

// Output is the local path the command writes the output called name to:
// its staging folder when the attempt stages it.
func (b Bindings) Output(name string) (string, bool) {
	for _, s := range b.staged {
		if s.name == name {
			return s.path(), true
		}
	}
	for _, o := range b.Outputs {
		if o.Name == name {
			return o.Path, true
		}
	}
	return "", false
}

// Bind resolves the step's inputs to literals and local paths (data on s3
// datastores mounted or downloaded, as the input's mode says), and its
// outputs to local paths, creating the outputs' folders. On error, nothing
// stays mounted.
func (h *Host) Bind(ctx context.Context, in Step, f Folders) (b Bindings, err error) {
	b = Bindings{inputs: map[string]string{}, Python: h.Python()}
	defer func() {
		if err != nil {
			b.Mounts.Unmount()
		}
	}()
	for _, inp := range in.Inputs {
		if webData(inp) {
			v, err := h.webInput(ctx, in.StepPath, inp, f.Work)
			if err != nil {
				return b, err
			}
			b.inputs[inp.Name] = v
			continue
		}
		if d, rest, ok := h.storedInput(inp); ok {
			v, err := h.objectInput(ctx, in.StepPath, inp, d, rest, f.Work, &b.Mounts)
			if err != nil {
				return b, err
			}
			b.inputs[inp.Name] = v
			continue
		}
		v, set, err := h.InputValue(ctx, in.StepPath, inp, f.Work)
		if err != nil {
			return b, err
		}
		if set {
			b.inputs[inp.Name] = v
		}
	}
	artifactsDeclared := false
	for _, out := range in.Outputs {
		if out.Name == plan.ArtifactsOutput {
			artifactsDeclared = true
			b.Outputs = append(b.Outputs, OutputLocation{Name: out.Name, URI: f.ArtifactsURI, Path: f.Artifacts})
			continue
		}
		loc, up, err := h.outputLocation(in, out, f)
		if err != nil {
			return b, err
		}
		b.Outputs = append(b.Outputs, loc)
		switch {
		case up != nil:
			b.Uploads = append(b.Uploads, *up)
		case f.Attempt != "":
			st, err := stage(out.Name, loc.Path, f.Execution, f.Attempt, out.Type == "uri_file", ownLocation(in, out.Name, loc.URI))
			if err != nil {
				return b, FileError(fmt.Sprintf("step %q: output %q: prepare its staging folder beside %s", in.StepPath, out.Name, loc.Path), err)
			}
			b.staged = append(b.staged, st)
		}
	}
	if !artifactsDeclared {
		b.Outputs = append(b.Outputs, OutputLocation{Name: plan.ArtifactsOutput, URI: f.ArtifactsURI, Path: f.Artifacts})
	}
	return b, nil
}

// InputValue is what one input renders as, and whether it is set. Data on
// an s3 datastore is downloaded into the working folder work; local data is
// read in place, or copied there when its mode is download. Without a
// working folder (a parallel step's planner) local data is read in place.
func (h *Host) InputValue(ctx context.Context, step string, inp plan.Input, work string) (string, bool, error) {
	switch inp.Value.Kind {
	case plan.ValueLiteral:
		return inp.Value.Literal, true, nil
	case plan.ValueNone:
		return "", false, nil
	case plan.ValueData:
		if inp.Value.Data == nil {
			return "", false, Invalid("step %q: input %q is data without a path: give the input a path", step, inp.Name)
		}
		uri := inp.Value.Data.Path
		if WebURL(uri) {
			p, err := h.webInput(ctx, step, inp, work)
			return p, err == nil, err
		}
		if d, rest, ok := h.ObjectLocation(uri); ok {
			p, err := h.downloadInput(ctx, step, inp, d, rest, work)
			return p, err == nil, err
		}
		p, err := h.LocalPath(uri)
		if err != nil {
			return "", false, Invalid("step %q: input %q: %v", step, inp.Name, err)
		}
		_, err = os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, Invalid("step %q: input %q: %s does not exist on this worker (%s): create it, or fix the input's path", step, inp.Name, uri, p)
		}
		if err != nil {
			return "", false, fmt.Errorf("step %q: input %q: %w", step, inp.Name, err)
		}
		if work == "" {
			return p, true, nil
		}
		mode, err := InputMode(step, inp)
		switch {
		case err != nil:
			return "", false, err
		case mode != ReadDownload:
			return p, true, nil
		}
		dst, err := h.copyInput(step, inp.Name, p, work)
		return dst, err == nil, err
	}
	return "", false, Invalid("step %q: input %q has an unresolved value of kind %q: the workflow must resolve it to a literal, data or none", step, inp.Name, inp.Value.Kind)
}

// copyInput copies the local file or folder src of a download input into
// the working folder work, at .porch-inputs/<input> as on s3, and returns
// the copy's path. A file keeps its own name, in a folder of its own
// (.porch-inputs/<input>/<file name>), as Azure ML downloads a uri_file:
// a script reading data.csv.gz still sees the extension. What the step
// does to its copy leaves src alone.
func (h *Host) copyInput(step, name, src, work string) (string, error) {
	dir := filepath.Join(work, ".porch-inputs", name)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("step %q: input %q: clear the earlier copy: %w", step, name, err)
	}
	// The input itself may be a link (a folder on a mounted disk): its
	// target is what is copied.
	from, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", fmt.Errorf("step %q: input %q: %w", step, name, err)
	}
	dst := dir
	if info, err := os.Stat(from); err == nil && info.Mode().IsRegular() {
		dst = filepath.Join(dir, filepath.Base(src))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("step %q: input %q: %w", step, name, err)
	}
	copies := treeCopy{what: fmt.Sprintf("step %q: download input %q", step, name), skip: h.Home, follow: true}
	err = copies.copyTree(from, dst)
	var lerr *linkError
	switch {
	case errors.As(err, &lerr):
		return "", Invalid("%v, or read the input in place with mode ro_mount", err)
	case err != nil:
		return "", err
	}
	return dst, nil
}

// outputLocation maps one output to its local path and creates its folder
// (for uri_file, the file's folder). An output on an s3 datastore is
// written to a staging folder and uploaded when the step succeeds.
func (h *Host) outputLocation(in Step, out plan.Output, f Folders) (OutputLocation, *Upload, error) {
	uri := out.Path
	if uri == "" {
		uri = plan.DefaultOutputURI(DatastoreOf(in), in.RunID, in.StepPath, out.Name)
	}
	if strings.Contains(uri, "${{") {
		return OutputLocation{}, nil, Invalid("step %q: output %q has an unresolved path %q: the workflow must substitute ${{...}}", in.StepPath, out.Name, uri)
	}
	if err := outputInDatastore(uri); err != nil {
		return OutputLocation{}, nil, Invalid("step %q: output %q: %v", in.StepPath, out.Name, err)
	}
	var up *Upload
	p, err := h.WritablePath(uri)
	if d, rest, ok := h.ObjectLocation(uri); ok {
		staged := filepath.Join(f.staging(), out.Name)
		if err := os.RemoveAll(staged); err != nil {
			return OutputLocation{}, nil, fmt.Errorf("step %q: clear the staging folder of output %q: %w", in.StepPath, out.Name, err)
		}
		p, err = staged, nil
		if out.Type == "uri_file" {
			p = filepath.Join(staged, path.Base(rest))
		}
		up = &Upload{Name: out.Name, Local: p, Store: d, Path: rest}
	}
	if err != nil {
		return OutputLocation{}, nil, Invalid("step %q: output %q: %v", in.StepPath, out.Name, err)
	}
	dir := p
	if out.Type == "uri_file" || (up == nil && f.Attempt != "") {
		// A staged output's own folder appears when it is published.
		dir = filepath.Dir(p)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return OutputLocation{}, nil, FileError(fmt.Sprintf("step %q: output %q: create the folder %s", in.StepPath, out.Name, dir), err)
	}
	return OutputLocation{Name: out.Name, URI: uri, Path: p}, up, nil
}

// ownLocation says whether uri is the step's own location for output
// name (azureml/<run>/<step>/<output>/ in its default datastore), which no
// other step or run writes.
func ownLocation(in Step, name, uri string) bool {
	own := plan.DefaultOutputURI(DatastoreOf(in), in.RunID, in.StepPath, name)
	return strings.TrimSuffix(uri, "/") == strings.TrimSuffix(own, "/")
}

// outputInDatastore refuses an output URI that is not a path inside a
// datastore. The compiler refuses such paths; this keeps a plan built
// otherwise from writing anywhere on the host.
func outputInDatastore(uri string) error {
	name, rest, ok := plan.SplitDatastoreURI(uri)
	switch {
	case !ok:
		return fmt.Errorf("path %q is in no datastore: porch writes outputs only to %s<name>/paths/<path>", uri, DatastorePrefix)
	case !plan.ValidDatastoreName(name):
		return fmt.Errorf("path %q names datastore %q: expected a datastore name (letters, digits, '_', '-' and '.')", uri, name)
	}
	return insideDatastore(uri, rest)
}

// Render renders the step's command line.
func (b Bindings) Render(in Step) (string, error) {
	t := in.Command.Template
	if len(t.Parts) == 0 && strings.TrimSpace(t.Source) != "" {
		if strings.Contains(t.Source, "${{") || strings.Contains(t.Source, "$[[") {
			return "", Invalid("step %q: the command was not compiled (no template parts): recompile the pipeline", in.StepPath)
		}
		return t.Source, nil
	}
	line := t.Render(b.Lookup(in))
	if strings.TrimSpace(line) == "" {
		return "", Invalid("step %q has an empty command: give the step a command", in.StepPath)
	}
	return line, nil
}

// Lookup resolves a template's references to the step's values.
func (b Bindings) Lookup(in Step) func(plan.Ref) (string, bool) {
	return func(r plan.Ref) (string, bool) {
		switch r.Kind {
		case plan.RefInput:
			v, ok := b.inputs[r.Name]
			return v, ok
		case plan.RefOutput:
			return b.Output(r.Name)
		case plan.RefName:
			return in.RunID, true
		case plan.RefDefaultDatastore:
			return DatastoreOf(in), true
		}
		return "", false
	}
}

// Env is the command's environment: the worker's as the step's identity
// allows (identityEnv) with the worker's Python first on PATH, then the
// step's environment_variables, then the
// variables Azure ML sets; and a note on the identity for the step's log.
func (b Bindings) Env(in Step) ([]string, string) {
	env, note := identityEnv(os.Environ(), in.Command.Identity, in.SubmittedBy)
	return append(b.Python.WithPython(env), b.stepVars(in)...), note
}

// stepVars are the step's own variables: its environment_variables, then
// the variables Azure ML sets.
func (b Bindings) stepVars(in Step) []string {
	var env []string
	keys := make([]string, 0, len(in.Command.EnvironmentVariables))
	for k := range in.Command.EnvironmentVariables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+in.Command.EnvironmentVariables[k])
	}
	env = append(env, "AZUREML_RUN_ID="+in.RunID, "PORCH_STEP="+in.StepPath)
	for _, inp := range in.Inputs {
		if v, ok := b.inputs[inp.Name]; ok {
			env = append(env, "AZURE_ML_INPUT_"+inp.Name+"="+v)
		}
	}
	for _, out := range in.Outputs {
		if p, ok := b.Output(out.Name); ok {
			env = append(env, "AZURE_ML_OUTPUT_"+out.Name+"="+p)
		}
	}
	return env
}
