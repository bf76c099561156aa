package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/workflows"
)

// gatedPlan is a one-step pipeline on compute that claims cores cores and
// runs until the file gate exists.
func gatedPlan(t *testing.T, compute string, instances, cores int, gate string) *plan.Plan {
	t.Helper()
	f := writePipeline(t, fmt.Sprintf(`type: pipeline
name: quota
jobs:
  train:
    compute: azureml:%s
    command: while [ ! -f %s ]; do sleep 0.1; done
`, compute, gate))
	p := compile(t, f, nil)
	// The compiler fills these from the registered compute; here the
	// test gives them.
	p.Pipeline.Steps[0].Command.Resources = plan.Resources{InstanceCount: instances, Cores: cores}
	return p
}

func startQuota(t *testing.T, pool quota.Pool, cores int) {
	t.Helper()
	ctx := context.Background()
	_, err := temporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: pool.WorkflowID(), TaskQueue: plan.DefaultTaskQueue},
		workflows.QuotaName, workflows.QuotaInput{State: quota.State{Pool: pool}, SweepSeconds: 1})
	require.NoError(t, err)
	prev, err := workflows.SetQuota(ctx, temporalClient, pool, cores)
	require.NoError(t, err)
	require.Equal(t, 0, prev)
	t.Cleanup(func() { _ = workflows.DeleteQuota(context.Background(), temporalClient, pool) })
}

func quotaState(t *testing.T, pool quota.Pool) quota.State {
	t.Helper()
	s, ok, err := workflows.GetQuota(context.Background(), temporalClient, pool)
	require.NoError(t, err)
	require.True(t, ok)
	return s
}

func stepWorkflowID(t *testing.T, run client.WorkflowRun) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		v, err := temporalClient.QueryWorkflow(context.Background(), run.GetID(), "", workflows.StepsQuery)
		if err != nil {
			return false
		}
		var st []workflows.StepState
		if v.Get(&st) != nil || len(st) == 0 {
			return false
		}
		id = st[0].WorkflowID
		return id != "" && st[0].Claims
	}, time.Minute, 20*time.Millisecond)
	return id
}

func TestQuotaQueuesASecondJobUntilTheFirstEnds(t *testing.T) {
	const compute = "quota-fifo"
	h := newHarness(t, compute)
	pool := quota.Pool{Kind: quota.Compute, Name: compute}
	startQuota(t, pool, 4)
	dir := t.TempDir()
	gateA, gateB := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	// Asking more than the quota could ever give fails at submission.
	err := workflows.CheckQuotas(context.Background(), temporalClient, gatedPlan(t, compute, 2, 4, gateA))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs 8 cores (2 × 4) but the quota of compute quota-fifo is 4 cores")
	assert.Contains(t, err.Error(), "lower resources.instance_count to 1")
	require.NoError(t, workflows.CheckQuotas(context.Background(), temporalClient, gatedPlan(t, compute, 1, 4, gateA)))

	a := h.start(gatedPlan(t, compute, 1, 4, gateA))
	stepA := stepWorkflowID(t, a)
	require.Eventually(t, func() bool { return quotaState(t, pool).Holds(stepA) }, time.Minute, 20*time.Millisecond)

	b := h.start(gatedPlan(t, compute, 1, 4, gateB))
	stepB := stepWorkflowID(t, b)
	var wait string
	require.Eventually(t, func() bool {
		wait, _, err = workflows.QuotaWait(context.Background(), temporalClient, stepB)
		return err == nil && wait != ""
	}, time.Minute, 20*time.Millisecond)
	assert.Equal(t, "waiting for quota: 4 of 4 cores of quota-fifo in use by 1 job", wait)
	require.NoError(t, os.WriteFile(gateB, nil, 0o644)) // b would finish at once, were it running
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, []string{stepB}, claimIDs(quotaState(t, pool).Waiters), "b still waits while a holds the quota")

	require.NoError(t, os.WriteFile(gateA, nil, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, a.Get(ctx, nil))
	require.NoError(t, b.Get(ctx, nil))
	require.Eventually(t, func() bool {
		s := quotaState(t, pool)
		return s.InUse() == 0 && len(s.Waiters) == 0
	}, time.Minute, 20*time.Millisecond, "both released their cores")

	require.NoError(t, workflows.DeleteQuota(ctx, temporalClient, pool))
	_, ok, err := workflows.GetQuota(ctx, temporalClient, pool)
	require.NoError(t, err)
	assert.False(t, ok, "a lifted quota is gone")
	if os.Getenv("PORCH_RECORD_HISTORIES") != "" {
		out := filepath.Join("..", "workflows", "testdata", "histories")
		writeHistory(t, pool.WorkflowID(), filepath.Join(out, "v1-quota.json"))
		writeHistory(t, stepB, filepath.Join(out, "v1-quota-waited-step.json"))
	}
}

func TestQuotaIsReleasedWhenAStepIsCancelledOrTerminated(t *testing.T) {
	const compute = "quota-release"
	h := newHarness(t, compute)
	pool := quota.Pool{Kind: quota.Compute, Name: compute}
	startQuota(t, pool, 2)
	gate := filepath.Join(t.TempDir(), "never")

	holder := h.start(gatedPlan(t, compute, 1, 2, gate))
	holderStep := stepWorkflowID(t, holder)
	require.Eventually(t, func() bool { return quotaState(t, pool).Holds(holderStep) }, time.Minute, 20*time.Millisecond)
	waiter := h.start(gatedPlan(t, compute, 1, 2, gate))
	waiterStep := stepWorkflowID(t, waiter)
	require.Eventually(t, func() bool { return len(quotaState(t, pool).Waiters) == 1 }, time.Minute, 20*time.Millisecond)

	// A cancelled waiter leaves the line.
	ctx := context.Background()
	require.NoError(t, temporalClient.CancelWorkflow(ctx, waiter.GetID(), ""))
	var canceled *temporal.CanceledError
	require.True(t, errors.As(waiter.Get(ctx, nil), &canceled))
	require.Eventually(t, func() bool { return len(quotaState(t, pool).Waiters) == 0 }, time.Minute, 20*time.Millisecond)
	assert.False(t, quotaState(t, pool).Holds(waiterStep))

	// A terminated holder cannot release: the quota's sweep takes its
	// cores back.
	require.NoError(t, temporalClient.TerminateWorkflow(ctx, holderStep, "", "test"))
	// The run fails as soon as it sees its step terminated, and may have
	// ended already ("workflow execution already completed").
	if err := temporalClient.TerminateWorkflow(ctx, holder.GetID(), "", "test"); err != nil {
		var ended *serviceerror.NotFound
		require.ErrorAs(t, err, &ended)
	}
	require.Eventually(t, func() bool { return quotaState(t, pool).InUse() == 0 }, time.Minute, 50*time.Millisecond)
}

func claimIDs(cs []quota.Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestAParallelStepWaitsForItsInstancesCores(t *testing.T) {
	const compute = "quota-parallel"
	h := newHarness(t, compute)
	pool := quota.Pool{Kind: quota.Compute, Name: compute}
	startQuota(t, pool, 2)
	gate := filepath.Join(t.TempDir(), "gate")
	holder := h.start(gatedPlan(t, compute, 1, 2, gate))
	holderStep := stepWorkflowID(t, holder)
	require.Eventually(t, func() bool { return quotaState(t, pool).Holds(holderStep) }, time.Minute, 20*time.Millisecond)

	f, _ := parallelCase{files: names("f", 4), settings: `    compute: azureml:` + compute + `
    mini_batch_size: "2"
    resources:
      instance_count: 2`}.write(t)
	p := compile(t, f, nil)
	p.Pipeline.Steps[0].Parallel.Resources.Cores = 1
	run := h.start(p)
	step := stepWorkflowID(t, run)
	var wait string
	require.Eventually(t, func() bool {
		var err error
		wait, _, err = workflows.QuotaWait(context.Background(), temporalClient, step)
		return err == nil && wait != ""
	}, time.Minute, 20*time.Millisecond)
	assert.Equal(t, "waiting for quota: 2 of 2 cores of quota-parallel in use by 1 job", wait)
	assert.Equal(t, 2, quotaState(t, pool).Waiters[0].Cores, "2 instances of 1 core")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, holder.Get(ctx, nil))
	require.NoError(t, run.Get(ctx, nil))
	require.Eventually(t, func() bool { return quotaState(t, pool).InUse() == 0 }, time.Minute, 20*time.Millisecond)
}
