package compiler

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Keys of a command component.
var (
	componentKeys = []string{"$schema", "type", "name", "version", "display_name", "description", "tags",
		"inputs", "outputs", "command", "code", "environment", "environment_variables", "resources",
		"distribution", "limits", "is_deterministic"}
	componentSilent = []string{"properties", "identity", "services", "creation_context", "id",
		"additional_includes", "instance_count", "latest_version", "queue_settings"}
)

// remoteRef reports whether a component or data reference names an asset in
// a workspace or registry rather than a local file.
func remoteRef(ref string) bool {
	if strings.HasPrefix(ref, "azureml://datastores/") {
		return false
	}
	return strings.HasPrefix(ref, "azureml:")
}

// parseComponentRef loads the component a component: key names: a file
// path (optionally file:-prefixed) or an inline mapping.
func (p *parser) parseComponentRef(name string, e entry) *componentAST {
	v := e.val
	switch {
	case isNull(v):
		p.errorf(nodePos(name, e.key), "name a component file (./component.yml) or write the component inline", "component is empty")
		return nil
	case v.Kind == yaml.MappingNode:
		return p.parseComponent(name, v)
	case v.Kind != yaml.ScalarNode:
		p.errorf(nodePos(name, v), "name a component file (./component.yml) or write the component inline", "component must be a file name or a mapping, found %s", kindName(v))
		return nil
	}
	ref := strings.TrimSpace(v.Value)
	if remoteRef(ref) {
		if c, ok := p.catalogComponent(name, v, ref); ok {
			return c
		}
		summary, detail := foreignRef("component", ref, "porch resolves local files and components registered with "+registerComponent+
			": point component: at a local .yml file or at azureml:<name>:<version>")
		p.errorf(nodePos(name, v), detail, "%s", summary)
		return nil
	}
	file := componentFile(name, ref)
	if c, ok := p.components[file]; ok {
		return c
	}
	if p.loading[file] {
		p.errorf(nodePos(name, v), "a pipeline component cannot contain itself", "component %q uses itself", ref)
		return nil
	}
	root := p.load(file, nodePos(name, v))
	if root != nil && p.notComponent(file, nodePos(name, v), root) {
		root = nil
	}
	if root == nil {
		p.components[file] = nil
		return nil
	}
	p.loading[file] = true
	c := p.parseComponent(file, root)
	delete(p.loading, file)
	p.components[file] = c
	return c
}

// notComponent reports, once, at the reference, a component file none of
// whose top-level keys a component has: a text file named by mistake,
// which YAML may read as a mapping whose keys are its lines. Its keys are
// not shown, as unknown keys would be: they may be the file's secrets.
func (p *parser) notComponent(file string, at plan.Pos, root *yaml.Node) bool {
	list := entries(root)
	for _, e := range list {
		k := e.key.Value
		if contains(componentKeys, k) || contains(componentSilent, k) || contains(pipelineKeys, k) ||
			contains(parallelComponentKeys, k) || k == "nodes" || k == "flow" {
			return false
		}
	}
	p.errorf(at, "point component: at a component YAML file, with keys such as type:, inputs:, and command: or jobs:",
		"referenced file %q is not a component: none of its %d top-level keys is a component key", file, len(list))
	return true
}

// componentType works out a component's type: written, or guessed from its
// keys (a prompt flow has nodes:, a prompt flow run flow:, a pipeline jobs:).
func componentType(n *yaml.Node) (string, *yaml.Node) {
	if t := lookup(n, "type"); t != nil && !isNull(t.val) {
		return t.val.Value, t.val
	}
	switch {
	case lookup(n, "nodes") != nil || lookup(n, "flow") != nil:
		return "flow", nil
	case lookup(n, "jobs") != nil:
		return "pipeline", nil
	}
	return "command", nil
}

// parseComponent parses a component file or inline component.
func (p *parser) parseComponent(name string, n *yaml.Node) *componentAST {
	c := &componentAST{File: name, Dir: p.absDir(name), Pos: nodePos(name, n)}
	typ, tn := componentType(n)
	pos := c.Pos
	if tn != nil {
		pos = nodePos(name, tn)
	}
	if !p.checkKind(pos, "component", typ) {
		return nil
	}
	c.Type = plan.StepType(typ)
	if c.Type == plan.StepPipeline {
		if !p.checkDepth(p.depth+1, c.Pos, "this pipeline component") {
			return nil
		}
		p.depth++
		c.Pipeline = p.parsePipeline(name, n, false)
		p.depth--
		c.Inputs, c.Outputs = c.Pipeline.Inputs, c.Pipeline.Outputs
		c.NotDeterministic = c.Pipeline.NotDeterministic
		if c.Pipeline.DisplayName != nil {
			c.DisplayName = c.Pipeline.DisplayName.Value
		}
		return c
	}
	if c.Type == plan.StepParallel {
		return p.parseParallelComponent(c, name, n)
	}
	f := p.fields(name, n, "component", componentKeys, componentSilent)
	p.checkName(name, f, "component")
	p.checkEnvironment(c, f)
	if _, ok := f["additional_includes"]; ok {
		p.warnf(nodePos(name, f["additional_includes"].key), "copy the files into the code folder instead", "additional_includes is ignored by porch")
	}
	c.DisplayName = p.str(name, f["display_name"])
	c.NotDeterministic = p.notDeterministic(name, f)
	if e, ok := f["inputs"]; ok {
		c.Inputs = p.parseInputs(name, e.val, ctxDecl)
	}
	if e, ok := f["outputs"]; ok {
		c.Outputs = p.parseOutputs(name, e.val)
	}
	c.Command = p.parseCommand(name, f, true)
	if _, ok := f["command"]; !ok {
		p.errorf(c.Pos, "add command: with the command line to run", "command component has no command")
	}
	return c
}

// notDeterministic reads is_deterministic: false, which keeps a step from
// reusing an earlier run's outputs.
func (p *parser) notDeterministic(name string, f map[string]entry) bool {
	e, ok := f["is_deterministic"]
	return ok && !isNull(e.val) && !p.boolean(name, e)
}
