package compiler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// parser turns YAML files into the AST. It reads each file once.
type parser struct {
	diags
	readFile func(string) ([]byte, error)
	// ctx stops the compilation when done; limits bound what it builds
	// (see limits.go), and halted is set once either stops it.
	ctx    context.Context
	limits Limits
	halted bool
	// root is the file being compiled; steps counts the steps parsed and
	// depth the pipeline components being parsed, one inside the other.
	root  string
	steps int
	depth int
	// read counts the bytes of the files read, against MaxTotalBytes,
	// and nodes their YAML nodes, against MaxYAMLNodes.
	read  int64
	nodes int
	// components caches loaded component files by path; loading marks the
	// pipeline components being parsed, to refuse a component using itself.
	components map[string]*componentAST
	loading    map[string]bool
	dirs       map[string]string
	// refPos collects the positions of a template's references in order.
	refPos []plan.Pos
	// sweepRefs lets a command name search-space parameters (the trial
	// of a standalone sweep job); searchRefs collects those references.
	sweepRefs  bool
	searchRefs []searchRef
	// sets are the --set overrides applied to the root file's YAML tree
	// (applySets); inputSets those of root inputs, set whole at lowering.
	sets, inputSets map[string]string
	// catalog is Options.Catalog: registered data assets and components.
	catalog *plan.Catalog
	// instanceTypes collects every resources.instance_type, which the
	// checker looks up in the catalogue.
	instanceTypes []*scalarAST
	// unknownEnvs are environment references the catalogue cannot
	// resolve, reported by the checker with the other references.
	unknownEnvs Diagnostics
}

func newParser(ctx context.Context, readFile func(string) ([]byte, error), limits Limits) *parser {
	return &parser{readFile: readFile, ctx: ctx, limits: limits.withDefaults(),
		components: map[string]*componentAST{}, loading: map[string]bool{}, dirs: map[string]string{}}
}

// load reads and decodes one file; at is where it was referenced from (the
// zero Pos for the root file).
func (p *parser) load(name string, at plan.Pos) *yaml.Node {
	if p.stopped() {
		return nil
	}
	data, err := p.readFile(name)
	if err != nil {
		p.readError(name, at, err)
		return nil
	}
	if p.read += int64(len(data)); p.read > p.limits.MaxTotalBytes {
		pos := at
		if at.File == "" {
			pos = plan.Pos{File: name}
		}
		p.halt(pos, raise("use fewer or smaller component files", EnvMaxTotalBytes),
			"the pipeline's files hold more than %d bytes in all (%q is one too many)", p.limits.MaxTotalBytes, name)
		return nil
	}
	if !p.countYAMLNodes(name, data) {
		return nil
	}
	return decodeYAML(&p.diags, name, data, p.limits.MaxAliasNodes)
}

// readError reports a file that cannot be read, at where it was referenced
// from (the zero Pos for the root file).
func (p *parser) readError(name string, at plan.Pos, err error) {
	pos, what := at, "referenced file"
	if at.File == "" {
		pos, what = plan.Pos{File: name}, "file"
	}
	detail := "check the path; relative paths resolve against the folder of the file that names them"
	var notRegular *userfile.NotRegularError
	var tooLarge *userfile.TooLargeError
	switch {
	case p.stopped():
	case errors.Is(err, fs.ErrNotExist):
		p.errorf(pos, detail, "%s %q does not exist", what, name)
	case errors.As(err, &notRegular):
		p.errorf(pos, "name a YAML file: porch reads regular files only, never devices, named pipes, sockets or folders",
			"%s %q is %s, not a regular file", what, name, notRegular.Kind)
	case errors.As(err, &tooLarge) && tooLarge.Size < 0:
		p.errorf(pos, raise("pipeline and component files are far smaller: check that it is the file you meant", EnvMaxFileBytes),
			"%s %q holds more than %d bytes, the limit", what, name, tooLarge.Max)
	case errors.As(err, &tooLarge):
		p.errorf(pos, raise("pipeline and component files are far smaller: check that it is the file you meant", EnvMaxFileBytes),
			"%s %q is %d bytes, more than the limit of %d", what, name, tooLarge.Size, tooLarge.Max)
	default:
		p.errorf(pos, detail, "cannot read %s %q: %v", what, name, err)
	}
}

// Keys of a pipeline file, known and accepted without effect.
var (
	pipelineKeys = []string{"$schema", "type", "name", "display_name", "experiment_name", "description",
		"tags", "inputs", "outputs", "settings", "jobs", "component", "compute", "identity", "is_deterministic"}
	pipelineSilent = []string{"version", "properties", "services",
		"creation_context", "id", "schedule", "status", "default_compute", "default_datastore", "queue_settings"}
	settingsKeys   = []string{"default_compute", "default_datastore", "continue_on_step_failure", "force_rerun", "on_init", "on_finalize"}
	settingsSilent = []string{"_source", "priority", "continue_run_on_failed_optional_input", "timeout"}
)

// parseRoot parses the file Compile was given.
func (p *parser) parseRoot(name string) *pipelineAST {
	root := p.load(name, plan.Pos{})
	if root == nil {
		return nil
	}
	p.applySets(name, root, p.sets)
	typ, jobs, comp := lookup(root, "type"), lookup(root, "jobs"), lookup(root, "component")
	if typ != nil && typ.val.Kind == yaml.ScalarNode && typ.val.Value == string(plan.StepSweep) {
		return p.parseSweepJob(name, root)
	}
	if p.notPipeline(name, root) {
		return nil
	}
	if typ != nil && typ.val.Kind == yaml.ScalarNode && typ.val.Value != "pipeline" {
		p.errorf(nodePos(name, typ.val), "porch runs pipeline and sweep jobs: write type: pipeline with jobs:, or use the command in a pipeline",
			"file has type %q, not a pipeline", typ.val.Value)
		return nil
	}
	if typ == nil && jobs == nil && comp == nil {
		p.errorf(plan.Pos{File: name, Line: root.Line, Col: root.Column}, "add type: pipeline and a jobs: section",
			"file is not a pipeline job: it has neither jobs: nor component:")
		return nil
	}
	return p.parsePipeline(name, root, true)
}

// parseJobHeader reads what every job file has: its names, description,
// tags, compute, and its inputs and outputs; what is "job" or, for a
// pipeline component, "component".
func (p *parser) parseJobHeader(name string, f map[string]entry, pl *pipelineAST, what string) {
	p.checkName(name, f, what)
	pl.Name = p.scalar(name, f["name"])
	pl.DisplayName = p.scalar(name, f["display_name"])
	pl.ExperimentName = p.scalar(name, f["experiment_name"])
	pl.Description = p.scalar(name, f["description"])
	pl.Tags = p.stringMap(name, f["tags"], "tags")
	pl.Compute = p.scalar(name, f["compute"])
	p.checkComputeName(pl.Compute)
	pl.Identity = p.parseIdentity(name, f["identity"])
	if e, ok := f["inputs"]; ok {
		pl.Inputs = p.parseInputs(name, e.val, ctxDecl)
	}
	if e, ok := f["outputs"]; ok {
		pl.Outputs = p.parseOutputs(name, e.val)
	}
}

// parsePipeline parses a pipeline job or pipeline component body.
func (p *parser) parsePipeline(name string, n *yaml.Node, root bool) *pipelineAST {
	pl := &pipelineAST{File: name, Dir: p.absDir(name), Pos: nodePos(name, n)}
	f := p.fields(name, n, "pipeline", pipelineKeys, pipelineSilent)
	p.warnPipelineQueueSettings(name, f)
	what := "job"
	if !root {
		what = "component"
	}
	p.parseJobHeader(name, f, pl, what)
	pl.NotDeterministic = p.notDeterministic(name, f)
	if e, ok := f["settings"]; ok {
		pl.Settings = p.parseSettings(name, e)
	}
	jobs, hasJobs := f["jobs"]
	if c, ok := f["component"]; ok {
		switch {
		case hasJobs:
			p.errorf(nodePos(name, c.key), "remove component: or jobs:", "a pipeline has both jobs: and component:")
		case !root:
			p.errorf(nodePos(name, c.key), "use jobs: inside a pipeline component", "component: is only valid at the top of a pipeline job")
		default:
			pl.ComponentPos = nodePos(name, c.key)
			pl.Component = p.parseComponentRef(name, c)
			if pl.Component != nil && pl.Component.Type != plan.StepPipeline {
				p.errorf(nodePos(name, c.val), "point component: at a pipeline component (type: pipeline), or move the command into jobs:",
					"top-level component must be a pipeline component, found type %q", pl.Component.Type)
				pl.Component = nil
			}
			if pl.Component != nil && pl.Component.Pipeline != nil {
				p.refuseSetupSteps(pl.Settings, pl.Component.Pipeline.Steps)
			}
		}
		return pl
	}
	if !hasJobs {
		p.errorf(plan.Pos{File: name, Line: n.Line, Col: n.Column}, "add a jobs: section with at least one step",
			"pipeline has no jobs")
		return pl
	}
	pl.Steps = p.parseSteps(name, jobs)
	p.refuseSetupSteps(pl.Settings, pl.Steps)
	return pl
}

func (p *parser) parseSettings(name string, e entry) settingsAST {
	var s settingsAST
	if isNull(e.val) {
		return s
	}
	if e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write settings as keys such as default_compute:", "settings must be a mapping, found %s", kindName(e.val))
		return s
	}
	f := p.fields(name, e.val, "settings", settingsKeys, settingsSilent)
	for _, x := range entries(e.val) {
		if !contains(settingsKeys, x.key.Value) && contains(settingsSilent, x.key.Value) {
			p.warnf(nodePos(name, x.key), "porch runs the pipeline without it", "setting %q is ignored by porch", x.key.Value)
		}
	}
	s.DefaultCompute = p.scalar(name, f["default_compute"])
	p.checkComputeName(s.DefaultCompute)
	s.DefaultDatastore = p.scalar(name, f["default_datastore"])
	p.checkDefaultDatastore(s.DefaultDatastore)
	s.ContinueOnStepFailure = p.boolean(name, f["continue_on_step_failure"])
	s.ForceRerun = p.boolean(name, f["force_rerun"])
	s.OnInit = p.scalar(name, f["on_init"])
	s.OnFinalize = p.scalar(name, f["on_finalize"])
	return s
}

// refuseSetupSteps reports settings.on_init and on_finalize, naming the
// step each points at: porch would otherwise run that step as any other,
// and a setting naming no step would pass unnoticed.
func (p *parser) refuseSetupSteps(settings settingsAST, steps []*stepAST) {
	names := make([]string, 0, len(steps))
	for _, s := range steps {
		names = append(names, s.Name)
	}
	for _, set := range []struct {
		key  string
		step *scalarAST
	}{{"on_init", settings.OnInit}, {"on_finalize", settings.OnFinalize}} {
		if set.step == nil {
			continue
		}
		detail := fmt.Sprintf("remove %s: (porch would run %q as an ordinary step, when its inputs are ready), or run this pipeline on Azure ML", set.key, set.step.Value)
		if !contains(names, set.step.Value) {
			detail = withHint(fmt.Sprintf("%q is no step of this pipeline either: remove %s:", set.step.Value, set.key), suggest(set.step.Value, names))
		}
		p.errorf(set.step.Pos, detail, "settings.%s names step %q, but porch does not run setup or teardown steps yet", set.key, set.step.Value)
	}
}

func (p *parser) parseSteps(name string, jobs entry) []*stepAST {
	if isNull(jobs.val) || jobs.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, jobs.val), "write jobs as step names mapping to steps", "jobs must be a mapping, found %s", kindName(jobs.val))
		return nil
	}
	var steps []*stepAST
	for _, e := range entries(jobs.val) {
		p.checkStepName(name, e)
		if s := p.parseStep(name, e); s != nil {
			s.index = len(steps)
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 && !p.list.HasErrors() {
		p.errorf(nodePos(name, jobs.key), "add at least one step under jobs:", "pipeline has no jobs")
	}
	return steps
}

// fields returns a mapping's entries by key, warning about unknown keys
// with a did-you-mean. Keys in silent are accepted without effect.
func (p *parser) fields(name string, n *yaml.Node, what string, known, silent []string) map[string]entry {
	out := map[string]entry{}
	for _, e := range entries(n) {
		k := e.key.Value
		out[k] = e
		if contains(known, k) || contains(silent, k) {
			continue
		}
		p.warnf(nodePos(name, e.key), withHint("porch ignores it", suggest(k, known)), "unknown key %q in %s", k, what)
	}
	return out
}

func lookup(n *yaml.Node, key string) *entry {
	for _, e := range entries(n) {
		if e.key.Value == key {
			return &e
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar returns a scalar entry's value, nil when absent or null; a
// non-scalar is an error.
func (p *parser) scalar(name string, e entry) *scalarAST {
	if e.key == nil || isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.ScalarNode {
		p.errorf(nodePos(name, e.val), "write a single value", "%q must be a scalar, found %s", e.key.Value, kindName(e.val))
		return nil
	}
	return newScalar(name, e.val)
}

func (p *parser) str(name string, e entry) string {
	if s := p.scalar(name, e); s != nil {
		return s.Value
	}
	return ""
}

func (p *parser) boolean(name string, e entry) bool {
	s := p.scalar(name, e)
	if s == nil {
		return false
	}
	b, ok := parseBool(s.Value)
	if !ok {
		p.errorf(s.Pos, "write true or false", "%q must be a boolean, found %q", e.key.Value, s.Value)
	}
	return b
}

// bindingNotLiteral reports a ${{...}} binding written where porch needs a
// literal integer (a run setting), and whether v was one.
func (p *parser) bindingNotLiteral(pos plan.Pos, what, v string) bool {
	if !strings.Contains(v, "${{") {
		return false
	}
	p.errorf(pos, "write a whole number: porch settles run settings when it compiles the pipeline, before any input is bound "+
		"(Azure ML resolves such a binding in a pipeline step; porch does not yet)",
		"%q must be a literal integer, found the binding %q", what, strings.TrimSpace(v))
	return true
}

// stringMap reads a mapping of scalars (tags, environment variables).
func (p *parser) stringMap(name string, e entry, what string) map[string]string {
	if e.key == nil || isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "write "+what+" as key: value pairs", "%s must be a mapping, found %s", what, kindName(e.val))
		return nil
	}
	out := map[string]string{}
	for _, x := range entries(e.val) {
		switch {
		case isNull(x.val):
			out[x.key.Value] = ""
		case x.val.Kind == yaml.ScalarNode:
			out[x.key.Value] = x.val.Value
		default:
			p.errorf(nodePos(name, x.val), "write a single value", "%s value %q must be a scalar, found %s", what, x.key.Value, kindName(x.val))
		}
	}
	return out
}

// absDir is the absolute folder holding a file, memoised: filepath.Abs
// asks the system for the working folder each time.
func (p *parser) absDir(name string) string {
	dir := filepath.Dir(name)
	if abs, ok := p.dirs[dir]; ok {
		return abs
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	p.dirs[dir] = abs
	return abs
}

// localPath resolves a path written in a file against the file's folder,
// dropping a file: prefix.
func localPath(dir, p string) string {
	p = strings.TrimPrefix(p, "file:")
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}
