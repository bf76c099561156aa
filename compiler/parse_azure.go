package compiler

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Checks of what azure-ai-ml (sdk/ml/azure-ai-ml/azure/ai/ml) or the Azure
// ML service refuses, which porch would otherwise run: a file porch
// accepts must be one Azure ML accepts too.

var (
	// outputModes are the modes of a job output (OutputSchema in
	// _schema/job/input_output_entry.py) and link, which a component
	// output may have; Azure ML reads them in any case.
	outputModes = []string{"rw_mount", "upload", "mount", "direct", "link"}
	// assetNameRE is what Azure ML takes as a data asset's name, which
	// an output's name: registers it as.
	assetNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`)
	// computeNameRE is an Azure ML compute's name: letters, digits, '-'
	// and '_', starting with a letter.
	computeNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
)

// checkName reports a name: key written empty (Azure ML refuses a null or
// empty name); what is the file's kind, for the message.
func (p *parser) checkName(name string, f map[string]entry, what string) {
	e, ok := f["name"]
	if !ok || !isNull(e.val) && (e.val.Kind != yaml.ScalarNode || strings.TrimSpace(e.val.Value) != "") {
		return // a non-scalar is reported where it is read
	}
	p.errorf(nodePos(name, e.key), "write the "+what+"'s name, or remove name:", "%s name is empty", what)
}

// checkEnvironment reports a command component without environment:,
// which Azure ML requires (CommandComponentSchema): it is what the
// component's command runs in.
func (p *parser) checkEnvironment(c *componentAST, f map[string]entry) {
	if e, ok := f["environment"]; ok && !isNull(e.val) {
		return
	}
	p.errorf(c.Pos, "add environment:, such as environment: azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest or an inline image: "+
		"(a worker with --runtime host runs the command on its host, without the environment)", "command component has no environment: Azure ML requires one")
}

// checkOutputSettings checks an output's mode, asset name and
// early_available.
func (p *parser) checkOutputSettings(name string, o *outputAST, f map[string]entry) {
	if o.Mode != "" {
		low := strings.ToLower(o.Mode)
		if !contains(outputModes, low) {
			p.errorf(nodePos(name, f["mode"].val), withHint("use one of "+strings.Join(outputModes, ", "), suggest(low, outputModes)),
				"output %q has mode %q, which is no output mode", o.Name, o.Mode)
		}
		o.Mode = low
	}
	if s := p.scalar(name, f["name"]); s != nil && !assetNameRE.MatchString(s.Value) {
		p.errorf(s.Pos, "use letters, digits, '-', '_' and '.', starting with a letter or digit: Azure ML registers the output as a data asset of this name",
			"output %q has name %q, which is no data asset name", o.Name, s.Value)
	}
	early, control := f["early_available"], f["is_control"]
	if early.key != nil && p.boolean(name, early) && (control.key == nil || !p.boolean(name, control)) {
		p.errorf(nodePos(name, early.key), "add is_control: true (Azure ML makes only control outputs available early), or remove early_available:",
			"output %q is early_available but not is_control", o.Name)
	}
}

// checkComputeName reports a compute: or default_compute: that names no
// compute Azure ML could have: porch would make it a task queue's name.
func (p *parser) checkComputeName(s *scalarAST) {
	if s == nil || isWholeBinding(s.Value) {
		return
	}
	n := normalizeCompute(s.Value)
	if n == "" || computeNameRE.MatchString(n) {
		return
	}
	p.errorf(s.Pos, "name a compute: letters, digits, '-' and '_', starting with a letter, as in compute: azureml:cpu-cluster (or serverless)",
		"compute %q is not a compute name", s.Value)
}

// groupHelp is what to write instead of a parameter group.
const groupHelp = "porch does not support parameter groups: declare each member as an input of its own, named as Azure ML flattens it (%q), and bind that"

// groupRef reports a binding or command reference to a member of a
// parameter group (${{parent.inputs.group.x}}, ${{inputs.group.x}}) the
// pipeline or component does not declare flattened.
func groupRef(d *diags, pos plan.Pos, text, member string) {
	group, _, _ := strings.Cut(member, ".")
	d.errorf(pos, fmt.Sprintf(groupHelp, member), "%s refers to member %q of parameter group %q", text, member, group)
}

// Keys only a job has, not a component; and the $schema suffixes that say
// which a file is.
var (
	jobOnlyKeys     = []string{"compute", "experiment_name", "services", "queue_settings"}
	jobSchema       = "/commandJob.schema.json"
	componentSchema = "/commandComponent.schema.json"
)

// ComponentFile says whether a file's top-level mapping is a component
// rather than a job, as Azure ML reads it, and returns its type and name:
// a command or parallel component (a file with no type: and a command: is
// a command component, Azure ML's default), or a pipeline component (its
// $schema says so). A command job (its $schema says so, or it has keys
// only a job has, such as compute:) is not a component.
func ComponentFile(root *yaml.Node) (typ, name string, ok bool) {
	get := func(key string) string {
		if e := lookup(root, key); e != nil && !isNull(e.val) && e.val.Kind == yaml.ScalarNode {
			return strings.TrimSpace(e.val.Value)
		}
		return ""
	}
	typ, name = get("type"), get("name")
	switch {
	case strings.HasSuffix(get("$schema"), "/pipelineComponent.schema.json"):
		return "pipeline", name, true
	case typ == "parallel":
		return typ, name, true
	case typ != "command" && (typ != "" || lookup(root, "command") == nil || lookup(root, "jobs") != nil):
		return typ, name, false
	case isCommandJob(root):
		return "command", name, false
	}
	return "command", name, true
}

// isCommandJob reports whether a command file is a job, not a component.
func isCommandJob(root *yaml.Node) bool {
	if s := lookup(root, "$schema"); s != nil && !isNull(s.val) && s.val.Kind == yaml.ScalarNode {
		switch {
		case strings.HasSuffix(s.val.Value, jobSchema):
			return true
		case strings.HasSuffix(s.val.Value, componentSchema):
			return false
		}
	}
	for _, k := range jobOnlyKeys {
		if lookup(root, k) != nil {
			return true
		}
	}
	return false
}

// notPipeline reports a root file that is a command or parallel component
// or a command job, which porch runs only as a pipeline's step, and says
// whether it was one.
func (p *parser) notPipeline(name string, root *yaml.Node) bool {
	typ, _, isComponent := ComponentFile(root)
	pos := nodePos(name, root)
	if t := lookup(root, "type"); t != nil {
		pos = nodePos(name, t.val)
	}
	switch {
	case isComponent && typ != "pipeline":
		p.errorf(pos, "use it as a step of a pipeline job (type: pipeline, jobs: {train: {component: ./"+filepath.Base(name)+"}}); "+
			"porch validate checks a component file on its own", "file is a %s component, not a pipeline job", typ)
	case typ == "command":
		p.errorf(pos, "porch runs pipeline and sweep jobs: make the command a step of a pipeline job "+
			"(type: pipeline, jobs: {train: {command: ..., environment: ...}})", "file is a command job, not a pipeline job")
	default:
		return false
	}
	return true
}
