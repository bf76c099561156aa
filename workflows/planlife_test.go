package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// planLifeEnv is a test environment for a PlanStore whose holders are
// found while held(holder) says so, checked every minute with a grace of
// ten.
func planLifeEnv(t *testing.T, held func(PlanHolder) bool) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(PlanStore, workflow.RegisterOptions{Name: PlanStoreName})
	env.RegisterActivityWithOptions(func(_ context.Context, in PlanHoldersCheck) (PlanHolders, error) {
		out := PlanHolders{CheckEvery: time.Minute, Grace: 10 * time.Minute}
		for _, h := range in.Holders {
			if held(h) {
				out.Holders = append(out.Holders, h)
			}
		}
		return out, nil
	}, activity.RegisterOptions{Name: CheckPlanHoldersName})
	return env
}

// TestAStoreFromBeforePlansLivedWaitsForAHolderThenEnds replays the
// version of a store that waited for ever: it keeps waiting until the plan
// is stored again, then ends a grace after its holder is gone.
func TestAStoreFromBeforePlansLivedWaitsForAHolderThenEnds(t *testing.T) {
	env := planLifeEnv(t, func(PlanHolder) bool { return false })
	env.OnGetVersion(planLifeChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	start := env.Now()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(PlanHoldSignal, PlanHolder{Run: "r"}) }, 48*time.Hour)
	env.ExecuteWorkflow(PlanStoreName, PlanStoreInput{PlanChunk: PlanChunk{Hash: "h", Data: []byte("plan")}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	took := env.Now().Sub(start)
	require.GreaterOrEqual(t, took, 48*time.Hour+10*time.Minute, "it waited for the signal, then the grace")
	require.Less(t, took, 48*time.Hour+15*time.Minute)
}

// TestAStoreEndsAGraceAfterItsLastHolder holds a plan for a run found by
// 120 checks, a minute apart: the store ends ten minutes after the last
// check that found it.
func TestAStoreEndsAGraceAfterItsLastHolder(t *testing.T) {
	checks := 0
	env := planLifeEnv(t, func(PlanHolder) bool { checks++; return checks <= 120 })
	start := env.Now()
	env.ExecuteWorkflow(PlanStoreName, PlanStoreInput{PlanChunk: PlanChunk{Hash: "h", Data: []byte("plan")}, Holders: []PlanHolder{{Run: "r"}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	took := env.Now().Sub(start)
	require.GreaterOrEqual(t, took, 2*time.Hour+9*time.Minute)
	require.LessOrEqual(t, took, 2*time.Hour+11*time.Minute)
}

// TestAStoreContinuesAsNewWithItsHolders fills a store's history: it
// continues as new carrying its chunk and holders.
func TestAStoreContinuesAsNewWithItsHolders(t *testing.T) {
	env := planLifeEnv(t, func(PlanHolder) bool { return true })
	env.SetCurrentHistoryLength(planStoreEvents + 1)
	env.ExecuteWorkflow(PlanStoreName, PlanStoreInput{PlanChunk: PlanChunk{Hash: "h", Data: []byte("plan")}, Summary: "plan of pipeline p",
		Holders: []PlanHolder{{Schedule: "nightly"}}})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	var next PlanStoreInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, []byte("plan"), next.Data)
	require.Equal(t, "plan of pipeline p", next.Summary, "the continued store names its plan in its details")
	require.Len(t, next.Holders, 1)
	require.Equal(t, "nightly", next.Holders[0].Schedule)
	require.False(t, next.HeldAt.IsZero())
}
