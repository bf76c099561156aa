package worker

import (
	"context"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
)

// hasPollers says whether a command step's queue has a worker
// (workflows.HasPollersName).
func (p serverAsks) hasPollers(ctx context.Context, queue string) (bool, error) {
	resp, err := p.client.DescribeTaskQueue(ctx, queue, enums.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return false, fmt.Errorf("describe task queue %q: %w", queue, err)
	}
	return len(resp.GetPollers()) > 0, nil
}
