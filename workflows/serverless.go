package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// ChooseInstanceTypeName is the local activity of workflow workers that
// picks a serverless step's instance type from the live workers': it
// takes the step's requests (plan.ResourceList) and returns an
// InstanceTypeChoice.
const ChooseInstanceTypeName = "ChooseInstanceType"

// NoInstanceTypeType is the error type of a serverless step that found no
// live worker offering an instance type that fits it in serverlessPatience.
const NoInstanceTypeType = "NoInstanceType"

// InstanceTypeChoice is what ChooseInstanceType found.
type InstanceTypeChoice struct {
	// InstanceType is the cheapest live instance type that fits, Requests
	// what a step of it holds and Queue its serverless task queue; all
	// empty when none fits.
	InstanceType string            `json:"instance_type,omitempty"`
	Requests     plan.ResourceList `json:"requests"`
	Queue        string            `json:"queue,omitempty"`
	// Live is how many instance types have a live worker, Fitting how many
	// of them fit the step.
	Live    int `json:"live"`
	Fitting int `json:"fitting"`
	// Offered lists the live instance types with their requests, for the
	// message of a step that none fits.
	Offered []string `json:"offered,omitempty"`
}

// How a serverless step that no live instance type fits waits: it asks
// again after serverlessFirstWait, doubling up to serverlessMaxWait, and
// fails after serverlessPatience, as a job waits for serverless capacity
// rather than fail when a worker is still starting.
const (
	serverlessFirstWait = 5 * time.Second
	serverlessMaxWait   = time.Minute
	serverlessPatience  = time.Hour
)

// placeServerless routes a serverless step: when the plan left its
// instance type to the run (r.Serverless set, no task queue), it sets
// r.TaskQueue to the cheapest live instance type's that fits and returns
// the line that says so in the step log; otherwise it changes nothing.
func placeServerless(ctx workflow.Context, r *plan.Resources) (string, error) {
	s := r.Serverless
	if s == nil || r.TaskQueue != "" {
		return "", nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:                "choose an instance type for " + s.Requests.String(),
	})
	wait, waited := serverlessFirstWait, time.Duration(0)
	for {
		var c InstanceTypeChoice
		if err := workflow.ExecuteLocalActivity(lctx, ChooseInstanceTypeName, s.Requests).Get(ctx, &c); err != nil {
			return "", err
		}
		if c.Queue != "" {
			r.TaskQueue = c.Queue
			which := fmt.Sprintf("the cheapest of %d live instance types that fit", c.Fitting)
			if c.Fitting == 1 {
				which = "the only live instance type that fits"
			}
			return fmt.Sprintf("porch: serverless: running on instance type %s (%s): %s %s",
				c.InstanceType, c.Requests, which, asked(s)), nil
		}
		msg := noInstanceType(s, c)
		if waited >= serverlessPatience {
			return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (waited %s)", msg, waited), NoInstanceTypeType, nil)
		}
		workflow.GetLogger(ctx).Warn(msg, "retry in", wait)
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("waiting for a live instance type that fits %s (waited %s)", asked(s), waited))
		if err := sleep(ctx, wait, "wait for an instance type"); err != nil {
			return "", err
		}
		waited += wait
		wait = min(2*wait, serverlessMaxWait)
	}
}

// asked says what a serverless step asks and why.
func asked(s *plan.Serverless) string {
	return fmt.Sprintf("the step's %s (%s)", s.Requests, s.From)
}

// noInstanceType says that no live instance type fits a step and what to
// start.
func noInstanceType(s *plan.Serverless, c InstanceTypeChoice) string {
	live := "no worker offers serverless instance types"
	if c.Live > 0 {
		live = "live instance types: " + strings.Join(c.Offered, ", ")
	}
	return fmt.Sprintf("serverless: no live instance type fits %s; %s: apply an instance type whose requests cover them "+
		"(`porch instance-type apply -f FILE`) and start a worker that serves it (`porch worker --compute serverless "+
		"--instance-type NAME`)", asked(s), live)
}
