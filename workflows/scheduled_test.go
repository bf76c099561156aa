package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// scheduledPlan is diamond with its greeting set as a scheduled job's
// input may be: the run's name and when the schedule fired.
func (s *PipelineSuite) scheduledPlan() *plan.Plan {
	p := s.compile("diamond.yaml")
	for i, in := range p.Pipeline.Inputs {
		if in.Name == "greeting" {
			p.Pipeline.Inputs[i].Value.Literal = "run " + plan.ScheduledRunName + " fired " + plan.ScheduledTriggerTime
		}
	}
	return p
}

// TestScheduledRunFillsItsInputs starts a run as a schedule does: no run
// id, the schedule's search attributes set. Its input names the run and
// the time the schedule fired.
func (s *PipelineSuite) TestScheduledRunFillsItsInputs() {
	p := s.scheduledPlan()
	s.onCommand(nil, nil)
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "nightly-2027-03-14T09:00:00Z"})
	fired := time.Date(2027, 3, 14, 9, 0, 0, 0, time.UTC)
	s.Require().NoError(s.env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		keyScheduledBy.ValueSet("nightly"), keyScheduledStart.ValueSet(fired))))
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Maybe()
	s.env.ExecuteWorkflow(PipelineName, NewPipelineInput(p, ""))
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal("run nightly-2027-03-14T09:00:00Z fired 2027-03-14T09:00:00Z", s.calls["a"].Inputs[0].Value.Literal)
}

// TestUnscheduledRunKeepsItsInputs: a run no schedule started keeps the
// references as written, and records no marker.
func (s *PipelineSuite) TestUnscheduledRunKeepsItsInputs() {
	p := s.scheduledPlan()
	s.onCommand(nil, nil)
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "by-hand"})
	var versioned bool
	s.env.OnGetVersion(scheduledChange, workflow.DefaultVersion, 1).Run(func(mock.Arguments) { versioned = true }).
		Return(workflow.Version(1)).Maybe()
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Maybe()
	s.env.ExecuteWorkflow(PipelineName, NewPipelineInput(p, "by-hand"))
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal("run ${{name}} fired ${{creation_context.trigger_time}}", s.calls["a"].Inputs[0].Value.Literal)
	s.False(versioned, "a run no schedule started records no %s marker", scheduledChange)
}
