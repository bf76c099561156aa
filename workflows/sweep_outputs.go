package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/activities/stepio"
	sweepacts "github.com/porch-pipelines/porch/activities/sweep"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// sweepOutputsChange is the GetVersion id of sweeps whose outputs name a
// path: version 1 copies the best trial's outputs there
// (PublishSweepOutputs) and reports them there, where DefaultVersion
// reported the best trial's own folders and left the path empty.
const sweepOutputsChange = "sweep-output-path"

// publishTimeout bounds copying a sweep's outputs, which may be models of
// any size; the activity heartbeats while it copies.
const publishTimeout = 6 * time.Hour

// publish returns the sweep's outputs: the best trial's, except those the
// step gives a path, which get a copy of the best trial's and are there.
func (s *sweepRun) publish(ctx workflow.Context, best int) ([]OutputLocation, error) {
	trial := s.st.Trials[best].Outputs
	var copies []sweepacts.OutputCopy
	for _, o := range s.in.Outputs {
		if o.Path == "" || o.Name == plan.ArtifactsOutput {
			continue
		}
		for _, t := range trial {
			if t.Name == o.Name {
				copies = append(copies, sweepacts.OutputCopy{Name: o.Name, From: t.URI, To: o.Path})
			}
		}
	}
	// Sweeps without a path record no marker, so their histories stay as
	// they were.
	if len(copies) == 0 || workflow.GetVersion(ctx, sweepOutputsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return trial, nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             fmt.Sprintf("publish trial %d's outputs", best),
		TaskQueue:           plan.DefaultTaskQueue,
		StartToCloseTimeout: publishTimeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{stepio.InvalidStepType}},
	})
	in := sweepacts.PublishSweepOutputsInput{StepPath: s.in.Step.Path, Trial: best, Outputs: copies}
	if err := workflow.ExecuteActivity(actx, sweepacts.PublishSweepOutputsName, in).Get(ctx, nil); err != nil {
		return nil, err
	}
	out := make([]OutputLocation, len(trial))
	for i, t := range trial {
		out[i] = t
		for _, c := range copies {
			if c.Name == t.Name {
				out[i].URI = c.To
			}
		}
	}
	return out, nil
}
