package worker

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// serverAsks are the local activities through which workflows ask the
// Temporal server what they cannot see themselves: who ended a step
// (stepEnd), which pools have a quota (withQuota), whether a queue has a
// worker (hasPollers), which of a quota's claimants ended
// (endedClaimants); and the one through which a reset run ends the steps
// its earlier execution left running (endEarlierChild). Workflow workers
// register them.
type serverAsks struct {
	client client.Client
}

func (s serverAsks) register(w sdkworker.ActivityRegistry) {
	w.RegisterActivityWithOptions(s.stepEnd, activity.RegisterOptions{Name: workflows.DescribeStepEndName})
	w.RegisterActivityWithOptions(s.withQuota, activity.RegisterOptions{Name: workflows.QuotaPoolsName})
	w.RegisterActivityWithOptions(s.hasPollers, activity.RegisterOptions{Name: workflows.HasPollersName})
	w.RegisterActivityWithOptions(s.endedClaimants, activity.RegisterOptions{Name: workflows.EndedClaimantsName})
	w.RegisterActivityWithOptions(s.endEarlierChild, activity.RegisterOptions{Name: workflows.EndEarlierChildName})
}
