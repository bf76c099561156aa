package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// statusAttribute says whether the server has PorchStatus registered
// (workflows.StatusRegisteredName, a local activity of the workflow
// workers). A yes is kept; a no is asked again after a minute, so
// registering it takes effect without restarting workers.
type statusAttribute struct {
	client client.Client
	mu     sync.Mutex
	yes    bool
	asked  time.Time
}

func (s *statusAttribute) register(w sdkworker.ActivityRegistry) {
	w.RegisterActivityWithOptions(s.registered, activity.RegisterOptions{Name: workflows.StatusRegisteredName})
}

func (s *statusAttribute) registered(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.yes || time.Since(s.asked) < time.Minute {
		return s.yes, nil
	}
	resp, err := s.client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{
		Namespace: activity.GetInfo(ctx).Namespace,
	})
	if err != nil {
		return false, fmt.Errorf("list the server's search attributes: %w", err)
	}
	_, s.yes = resp.GetCustomAttributes()[workflows.AttrStatus]
	s.asked = time.Now()
	return s.yes, nil
}
