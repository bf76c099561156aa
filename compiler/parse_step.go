package compiler

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Keys of a step, known and accepted without effect.
var (
	stepKeys = []string{"type", "component", "command", "code", "environment", "environment_variables",
		"inputs", "outputs", "compute", "resources", "limits", "distribution", "display_name",
		"description", "tags", "name", "identity", "queue_settings"}
	stepSilent = []string{"services", "properties", "experiment_name",
		"is_deterministic", "$schema", "version", "creation_context", "id", "status", "settings"}
	resourceKeys = []string{"instance_count", "instance_type", "shm_size", "properties", "locations",
		"docker_args", "max_instance_count", "runtime_version"}
	distributionKeys = []string{"type", "process_count_per_instance", "worker_count", "parameter_server_count",
		"include_dashboard", "head_address", "head_node_additional_args", "worker_node_additional_args", "port", "address"}
)

// unsupportedTypes are Azure ML job and component types porch refuses: they
// need Azure services porch does not have.
var unsupportedTypes = map[string]bool{
	"spark": true, "automl": true, "data_transfer": true, "import": true, "flow": true,
	"import_data": true, "export_data": true, "copy_data": true,
}

// controlFlowTypes are Azure ML's control-flow nodes: loops and branches
// over other steps, which porch does not run.
var controlFlowTypes = map[string]bool{"parallel_for": true, "do_while": true, "if_else": true}

// runTypes are the component types porch runs; a step may also be a sweep.
var runTypes = []string{"command", "parallel", "pipeline"}

// stepTypes are the step types porch runs.
var stepTypes = append(append([]string(nil), runTypes...), string(plan.StepSweep))

// checkKind reports an unsupported step or component type and whether the
// type is one porch runs.
func (p *parser) checkKind(pos plan.Pos, what, typ string) bool {
	switch {
	case contains(runTypes, typ):
		return true
	case typ == string(plan.StepSweep) && what == "step":
		return true
	case typ == string(plan.StepSweep):
		p.errorf(pos, "write type: sweep on the pipeline step, and point its trial: at a command component",
			"a %s cannot have type %q", what, typ)
	case controlFlowTypes[typ]:
		p.errorf(pos, "porch runs command, parallel, pipeline and sweep steps, not loops or branches over them: write the steps out, or run this pipeline on Azure ML",
			"%s type %q is a control-flow node, which porch does not support", what, typ)
	case unsupportedTypes[typ]:
		p.errorf(pos, "porch runs command, parallel, pipeline and sweep steps on local workers; run this pipeline on Azure ML",
			"%s type %q is not supported by porch", what, typ)
	default:
		p.errorf(pos, withHint("porch runs command, parallel, pipeline and sweep steps", suggest(typ, stepTypes)),
			"unknown %s type %q", what, typ)
	}
	return false
}

// parseStep parses one entry of jobs:. It returns nil for a step porch
// cannot run (after reporting why).
func (p *parser) parseStep(name string, e entry) *stepAST {
	s := &stepAST{Name: e.key.Value, Pos: nodePos(name, e.key)}
	if !p.countStep(&p.steps, s.Pos, s.Name) {
		return nil
	}
	if e.val == nil || e.val.Kind != yaml.MappingNode {
		p.errorf(nodePos(name, e.val), "give the step a command: or a component:", "step %q must be a mapping, found %s", s.Name, kindName(e.val))
		return nil
	}
	typ := "command"
	explicit := false
	if t := lookup(e.val, "type"); t != nil && !isNull(t.val) {
		typ, explicit = t.val.Value, true
		if !p.checkKind(nodePos(name, t.val), "step", typ) {
			return nil
		}
	}
	if typ == string(plan.StepSweep) {
		return p.parseSweepStep(name, e, s)
	}
	var comp *componentAST
	if c := lookup(e.val, "component"); c != nil {
		if comp = p.parseComponentRef(name, *c); comp == nil {
			return nil
		}
	}
	keys := stepKeys
	if typ == string(plan.StepParallel) || (comp != nil && comp.Type == plan.StepParallel) {
		keys = parallelStepKeys
	}
	f := p.fields(name, e.val, fmt.Sprintf("step %q", s.Name), keys, stepSilent)
	s.DisplayName = p.str(name, f["display_name"])
	s.Compute = p.scalar(name, f["compute"])
	p.checkComputeName(s.Compute)
	s.Identity = p.parseIdentity(name, f["identity"])
	s.Tier = p.parseQueueSettings(name, f)
	s.NotDeterministic = p.notDeterministic(name, f)
	if s.Component = p.stepComponent(name, s, f, typ, comp); s.Component == nil {
		return nil
	}
	s.Type = s.Component.Type
	if explicit && typ != string(s.Component.Type) {
		p.errorf(nodePos(name, lookup(e.val, "type").val), fmt.Sprintf("write type: %s or use a %s component", s.Component.Type, typ),
			"step %q has type %q but its component is a %s component", s.Name, typ, s.Component.Type)
		return nil
	}
	switch {
	case s.Type == plan.StepParallel && s.Component.Inline:
		s.Component.Parallel = p.parseParallel(name, f)
	case s.Type == plan.StepParallel:
		s.Par = p.parseParallel(name, f)
	default:
		s.Over = p.parseCommand(name, f, s.Component.Inline)
		if s.Component.Inline {
			s.Component.Command = s.Over
			s.Over = commandAST{}
		}
	}
	if in, ok := f["inputs"]; ok {
		s.Inputs = p.parseInputs(name, in.val, ctxBind)
	}
	if out, ok := f["outputs"]; ok {
		s.Outputs = p.parseOutputs(name, out.val)
	}
	return s
}

// stepComponent returns what a step runs: its loaded component, or for an
// inline command or parallel step a component made from the step itself;
// nil after reporting a step that has neither.
func (p *parser) stepComponent(name string, s *stepAST, f map[string]entry, typ string, comp *componentAST) *componentAST {
	switch {
	case comp != nil:
		if _, ok := f["command"]; ok && comp.Type != plan.StepParallel {
			p.warnf(nodePos(name, f["command"].key), "remove command: or component:", "step %q has both command: and component:; the component's command runs", s.Name)
		}
	case typ == string(plan.StepPipeline):
		p.errorf(s.Pos, "add component: naming a pipeline component file", "pipeline step %q has no component", s.Name)
		return nil
	case typ == string(plan.StepParallel):
		if _, ok := f["task"]; !ok {
			p.errorf(s.Pos, "add task: with type: run_function, code: and entry_script: (or component: naming a parallel component file)",
				"parallel step %q has neither task: nor component:", s.Name)
			return nil
		}
		return &componentAST{File: name, Dir: p.absDir(name), Pos: s.Pos, Type: plan.StepParallel, Inline: true}
	default:
		if _, ok := f["command"]; !ok {
			p.errorf(s.Pos, "add command: (the command line to run) or component: (a component file)", "step %q has neither command: nor component:", s.Name)
			return nil
		}
		return &componentAST{File: name, Dir: p.absDir(name), Pos: s.Pos, Type: plan.StepCommand, Inline: true}
	}
	return comp
}

// parseCommand reads the run settings shared by command components and
// command steps.
func (p *parser) parseCommand(name string, f map[string]entry, withCommand bool) commandAST {
	var c commandAST
	if withCommand {
		c.Command = p.scalar(name, f["command"])
		if c.Command != nil {
			c.Template, c.RefPos = p.parseTemplate(c.Command)
		} else if e, ok := f["command"]; ok {
			p.errorf(nodePos(name, e.key), "write the command line to run", "command is empty")
		}
	}
	if code := p.scalar(name, f["code"]); code != nil {
		c.Code = p.codePath(name, code)
	}
	if e, ok := f["environment"]; ok {
		c.Environment = describeEnvironment(e.val)
		c.Env = p.parseEnvironment(name, e)
	}
	c.EnvVars = p.stringMap(name, f["environment_variables"], "environment_variables")
	if e, ok := f["limits"]; ok && !isNull(e.val) {
		lf := p.fields(name, e.val, "limits", []string{"timeout"}, []string{"max_total_trials", "max_concurrent_trials", "trial_timeout", "max_retries"})
		c.Timeout = p.intRange(name, lf["timeout"], "limits.timeout", 1, -1).V
	}
	if e, ok := f["resources"]; ok && !isNull(e.val) {
		rf := p.fields(name, e.val, "resources", resourceKeys, nil)
		c.Resources = &plan.Resources{
			InstanceCount: p.intRange(name, rf["instance_count"], "resources.instance_count", 1, -1).V,
			InstanceType:  p.instanceType(name, rf["instance_type"]),
			ShmSize:       p.str(name, rf["shm_size"]),
		}
	}
	if e, ok := f["distribution"]; ok && !isNull(e.val) {
		c.Dist = p.parseDistribution(name, e)
	}
	return c
}

func (p *parser) parseDistribution(name string, e entry) *plan.Distribution {
	df := p.fields(name, e.val, "distribution", distributionKeys, nil)
	// Azure ML reads the type in any case (PyTorch, TensorFlow, MPI).
	d := &plan.Distribution{
		Type:                    strings.ToLower(p.str(name, df["type"])),
		ProcessCountPerInstance: p.intRange(name, df["process_count_per_instance"], "distribution.process_count_per_instance", 1, -1).V,
		WorkerCount:             p.intRange(name, df["worker_count"], "distribution.worker_count", 0, -1).V,
		ParameterServerCount:    p.intRange(name, df["parameter_server_count"], "distribution.parameter_server_count", 0, -1).V,
	}
	switch d.Type {
	case "pytorch", "mpi", "tensorflow":
		return d
	case "":
		p.errorf(nodePos(name, e.key), "add type: pytorch, mpi or tensorflow", "distribution has no type")
	default:
		p.errorf(nodePos(name, df["type"].val), withHint("porch runs pytorch, mpi and tensorflow distributions",
			suggest(d.Type, []string{"pytorch", "mpi", "tensorflow"})), "distribution type %q is not supported by porch", df["type"].val.Value)
	}
	return nil
}

// codePath resolves code: against the folder of the file naming it.
func (p *parser) codePath(name string, code *scalarAST) string {
	v := code.Value
	if strings.HasPrefix(v, "azureml:") || strings.Contains(v, "://") {
		p.errorf(code.Pos, "porch resolves only local folders for code: point code: at a local folder",
			"code %q cannot be resolved offline", v)
		return ""
	}
	return localPath(p.absDir(name), v)
}

// describeEnvironment keeps a one-line description of any environment form.
// Environments are never errors: porch runs on the worker's host.
func describeEnvironment(n *yaml.Node) string {
	n = deref(n)
	switch {
	case n == nil || isNull(n):
		return ""
	case n.Kind == yaml.ScalarNode:
		return n.Value
	case n.Kind != yaml.MappingNode:
		return "inline environment"
	}
	var parts []string
	for _, e := range entries(n) {
		switch {
		case e.val != nil && e.val.Kind == yaml.ScalarNode && !isNull(e.val):
			if k := e.key.Value; k == "image" || k == "conda_file" || k == "name" || k == "version" {
				parts = append(parts, k+" "+e.val.Value)
			}
		case e.key.Value == "build":
			if pth := lookup(e.val, "path"); pth != nil && pth.val != nil {
				parts = append(parts, "build "+pth.val.Value)
			}
		case e.key.Value == "conda_file":
			parts = append(parts, "conda_file inline")
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return envRank(parts[i]) < envRank(parts[j]) })
	if len(parts) == 0 {
		return "inline environment"
	}
	return strings.Join(parts, ", ")
}

func envRank(s string) int {
	for i, k := range []string{"name", "version", "image", "build", "conda_file"} {
		if strings.HasPrefix(s, k+" ") {
			return i
		}
	}
	return 9
}

// componentFile resolves a component reference to a file name relative to
// the referencing file's folder, as written.
func componentFile(from, ref string) string {
	ref = strings.TrimPrefix(ref, "file:")
	if filepath.IsAbs(ref) {
		return filepath.Clean(ref)
	}
	return filepath.Join(filepath.Dir(from), ref)
}
