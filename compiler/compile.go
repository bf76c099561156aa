package compiler

import (
	"os"
	"sort"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Options tune a compilation.
type Options struct {
	// Set overrides pipeline inputs: keys like "inputs.x" (from `porch run --set inputs.x=v`).
	Set map[string]string
	// ReadFile reads a file; nil means os.ReadFile. The only I/O the compiler does.
	ReadFile func(name string) ([]byte, error)
	// Catalog holds the data assets and components the porch server has
	// registered, which azureml:<name>:<version> and azureml:<name>@latest
	// references name, and its computes and instance types, which steps'
	// compute: and resources.instance_type must name when it has computes;
	// nil means none are registered.
	Catalog *plan.Catalog
}

// Compile compiles the Azure ML pipeline job YAML at path, with the
// component files it references, into a plan. The plan is nil when the
// diagnostics hold an error; warnings come back with a plan.
//
// Phases run in order (parse, check, graph, lower); each collects all its
// problems, sorted by position, and compilation stops after a phase that
// found an error.
func Compile(path string, opts Options) (*plan.Plan, Diagnostics) {
	p, diags := compile(path, opts)
	// Each phase is sorted; warnings of earlier phases interleave by position.
	sortDiagnostics(diags)
	return p, diags
}

func compile(path string, opts Options) (*plan.Plan, Diagnostics) {
	read := opts.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	p := newParser(read)
	p.catalog = opts.Catalog
	var all Diagnostics
	stop := func(d *diags) bool {
		phase := dedupe(d.list)
		sortDiagnostics(phase)
		all = append(all, phase...)
		d.list = nil
		return phase.HasErrors()
	}
	root := p.parseRoot(path)
	if stop(&p.diags) || root == nil {
		return nil, all
	}
	c := newChecker(root, opts.Set)
	c.readFile = read
	c.catalog = opts.Catalog
	pipelines := collectPipelines(root)
	for _, pl := range pipelines {
		c.checkPipeline(pl)
	}
	c.checkInstanceTypes(p.instanceTypes)
	if stop(&c.diags) {
		return nil, all
	}
	var g diags
	for _, pl := range pipelines {
		orderSteps(&g, pl)
	}
	if stop(&g) {
		return nil, all
	}
	l := &lowerer{parser: p, opts: opts}
	out := l.lowerRoot(root, path)
	if stop(&p.diags) {
		return nil, all
	}
	if checksComputes(opts.Catalog) {
		sizeSteps(&out.Pipeline, opts.Catalog)
	}
	serverlessSteps(&out.Pipeline, opts.Catalog)
	return out, all
}

// collectPipelines lists the root and every pipeline component reachable
// from it, each once, parents first.
func collectPipelines(root *pipelineAST) []*pipelineAST {
	var out []*pipelineAST
	seen := map[*pipelineAST]bool{}
	var walk func(pl *pipelineAST)
	walk = func(pl *pipelineAST) {
		if pl == nil || seen[pl] {
			return
		}
		seen[pl] = true
		out = append(out, pl)
		if pl.Component != nil {
			walk(pl.Component.Pipeline)
		}
		for _, s := range pl.Steps {
			if s.Component != nil && s.Component.Type == plan.StepPipeline {
				walk(s.Component.Pipeline)
			}
		}
	}
	walk(root)
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
