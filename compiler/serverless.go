package compiler

import "github.com/porch-pipelines/porch/compiler/plan"

// serverlessSteps marks the command and parallel steps of the default
// compute (compute omitted, serverless, azureml:serverless) that run on an
// instance type: those compiled against a porch server's catalogue, and
// those naming resources.instance_type. A step naming an instance type of
// the catalogue runs on its serverless queue as is; any other carries the
// requests porch fits a live worker's instance type to when it runs (an
// Azure VM size's, else defaultinstancetype's). Without a catalogue and
// without an instance type, or naming one porch knows nothing of, a step
// stays on the default queue.
func serverlessSteps(p *plan.Pipeline, cat *plan.Catalog) {
	mark := func(r *plan.Resources) {
		if cat == nil && r.InstanceType == "" {
			return
		}
		s, override, ok := plan.ServerlessFor(cat, r.InstanceType)
		switch {
		case !ok:
		case override != "":
			r.TaskQueue = plan.ServerlessTaskQueue(override)
		default:
			r.Serverless = s
		}
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		switch {
		case s.Compute != "":
		case s.Command != nil:
			mark(&s.Command.Resources)
		case s.Parallel != nil:
			mark(&s.Parallel.Resources)
		}
		if s.Pipeline != nil {
			serverlessSteps(s.Pipeline, cat)
		}
	}
}
