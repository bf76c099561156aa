package compiler

import (
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Advice for registering computes and instance types.
const (
	registerCompute      = "porch compute create -f compute.yml"
	applyInstanceType    = "porch instance-type apply -f instance-types.yml"
	defaultComputeAdvice = " (or serverless)"
)

// checksComputes reports whether compute names are checked: only against
// a catalogue with computes registered. Without one, a compute name is just
// the task queue that workers started with --compute NAME serve.
func checksComputes(cat *plan.Catalog) bool {
	return cat != nil && len(cat.Computes) > 0
}

// checkCompute reports a literal compute name (compute: azureml:<name>,
// settings.default_compute) that the catalogue does not hold.
func (c *checker) checkCompute(s *scalarAST) {
	if s == nil || !checksComputes(c.catalog) || isWholeBinding(s.Value) {
		return
	}
	name := normalizeCompute(s.Value)
	if name == "" {
		return
	}
	if _, ok := c.catalog.FindCompute(name); ok {
		return
	}
	var known []string
	for _, x := range c.catalog.Computes {
		known = append(known, x.Name)
	}
	c.errorf(s.Pos, withHint("use one of "+list(known)+defaultComputeAdvice+", or register it with `"+registerCompute+"`",
		suggest(name, known)), "compute %q is not registered on the porch server", s.Value)
}

// instanceType reads resources.instance_type, keeping it for
// checkInstanceTypes.
func (p *parser) instanceType(name string, e entry) string {
	s := p.scalar(name, e)
	if s == nil {
		return ""
	}
	p.instanceTypes = append(p.instanceTypes, s)
	return s.Value
}

// checkInstanceTypes reports instance types the catalogue does not hold
// (defaultinstancetype always exists).
func (c *checker) checkInstanceTypes(refs []*scalarAST) {
	if !checksComputes(c.catalog) {
		return
	}
	var known []string
	for _, t := range c.catalog.AllInstanceTypes() {
		known = append(known, t.Name)
	}
	for _, s := range refs {
		if _, ok := c.catalog.FindInstanceType(s.Value); ok || isWholeBinding(s.Value) {
			continue
		}
		if _, vmSize := plan.SizeResources(s.Value); vmSize {
			continue // a serverless step's Azure VM size
		}
		c.errorf(s.Pos, withHint("use one of "+list(known)+", or apply it with `"+applyInstanceType+"`", suggest(s.Value, known)),
			"instance type %q is not applied on the porch server", s.Value)
	}
}

// sizeSteps fills each step's VM size and cores per instance from the
// registered compute it runs on, for quotas: an amlcompute's size and its
// vCPUs, or a kubernetes compute's instance type (the step's, else the
// compute's default) and its CPU request rounded up to whole cores, and
// the instance type's task queue, which routes the step. A step
// on an unregistered compute, or on a size porch cannot read, claims no
// quota.
func sizeSteps(p *plan.Pipeline, cat *plan.Catalog) {
	fill := func(compute string, r *plan.Resources) {
		c, ok := cat.FindCompute(compute)
		if !ok {
			return
		}
		switch c.Type {
		case plan.ComputeAML:
			r.Size = c.Size
			r.Cores, _ = plan.SizeCores(c.Size)
			r.LowPriority = c.Tier == plan.TierLowPriority
		case plan.ComputeKubernetes:
			name := r.InstanceType
			if name == "" {
				name = c.DefaultInstanceType
			}
			if t, ok := cat.InstanceTypeFor(name); ok {
				r.Cores = int((t.Requests.MilliCPU + 999) / 1000)
				r.TaskQueue = plan.InstanceTaskQueue(c.Name, t.Name)
			}
		}
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Command != nil {
			fill(s.Compute, &s.Command.Resources)
		}
		if s.Parallel != nil {
			fill(s.Compute, &s.Parallel.Resources)
		}
		if s.Pipeline != nil {
			sizeSteps(s.Pipeline, cat)
		}
	}
}

// unregisteredOnDefault routes the command, parallel and sweep steps of
// computes cat does not hold to the default queue (Options.DevServer).
func unregisteredOnDefault(p *plan.Pipeline, cat *plan.Catalog) {
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Compute != "" && !registered(cat, s.Compute) {
			for _, r := range []*plan.Resources{commandResources(s), parallelResources(s)} {
				if r != nil && r.TaskQueue == "" {
					r.TaskQueue = plan.DefaultTaskQueue
				}
			}
		}
		if s.Pipeline != nil {
			unregisteredOnDefault(s.Pipeline, cat)
		}
	}
}

func commandResources(s *plan.Step) *plan.Resources {
	if s.Command == nil {
		return nil
	}
	return &s.Command.Resources
}

func parallelResources(s *plan.Step) *plan.Resources {
	if s.Parallel == nil {
		return nil
	}
	return &s.Parallel.Resources
}

func registered(cat *plan.Catalog, compute string) bool {
	if cat == nil {
		return false
	}
	_, ok := cat.FindCompute(compute)
	return ok
}
