package workflows

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/telemetry"
)

// QuotaName is the workflow type of a pool's quota.
const QuotaName = "Quota"

// EndedClaimantsName is the local activity (registered by the worker,
// which has a client) that returns which of a quota's claimants name no
// running workflow: their claims are taken back. It is the name the
// quota's histories have recorded since the sweep began, when it ran by
// its Go function's name, so they replay unchanged.
const EndedClaimantsName = "endedWorkflows"

// quotaSweep is how often a quota with claims checks that its claimants
// still run, to take back the cores of one that was terminated without
// releasing them.
const quotaSweep = time.Minute

// QuotaInput starts (or continues) a pool's quota workflow.
type QuotaInput struct {
	State quota.State `json:"state"`
	// SweepSeconds is how often claims of claimants that no longer run are
	// taken back; 0 means every quotaSweep.
	SweepSeconds int `json:"sweep_seconds,omitempty"`
}

// Quota is the durable semaphore of one pool of cores (porch quota set).
// Steps claim cores with the acquire signal and are granted them, first
// come first served, by a signal back; they give them back with the release
// signal when they end, however they end. Claims of claimants that no
// longer run are taken back every quotaSweep. The workflow continues as new
// when Temporal suggests it, carrying the state.
func Quota(ctx workflow.Context, in QuotaInput) error {
	s := in.State
	if err := setQuery(ctx, quota.StatusQuery, func() (quota.State, error) { return s, nil }); err != nil {
		return err
	}
	// inflight counts grant signals not yet delivered; a grant to a
	// claimant that has ended fails and its cores go to the next in line.
	inflight := 0
	var grant func()
	grant = func() {
		for _, c := range s.Grant() {
			id := c.ID
			inflight++
			workflow.Go(ctx, func(gctx workflow.Context) {
				defer func() { inflight-- }()
				f := workflow.SignalExternalWorkflow(gctx, id, "", quota.GrantedSignal, s.Pool)
				if f.Get(gctx, nil) != nil && s.Release(id) {
					grant()
				}
			})
		}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, quota.SetUpdate,
		func(_ workflow.Context, cores int) (int, error) {
			prev := s.Cores
			s.Cores = cores
			grant()
			return prev, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(cores int) error {
			if cores < 1 {
				return errors.New("a quota is at least 1 core: to lift a quota, set it to the cores of the whole fleet")
			}
			return nil
		}},
	); err != nil {
		return err
	}
	deleted := false
	wake := workflow.NewBufferedChannel(ctx, 1)
	if err := workflow.SetUpdateHandler(ctx, quota.DeleteUpdate, func(workflow.Context) error {
		deleted = true
		wake.SendAsync(true)
		s.Cores = math.MaxInt32
		grant()
		return nil
	}); err != nil {
		return err
	}
	acquire := workflow.GetSignalChannel(ctx, quota.AcquireSignal)
	release := workflow.GetSignalChannel(ctx, quota.ReleaseSignal)
	receive := func(sel workflow.Selector) {
		sel.AddReceive(acquire, func(ch workflow.ReceiveChannel, _ bool) {
			var c quota.Claim
			ch.Receive(ctx, &c)
			c.At = workflow.Now(ctx)
			if !s.Add(c) && s.Holds(c.ID) {
				// A claimant that asks again (its request was retried)
				// holds already: grant it again.
				s.Release(c.ID)
				s.Waiters = append([]quota.Claim{c}, s.Waiters...)
			}
			grant()
		})
		sel.AddReceive(release, func(ch workflow.ReceiveChannel, _ bool) {
			var id string
			ch.Receive(ctx, &id)
			if s.Release(id) {
				grant()
			}
		})
	}
	sweepCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "find ended claimants",
	})
	every := quotaSweep
	if in.SweepSeconds > 0 {
		every = time.Duration(in.SweepSeconds) * time.Second
	}
	var timer, sweep workflow.Future
	for !deleted && !workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("%s, %d waiting", s.Describe(), len(s.Waiters)))
		if timer == nil && sweep == nil && len(s.Holders)+len(s.Waiters) > 0 {
			timer = newTimer(ctx, every, "claim sweep")
		}
		sel := workflow.NewSelector(ctx)
		receive(sel)
		sel.AddReceive(wake, func(ch workflow.ReceiveChannel, _ bool) { ch.ReceiveAsync(nil) })
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) {
				timer = nil
				sweep = workflow.ExecuteLocalActivity(sweepCtx, EndedClaimantsName, claimants(s))
			})
		}
		if sweep != nil {
			sel.AddFuture(sweep, func(f workflow.Future) {
				sweep = nil
				var ended []string
				if f.Get(ctx, &ended) != nil {
					return // the next sweep tries again
				}
				for _, id := range ended {
					s.Release(id)
				}
				grant()
			})
		}
		sel.Select(ctx)
	}
	// Signals that arrived with the suggestion are applied, and grants
	// delivered, before the state is carried.
	for !deleted {
		sel := workflow.NewSelector(ctx)
		receive(sel)
		if !sel.HasPending() {
			break
		}
		sel.Select(ctx)
	}
	if err := workflow.Await(ctx, func() bool { return inflight == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	if deleted {
		// Releases that arrive later find no workflow and are ignored.
		return nil
	}
	return workflow.NewContinueAsNewError(ctx, QuotaName, QuotaInput{State: s, SweepSeconds: in.SweepSeconds})
}

// claimants are the ids of a quota's claims, holding and waiting.
func claimants(s quota.State) []string {
	ids := make([]string, 0, len(s.Holders)+len(s.Waiters))
	for _, c := range s.Holders {
		ids = append(ids, c.ID)
	}
	for _, c := range s.Waiters {
		ids = append(ids, c.ID)
	}
	return ids
}

// QuotaRequest is what a step claims before it runs: its cores from each
// pool, taken one pool after the other in this order (compute before
// size), so two steps never hold one pool each while waiting for the other.
type QuotaRequest struct {
	Pools []quota.Pool `json:"pools"`
	Cores int          `json:"cores"`
}

// QuotaWaitQuery is the query a step that claims cores answers with its
// QuotaAdmission.
const QuotaWaitQuery = "quota"

// QuotaAdmission is where a step is in taking its cores: the pool it waits
// for, or admitted once it holds every pool's.
type QuotaAdmission struct {
	Waiting  *quota.Pool `json:"waiting,omitempty"`
	Admitted bool        `json:"admitted,omitempty"`
}

// admit claims the request's cores from each pool that has a quota and
// waits until every one is granted. A pool without a quota workflow has no
// quota. The returned release gives the cores back; it must run however
// the step ends, and does, through a disconnected context, when the step
// is cancelled.
func admit(ctx workflow.Context, req *QuotaRequest, st *QuotaAdmission) (release func(), err error) {
	info := workflow.GetInfo(ctx)
	claim := quota.Claim{ID: info.WorkflowExecution.ID, Cores: req.Cores}
	var held []quota.Pool
	release = func() { releaseQuota(ctx, held)() }
	granted := workflow.GetSignalChannel(ctx, quota.GrantedSignal)
	for _, p := range quotaPools(ctx, req.Pools) {
		if err := workflow.SignalExternalWorkflow(ctx, p.WorkflowID(), "", quota.AcquireSignal, claim).Get(ctx, nil); err != nil {
			if ctx.Err() != nil {
				release()
				return nil, ctx.Err()
			}
			continue // no quota is set on this pool
		}
		held = append(held, p)
		st.Waiting = &p
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("quota wait: %d cores of %s", req.Cores, p))
		waitFrom := workflow.Now(ctx)
		for st.Waiting != nil {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(granted, func(ch workflow.ReceiveChannel, _ bool) {
				var g quota.Pool
				ch.Receive(ctx, &g)
				if g == p {
					st.Waiting = nil
				}
			})
			sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
			sel.Select(ctx)
			if ctx.Err() != nil {
				st.Waiting = nil
				release()
				return nil, ctx.Err()
			}
		}
		telemetry.QuotaWaited(workflow.GetMetricsHandler(ctx), string(p.Kind), p.Name, workflow.Now(ctx).Sub(waitFrom))
	}
	st.Admitted = true
	if len(held) > 0 {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("holding %d cores of the quota", req.Cores))
	}
	return release, nil
}

// quotaPoolsChange is the GetVersion id of a step asking which of its
// pools have a quota before it signals them (version 1), where
// DefaultVersion signalled every pool and read a failed signal as "no
// quota", leaving failed commands in every such step's history.
const quotaPoolsChange = "quota-pools"

// QuotaPoolsName is the local activity that says which pools have a
// quota: those whose quota workflow runs (registered by the worker, which
// has a client).
const QuotaPoolsName = "QuotaPools"

// quotaPools are the pools of a request to claim cores from: from version
// 1 of quotaPoolsChange only those with a quota. When that cannot be read,
// every pool, as before: a signal to one without fails harmlessly.
func quotaPools(ctx workflow.Context, pools []quota.Pool) []quota.Pool {
	if workflow.GetVersion(ctx, quotaPoolsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return pools
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:                "which pools have a quota",
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var with []quota.Pool
	if err := workflow.ExecuteLocalActivity(lctx, QuotaPoolsName, pools).Get(ctx, &with); err != nil {
		return pools
	}
	return with
}

// releaseQuota returns a function that gives the step's cores back to each
// pool, through a disconnected context so that it works in a cancelled
// step. A pool without a quota, or whose quota was lifted meanwhile, has
// nothing to give back to.
func releaseQuota(ctx workflow.Context, pools []quota.Pool) func() {
	return func() {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		for _, p := range pools {
			_ = workflow.SignalExternalWorkflow(dctx, p.WorkflowID(), "", quota.ReleaseSignal, id).Get(dctx, nil)
		}
	}
}

// quotaRequest is what a step on compute with these resources claims: its
// cores from the compute's pool, then from its VM size's; nil when the
// step's cores are unknown or it runs on the default compute with no size.
func quotaRequest(compute string, r plan.Resources) *QuotaRequest {
	if r.Cores <= 0 {
		return nil
	}
	req := &QuotaRequest{Cores: r.Instances() * r.Cores}
	if compute != "" {
		req.Pools = append(req.Pools, quota.Pool{Kind: quota.Compute, Name: compute})
	}
	if r.Size != "" {
		req.Pools = append(req.Pools, quota.Pool{Kind: quota.Size, Name: r.Size})
	}
	if len(req.Pools) == 0 {
		return nil
	}
	return req
}
