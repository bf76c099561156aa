package worker

import (
	"context"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// serverlessCompute names the default compute in a worker's messages, as
// `porch worker --compute serverless` does.
var serverlessCompute = plan.Compute{Name: "serverless"}

// livePoller is how recently a serverless queue must have been polled for
// its instance type to count as live. A worker whose capacity is taken
// stops polling until a step ends, so this is the server's own memory of
// pollers (five minutes) rather than one long poll.
const livePoller = 5 * time.Minute

// serverlessQueues are the serverless instance-type queues a worker of the
// default compute serves (serveTypes). Unlike a kubernetes compute's, none
// to serve is no error: the worker still serves the default queue.
func serverlessQueues(cat *plan.Catalog, named []string, labels []plan.Label, capacity plan.ResourceList) ([]queue, error) {
	var types []plan.InstanceType
	if len(named) > 0 {
		var err error
		if types, err = serveTypes(cat, serverlessCompute, named, labels, capacity); err != nil {
			return nil, err
		}
	} else {
		for _, t := range cat.AllInstanceTypes() {
			if _, missing := missingLabel(serverlessCompute, t, labels); !missing && fits(plan.NeedOf(t), capacity) {
				types = append(types, t)
			}
		}
	}
	out := make([]queue, 0, len(types))
	for _, t := range types {
		need := plan.NeedOf(t)
		out = append(out, queue{name: plan.ServerlessTaskQueue(t.Name), need: &need, instanceType: t})
	}
	return out, nil
}

// serverlessChooser picks serverless steps' instance types from the live
// workers' (workflows.ChooseInstanceTypeName, a local activity of the
// workflow workers).
type serverlessChooser struct {
	client client.Client
	// catalog is the worker's fixed catalogue (an embedded run's); nil
	// reads the server's at each choice, so newly applied types count.
	catalog *plan.Catalog
}

// register registers the chooser on a workflow worker.
func (s *serverlessChooser) register(w sdkworker.ActivityRegistry) {
	w.RegisterActivityWithOptions(s.choose, activity.RegisterOptions{Name: workflows.ChooseInstanceTypeName})
}

// choose lists the catalogue's instance types whose serverless queue has
// a live poller and whose requests cover the step's, cheapest first, and
// returns the first.
func (s *serverlessChooser) choose(ctx context.Context, need plan.ResourceList) (workflows.InstanceTypeChoice, error) {
	var choice workflows.InstanceTypeChoice
	cat := s.catalog
	if cat == nil {
		c, err := workflows.GetCatalog(ctx, s.client)
		if err != nil {
			return choice, fmt.Errorf("read the porch server's catalogue of instance types: %w", err)
		}
		cat = &c
	}
	var live []plan.InstanceType
	for _, t := range cat.AllInstanceTypes() {
		resp, err := s.client.DescribeTaskQueue(ctx, plan.ServerlessTaskQueue(t.Name), enums.TASK_QUEUE_TYPE_ACTIVITY)
		if err != nil {
			return choice, fmt.Errorf("describe task queue %q: %w", plan.ServerlessTaskQueue(t.Name), err)
		}
		for _, p := range resp.GetPollers() {
			if time.Since(p.GetLastAccessTime().AsTime()) < livePoller {
				live = append(live, t)
				break
			}
		}
	}
	choice.Live = len(live)
	for _, t := range live {
		choice.Offered = append(choice.Offered, t.Name+" ("+plan.NeedOf(t).String()+")")
	}
	fitting := plan.CheapestFirst(live, need)
	choice.Fitting = len(fitting)
	if len(fitting) > 0 {
		choice.InstanceType = fitting[0].Name
		choice.Requests = plan.NeedOf(fitting[0])
		choice.Queue = plan.ServerlessTaskQueue(fitting[0].Name)
	}
	return choice, nil
}
