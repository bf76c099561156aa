package compiler

import (
	"context"
	"sort"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/userfile"
)

// Options tune a compilation.
type Options struct {
	// Set overrides what the root file says, as `az ml job create --set`:
	// keys like "inputs.x", "inputs.x.path", "settings.force_rerun" or
	// "jobs.train.compute" (from `porch run --set KEY=VALUE`; SetForms
	// lists them).
	Set map[string]string
	// ReadFile reads a file; nil means reading regular files only, up to
	// Limits.MaxFileBytes (userfile.Read). The only I/O the compiler does.
	ReadFile func(name string) ([]byte, error)
	// Limits bound what the compilation reads and builds; zero fields
	// take their defaults.
	Limits Limits
	// Catalog holds the data assets and components the porch server has
	// registered, which azureml:<name>:<version> and azureml:<name>@latest
	// references name, and its computes and instance types, which steps'
	// compute: and resources.instance_type must name when it has computes;
	// nil means none are registered.
	Catalog *plan.Catalog
	// DevServer says the catalogue is a porch dev server's, whose worker
	// runs the steps of every compute the catalogue does not hold: they
	// go to the default queue, as an embedded porch run's worker serves
	// every compute its plan names. Registered computes keep their queues.
	DevServer bool
}

// Compile compiles the Azure ML pipeline job YAML at path, with the
// component files it references, into a plan. The plan is nil when the
// diagnostics hold an error; warnings come back with a plan.
//
// Phases run in order (parse, check, graph, lower); each collects all its
// problems, sorted by position, and compilation stops after a phase that
// found an error.
func Compile(path string, opts Options) (*plan.Plan, Diagnostics) {
	return CompileContext(context.Background(), path, opts)
}

// CompileContext is Compile stopping early, with an error and no plan,
// when ctx is done: it looks at ctx between files, steps and phases.
func CompileContext(ctx context.Context, path string, opts Options) (*plan.Plan, Diagnostics) {
	p, diags := compile(ctx, path, opts)
	// Each phase is sorted; warnings of earlier phases interleave by position.
	sortDiagnostics(diags)
	return p, diags
}

func compile(ctx context.Context, path string, opts Options) (*plan.Plan, Diagnostics) {
	opts.Limits = opts.Limits.withDefaults()
	read := opts.ReadFile
	if read == nil {
		read = func(name string) ([]byte, error) { return userfile.Read(ctx, name, opts.Limits.MaxFileBytes) }
	}
	p := newParser(ctx, read, opts.Limits)
	p.root = path
	p.catalog = opts.Catalog
	// Root inputs' overrides are converted to the input's type when
	// lowered; the others change the YAML tree before parsing.
	opts.Set, p.sets = splitSets(opts.Set)
	p.inputSets = opts.Set
	var all Diagnostics
	stop := func(d *diags) bool {
		if p.stopped() && d != &p.diags {
			// Reported in the parser's list, which is not d.
			d.list = append(d.list, p.list...)
			p.list = nil
		}
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
		if p.stopped() {
			break
		}
		c.checkPipeline(pl)
	}
	c.checkInstanceTypes(p.instanceTypes)
	c.list = append(c.list, p.unknownEnvs...)
	if stop(&c.diags) {
		return nil, all
	}
	var g diags
	for _, pl := range pipelines {
		if p.stopped() {
			break
		}
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
	if opts.DevServer {
		unregisteredOnDefault(&out.Pipeline, opts.Catalog)
	}
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
