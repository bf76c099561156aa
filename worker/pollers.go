package worker

import (
	"context"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// pollerCheck answers workflows.HasPollersName, a local activity of the
// workflow workers: does a command step's queue have a worker?
type pollerCheck struct{ client client.Client }

func (p pollerCheck) register(w sdkworker.Worker) {
	w.RegisterActivityWithOptions(p.hasPollers, activity.RegisterOptions{Name: workflows.HasPollersName})
}

func (p pollerCheck) hasPollers(ctx context.Context, queue string) (bool, error) {
	resp, err := p.client.DescribeTaskQueue(ctx, queue, enums.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return false, fmt.Errorf("describe task queue %q: %w", queue, err)
	}
	return len(resp.GetPollers()) > 0, nil
}
