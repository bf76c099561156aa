package workflows

import (
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TestStartedWithoutPorchTakesItsWorkflowID runs the input porch compile -o
// start-input prints, started as a plain Temporal client does: no run id,
// no search attributes. The workflow id becomes the run id, in step ids and
// output paths, and the run upserts porch's attributes.
func (s *PipelineSuite) TestStartedWithoutPorchTakesItsWorkflowID() {
	p := s.compile("diamond.yaml")
	p.Settings.SubmittedBy = "alice@example.com"
	s.onCommand(nil, nil)
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "from-temporal"})
	var upserted temporal.SearchAttributes
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		upserted = args.Get(0).(temporal.SearchAttributes)
	}).Return(nil).Once()
	s.env.ExecuteWorkflow(PipelineName, NewPipelineInput(p, ""))
	s.Require().NoError(s.env.GetWorkflowError())

	s.Equal("azureml://datastores/workspaceblobstore/paths/azureml/from-temporal/a/out/", s.calls["a"].Outputs[0].Path)
	s.Equal("from-temporal", s.calls["a"].RunID)
	s.Equal("from-temporal/a", s.states()["a"].WorkflowID)
	want := map[temporal.SearchAttributeKeyKeyword]string{
		keyRun: "from-temporal", keyPipeline: "diamond", keyUser: "alice@example.com", keyStepType: "pipeline",
	}
	for k, v := range want {
		got, ok := upserted.GetKeyword(k)
		s.True(ok && got == v, "%s = %q, want %q", k.GetName(), got, v)
	}
	_, ok := upserted.GetKeyword(keyStep)
	s.False(ok, "a root run has no step attribute: porch job list lists it")
}

// TestStartedByPorchKeepsItsHistory starts a run as porch's client does,
// run id and attributes set: the run records no version marker and upserts
// nothing, so its history is what it was before runs could start without
// porch.
func (s *PipelineSuite) TestStartedByPorchKeepsItsHistory() {
	p := s.compile("diamond.yaml")
	p.Settings.SubmittedBy = "alice@example.com"
	s.onCommand(nil, nil)
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "diamond-run1"})
	s.Require().NoError(s.env.SetTypedSearchAttributesOnStart(
		runAttributes(runKeys{"diamond-run1", p.Name, p.ExperimentName, p.Settings.SubmittedBy})))
	var versioned, upserted bool
	s.env.OnGetVersion(startedChange, workflow.DefaultVersion, 1).Run(func(mock.Arguments) { versioned = true }).
		Return(workflow.Version(1)).Maybe()
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(mock.Arguments) { upserted = true }).Return(nil).Maybe()
	s.env.ExecuteWorkflow(PipelineName, NewPipelineInput(p, "diamond-run1"))
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal("diamond-run1/a", s.states()["a"].WorkflowID)
	s.False(versioned, "a run porch started records no %s marker", startedChange)
	s.False(upserted, "a run porch started upserts no search attributes")
}
