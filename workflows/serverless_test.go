package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/porch-pipelines/porch/activities"
	"github.com/porch-pipelines/porch/activities/command"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// serverlessEnv is a test environment whose ChooseInstanceType finds a
// fitting type from the given (test) time on, never when after is negative.
func serverlessEnv(t *testing.T, after time.Duration) (*testsuite.TestWorkflowEnvironment, *int) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env)
	(&activities.Activities{}).Register(env)
	calls := 0
	var start time.Time
	env.RegisterActivityWithOptions(func(ctx context.Context, need plan.ResourceList) (InstanceTypeChoice, error) {
		calls++
		if calls == 1 {
			start = env.Now()
		}
		c := InstanceTypeChoice{Live: 1, Offered: []string{"tiny (100m CPU, 1Gi)"}}
		if after >= 0 && env.Now().Sub(start) >= after {
			c = InstanceTypeChoice{InstanceType: "medium", Requests: plan.ResourceList{MilliCPU: 2000, MemoryBytes: 8 << 30},
				Queue: plan.ServerlessTaskQueue("medium"), Live: 3, Fitting: 2}
		}
		return c, nil
	}, activity.RegisterOptions{Name: ChooseInstanceTypeName})
	return env, &calls
}

func serverlessInput() CommandStepInput {
	return CommandStepInput{Run: command.RunCommandInput{Step: stepio.Step{RunID: "r", StepPath: "train", Command: plan.Command{
		Resources: plan.Resources{Serverless: &plan.Serverless{
			Requests: plan.ResourceList{MilliCPU: 2000, MemoryBytes: 4 << 30}, From: "Standard_F2s_v2"}}}}}}
}

// TestServerlessStepWaitsForAFittingInstanceType: a step that no live
// type fits asks again until one does (a worker started), then runs on its
// queue and says so in its log.
func TestServerlessStepWaitsForAFittingInstanceType(t *testing.T) {
	env, calls := serverlessEnv(t, 30*time.Second)
	var queue, placement string
	env.OnActivity(command.RunCommandName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in command.RunCommandInput) (command.RunCommandResult, error) {
			queue, placement = activity.GetInfo(ctx).TaskQueue, strings.Join(in.Notes, "\n")
			return command.RunCommandResult{}, nil
		})
	env.ExecuteWorkflow(CommandStep, serverlessInput())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, "porch-serverless-medium", queue)
	assert.Equal(t, "porch: serverless: running on instance type medium (2 CPU, 8Gi): the cheapest of 2 live instance types "+
		"that fit the step's 2 CPU, 4Gi (Standard_F2s_v2)", placement)
	assert.Equal(t, 4, *calls, "asked at 0, 5, 15 and 35 s")
}

// TestServerlessStepFailsWhenNoInstanceTypeFitsInTime: after
// serverlessPatience the step fails, saying what it asked, what is live
// and what to start.
func TestServerlessStepFailsWhenNoInstanceTypeFitsInTime(t *testing.T) {
	env, _ := serverlessEnv(t, -1)
	env.ExecuteWorkflow(CommandStep, serverlessInput())
	require.True(t, env.IsWorkflowCompleted())
	var head *temporal.ApplicationError
	require.True(t, errors.As(env.GetWorkflowError(), &head), "%v", env.GetWorkflowError())
	assert.Equal(t, StepErrorType, head.Type(), "the step's headline")
	assert.True(t, strings.HasPrefix(head.Message(), "step \"train\" failed: serverless: no live instance type fits"), head.Message())
	var app *temporal.ApplicationError
	require.True(t, errors.As(head.Unwrap(), &app), "%v", env.GetWorkflowError())
	assert.Equal(t, NoInstanceTypeType, app.Type())
	assert.Equal(t, "serverless: no live instance type fits the step's 2 CPU, 4Gi (Standard_F2s_v2); live instance types: "+
		"tiny (100m CPU, 1Gi): apply an instance type whose requests cover them (`porch instance-type apply -f FILE`) and "+
		"start a worker that serves it (`porch worker --compute serverless --instance-type NAME`) (waited 1h0m15s)", app.Message())
}
