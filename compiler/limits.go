package compiler

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// Limits bound what one compilation reads and builds, so that no input,
// however hostile, makes porch run out of memory or time. Each is checked
// while the pipeline is read and expanded, before it could grow past it. A
// field of zero (or less) takes its value in DefaultLimits.
//
// The porch command reads them from the environment variables named in
// their comments; the messages of a limit reached name the variable.
type Limits struct {
	// MaxFileBytes bounds the size of each file read (PORCH_MAX_FILE_BYTES).
	MaxFileBytes int64
	// MaxTotalBytes bounds the pipeline and component files read in all,
	// each counted once (PORCH_MAX_TOTAL_BYTES).
	MaxTotalBytes int64
	// MaxSteps bounds the steps of the expanded plan, nested ones included:
	// a pipeline component's steps count once for every step that uses it
	// (PORCH_MAX_STEPS).
	MaxSteps int
	// MaxDepth bounds how deep pipeline components nest in pipeline
	// components (PORCH_MAX_DEPTH).
	MaxDepth int
	// MaxInputs bounds the inputs of one step, component or pipeline, and
	// separately their outputs (PORCH_MAX_INPUTS).
	MaxInputs int
	// MaxPlanInputs bounds the inputs of all the steps of the expanded plan
	// (PORCH_MAX_PLAN_INPUTS).
	MaxPlanInputs int
	// MaxAliasNodes bounds the YAML nodes the aliases (*name) of one file
	// repeat, counting aliases within repeated nodes each time
	// (PORCH_MAX_ALIAS_NODES).
	MaxAliasNodes int
	// MaxYAMLNodes bounds the YAML nodes of the pipeline and component
	// files read in all, each counted once, before they are decoded
	// (PORCH_MAX_YAML_NODES): yaml.v3 builds a file's whole tree, about
	// 200 bytes a node, before porch can look at it.
	MaxYAMLNodes int
}

// DefaultLimits are generous for real pipelines: the largest Azure ML
// examples have a few dozen steps, three levels of pipeline components and
// a few dozen inputs a step.
var DefaultLimits = Limits{
	MaxFileBytes:  userfile.DefaultMaxBytes,
	MaxTotalBytes: 64 << 20,
	MaxSteps:      10_000,
	MaxDepth:      20,
	MaxInputs:     1_000,
	MaxPlanInputs: 100_000,
	MaxAliasNodes: 100_000,
	MaxYAMLNodes:  1_000_000,
}

// The environment variables the porch command reads Limits from.
const (
	EnvMaxFileBytes  = "PORCH_MAX_FILE_BYTES"
	EnvMaxTotalBytes = "PORCH_MAX_TOTAL_BYTES"
	EnvMaxSteps      = "PORCH_MAX_STEPS"
	EnvMaxDepth      = "PORCH_MAX_DEPTH"
	EnvMaxInputs     = "PORCH_MAX_INPUTS"
	EnvMaxPlanInputs = "PORCH_MAX_PLAN_INPUTS"
	EnvMaxAliasNodes = "PORCH_MAX_ALIAS_NODES"
	EnvMaxYAMLNodes  = "PORCH_MAX_YAML_NODES"
)

// withDefaults fills the fields left at zero.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxInputs <= 0 {
		l.MaxInputs = d.MaxInputs
	}
	if l.MaxPlanInputs <= 0 {
		l.MaxPlanInputs = d.MaxPlanInputs
	}
	if l.MaxAliasNodes <= 0 {
		l.MaxAliasNodes = d.MaxAliasNodes
	}
	if l.MaxYAMLNodes <= 0 {
		l.MaxYAMLNodes = d.MaxYAMLNodes
	}
	return l
}

// raise is the detail of a limit's message: what to do, and how to raise
// the limit for a pipeline meant to be that large.
func raise(what, env string) string {
	return what + ", or raise the limit with " + env + "=N if the pipeline is meant to be this large"
}

// halt reports a reached limit and stops the compilation: the phases that
// expand the pipeline check halted and return. Only the first limit
// reached is reported.
func (p *parser) halt(pos plan.Pos, detail, format string, args ...any) {
	if p.halted {
		return
	}
	p.halted = true
	p.errorf(pos, detail, format, args...)
}

// stopped reports whether the compilation must stop: a limit was reached,
// or its context is done (reported once, at the root file).
func (p *parser) stopped() bool {
	if p.halted {
		return true
	}
	if err := p.ctx.Err(); err != nil {
		p.halt(plan.Pos{File: p.root}, "", "compilation stopped: %v", err)
		return true
	}
	return false
}

// countStep counts one more step of the AST (parse) or of the plan
// (lower), at pos, and says whether it is within MaxSteps. The AST never
// holds more steps than the plan, so a limit reached while parsing is one
// the plan would reach.
func (p *parser) countStep(count *int, pos plan.Pos, path string) bool {
	if p.stopped() {
		return false
	}
	*count++
	if *count <= p.limits.MaxSteps {
		return true
	}
	p.halt(pos, raise("pipeline components count once for every step that uses them: use fewer or smaller ones", EnvMaxSteps),
		"the pipeline has more than %d steps (step %q is one too many)", p.limits.MaxSteps, path)
	return false
}

// checkDepth says whether a pipeline component at depth (1 for one used
// by a step of the root pipeline) is within MaxDepth, reporting it at pos
// when it is not.
func (p *parser) checkDepth(depth int, pos plan.Pos, what string) bool {
	if depth <= p.limits.MaxDepth {
		return true
	}
	p.halt(pos, raise("flatten the pipeline components", EnvMaxDepth),
		"%s nests pipeline components more than %d deep", what, p.limits.MaxDepth)
	return false
}

// tooMany checks the size of an inputs: or outputs: mapping (what) against
// MaxInputs, reporting the first entry past it.
func (p *parser) tooMany(name string, list []entry, what string) bool {
	if len(list) <= p.limits.MaxInputs {
		return false
	}
	p.halt(nodePos(name, list[p.limits.MaxInputs].key), raise("split the step", EnvMaxInputs),
		"%s has more than %d entries: porch takes at most %d a step, component or pipeline",
		what, p.limits.MaxInputs, p.limits.MaxInputs)
	return true
}

// countYAMLNodes counts a file's YAML nodes against what is left of
// MaxYAMLNodes, before it is decoded, and says whether it is within: past
// it, the compilation stops at the node that passed it.
func (p *parser) countYAMLNodes(name string, data []byte) bool {
	left := p.limits.MaxYAMLNodes - p.nodes
	n, at := countNodes(data, left)
	if at < 0 {
		p.nodes += n
		return true
	}
	summary := fmt.Sprintf("%q holds more than %d YAML nodes", name, p.limits.MaxYAMLNodes)
	if p.nodes > 0 {
		summary = fmt.Sprintf("the pipeline's files hold more than %d YAML nodes in all (%q is one too many)", p.limits.MaxYAMLNodes, name)
	}
	p.halt(offsetPos(name, data, at), raise(tooManyNodes, EnvMaxYAMLNodes), "%s", summary)
	return false
}

// tooManyNodes is what to do about a file with too many YAML nodes.
const tooManyNodes = "pipeline and component files hold a few thousand: check that it is the file you meant, " +
	"and move long lists of values into a data file an input names"

// checkNodes is countYAMLNodes for a file decoded on its own.
func checkNodes(d *diags, name string, data []byte, max int) bool {
	if _, at := countNodes(data, max); at >= 0 {
		d.errorf(offsetPos(name, data, at), raise(tooManyNodes, EnvMaxYAMLNodes), "%q holds more than %d YAML nodes", name, max)
		return false
	}
	return true
}

// aliasBudget counts the YAML nodes a file's aliases repeat, to refuse a
// few lines whose aliases of aliases expand to millions of nodes (or
// without end, through an alias inside its own anchor) before anything
// walks the expansion.
type aliasBudget struct {
	max int
	// size memoises the expanded size of anchored nodes; -1 marks one
	// being measured, so an alias inside its own anchor is a cycle.
	size     map[*yaml.Node]int
	repeated int
}

// checkAliases reports, at the alias that reaches it, a file whose aliases
// repeat more than max nodes, and says whether the file is within it.
func checkAliases(d *diags, name string, root *yaml.Node, max int) bool {
	b := &aliasBudget{max: max, size: map[*yaml.Node]int{}}
	if at := b.walk(root, 0); at != nil {
		summary := "YAML aliases repeat more than %d nodes"
		if b.repeated < 0 {
			summary = "YAML alias %q is inside its own anchor, so it repeats without end"
			d.errorf(nodePos(name, at), "refer to the anchor from outside it", summary, at.Value)
			return false
		}
		d.errorf(nodePos(name, at), raise("each *alias repeats its whole anchor, aliases within it included: "+
			"use fewer aliases or smaller anchors", EnvMaxAliasNodes), summary, max)
		return false
	}
	return true
}

// walk visits the nodes of the file as written, adding what each alias
// repeats; it returns the alias where the count passed max, nil if none.
func (b *aliasBudget) walk(n *yaml.Node, depth int) *yaml.Node {
	if n == nil || depth > maxNodeDepth {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		s := b.expanded(n.Alias, depth)
		if s < 0 {
			b.repeated = -1
			return n
		}
		b.repeated += s
		if b.repeated > b.max {
			return n
		}
		return nil
	}
	for _, c := range n.Content {
		if at := b.walk(c, depth+1); at != nil {
			return at
		}
	}
	return nil
}

// maxNodeDepth bounds the recursion over a node tree; yaml.v3 refuses
// deeper documents before this.
const maxNodeDepth = 10_000

// expanded is the number of nodes n stands for with its aliases
// replaced by what they name, at most max+1; -1 for a cycle.
func (b *aliasBudget) expanded(n *yaml.Node, depth int) int {
	if n == nil || depth > maxNodeDepth {
		return 0
	}
	if s, ok := b.size[n]; ok {
		return s
	}
	b.size[n] = -1
	total := 1
	for _, c := range n.Content {
		target := c
		if c.Kind == yaml.AliasNode {
			target = c.Alias
		}
		s := b.expanded(target, depth+1)
		if s < 0 {
			return -1
		}
		total = min(total+s, b.max+1)
	}
	b.size[n] = total
	return total
}
