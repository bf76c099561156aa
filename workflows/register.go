package workflows

import (
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers porch's workflows under their stable names.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(withStatus(Pipeline), workflow.RegisterOptions{Name: PipelineName})
	r.RegisterWorkflowWithOptions(withStatus(CommandStep), workflow.RegisterOptions{Name: CommandStepName})
	r.RegisterWorkflowWithOptions(withStatus(ParallelStep), workflow.RegisterOptions{Name: ParallelStepName})
	r.RegisterWorkflowWithOptions(withStatus(SweepStep), workflow.RegisterOptions{Name: SweepStepName})
	r.RegisterWorkflowWithOptions(ReusedStep, workflow.RegisterOptions{Name: ReusedStepName})
	r.RegisterWorkflowWithOptions(Catalog, workflow.RegisterOptions{Name: CatalogName})
	r.RegisterWorkflowWithOptions(Quota, workflow.RegisterOptions{Name: QuotaName})
	r.RegisterWorkflowWithOptions(PlanStore, workflow.RegisterOptions{Name: PlanStoreName})
}

var (
	keyRun        = temporal.NewSearchAttributeKeyKeyword(AttrRun)
	keyPipeline   = temporal.NewSearchAttributeKeyKeyword(AttrPipeline)
	keyExperiment = temporal.NewSearchAttributeKeyKeyword(AttrExperiment)
	keyStep       = temporal.NewSearchAttributeKeyKeyword(AttrStep)
	keyStepType   = temporal.NewSearchAttributeKeyKeyword(AttrStepType)
	keyCompute    = temporal.NewSearchAttributeKeyKeyword(AttrCompute)
	keyUser       = temporal.NewSearchAttributeKeyKeyword(AttrUser)
)

// SearchAttributes returns the search attributes porch sets, to register on
// a server.
func SearchAttributes() map[string]enums.IndexedValueType {
	return map[string]enums.IndexedValueType{
		AttrRun:        enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrPipeline:   enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrExperiment: enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrStep:       enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrStepType:   enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrCompute:    enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrUser:       enums.INDEXED_VALUE_TYPE_KEYWORD,
		AttrStatus:     enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
}
