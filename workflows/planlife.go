package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A stored plan's life. Whoever stores a plan names what holds it: a run,
// by its workflow id, or a schedule, by its id (PlanHoldSignal, sent with
// the PlanStore workflow's start, so a store that ended starts again). A
// run holds its plan while the server has it, open or closed: until
// namespace retention deletes it, it may be resumed, and its nested
// pipelines and continued executions read the plan. A schedule holds its
// plan while its action names it; then the runs it started before that
// hold it while the server has them. The store checks its holders every
// PlanCheckEvery, through a local activity, and ends once none has held
// it for PlanGrace: namespace retention then deletes it, as it does any
// closed workflow, and a run that read it until then still can.

// PlanHoldSignal registers a holder (a PlanHolder) with a PlanStore
// workflow.
const PlanHoldSignal = "hold"

// CheckPlanHoldersName is the local activity that says which of a stored
// plan's holders still hold it (registered by the worker, which has a
// client and the grace).
const CheckPlanHoldersName = "CheckPlanHolders"

// Defaults of a worker's plan life settings (worker.Options).
const (
	// DefaultPlanCheckEvery is how often a stored plan checks its holders.
	DefaultPlanCheckEvery = time.Hour
	// DefaultPlanGrace is how long a stored plan stays once nothing holds
	// it, and how long a holder that is not on the server yet (a run
	// about to start) holds it.
	DefaultPlanGrace = time.Hour
)

// planLifeChange versions the PlanStore workflow that ends: before it, a
// store waited for ever.
const planLifeChange = "plan-life"

// planStoreEvents is the history length past which a PlanStore continues
// as new, carrying its holders.
const planStoreEvents = 1000

// PlanHolder is what keeps a stored plan: a run or a schedule.
type PlanHolder struct {
	// Run is a run's workflow id.
	Run string `json:"run,omitempty"`
	// Schedule is a schedule's id.
	Schedule string `json:"schedule,omitempty"`
	// Since is when the store learned of the holder; one the server does
	// not have yet holds the plan for the grace from then.
	Since time.Time `json:"since"`
	// Left is when a schedule was first found not to name the plan any
	// more (updated or deleted): from then its runs started before hold it.
	Left *time.Time `json:"left,omitempty"`
}

// String names the holder: "run train-x1" or "schedule nightly".
func (h PlanHolder) String() string {
	if h.Schedule != "" {
		if h.Left != nil {
			return "schedule " + h.Schedule + "'s runs"
		}
		return "schedule " + h.Schedule
	}
	return "run " + h.Run
}

func (h PlanHolder) same(o PlanHolder) bool { return h.Run == o.Run && h.Schedule == o.Schedule }

// PlanStoreInput is a PlanStore workflow's input: its chunk, and what a
// continued execution carries on.
type PlanStoreInput struct {
	PlanChunk
	// Summary is the store's summary, which its current details repeat:
	// a continued execution has no summary.
	Summary string       `json:"summary,omitempty"`
	Holders []PlanHolder `json:"holders,omitempty"`
	// HeldAt is when the plan was last known held.
	HeldAt time.Time `json:"held_at"`
}

// PlanHoldersCheck is CheckPlanHoldersName's input.
type PlanHoldersCheck struct {
	Hash    string       `json:"hash"`
	Holders []PlanHolder `json:"holders,omitempty"`
}

// PlanHolders is CheckPlanHoldersName's result: the holders that still
// hold the plan, and the worker's settings.
type PlanHolders struct {
	Holders    []PlanHolder  `json:"holders,omitempty"`
	CheckEvery time.Duration `json:"check_every"`
	Grace      time.Duration `json:"grace"`
}

// PlanStore holds a chunk of a plan in its input for as long as a run or
// a schedule holds the plan, and a grace after.
func PlanStore(ctx workflow.Context, in PlanStoreInput) error {
	holds := workflow.GetSignalChannel(ctx, PlanHoldSignal)
	if workflow.GetVersion(ctx, planLifeChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// A store started before plans had a life waited for ever; it
		// takes this life on as the plan is stored again.
		_ = workflow.Await(ctx, func() bool { return holds.Len() > 0 })
	}
	s := &planStore{in: in, every: DefaultPlanCheckEvery, grace: DefaultPlanGrace}
	if s.in.HeldAt.IsZero() {
		s.in.HeldAt = workflow.Now(ctx)
	}
	s.receive(ctx, holds)
	s.check(ctx)
	for {
		now := workflow.Now(ctx)
		if len(s.in.Holders) > 0 {
			s.in.HeldAt = now
		}
		workflow.SetCurrentDetails(ctx, s.details())
		if len(s.in.Holders) == 0 && !now.Before(s.in.HeldAt.Add(s.grace)) {
			if !s.receive(ctx, holds) {
				return nil
			}
			continue
		}
		if info := workflow.GetInfo(ctx); info.GetCurrentHistoryLength() > planStoreEvents || info.GetContinueAsNewSuggested() {
			s.receive(ctx, holds)
			return workflow.NewContinueAsNewError(ctx, PlanStoreName, s.in)
		}
		wait := s.every
		if len(s.in.Holders) == 0 {
			wait = min(wait, s.in.HeldAt.Add(s.grace).Sub(now))
		}
		signalled, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return holds.Len() > 0 })
		if err != nil {
			return err
		}
		if signalled {
			s.receive(ctx, holds)
		} else {
			s.check(ctx)
		}
	}
}

// planStore is a PlanStore workflow's state.
type planStore struct {
	in           PlanStoreInput
	every, grace time.Duration
	checked      time.Time
}

// receive takes the holders signalled, a holder signalled again starting
// over, and says whether there were any.
func (s *planStore) receive(ctx workflow.Context, holds workflow.ReceiveChannel) bool {
	got := false
	for {
		var h PlanHolder
		if !holds.ReceiveAsync(&h) {
			return got
		}
		got = true
		h.Since, h.Left = workflow.Now(ctx), nil
		s.in.HeldAt = h.Since
		replaced := false
		for i := range s.in.Holders {
			if s.in.Holders[i].same(h) {
				s.in.Holders[i], replaced = h, true
			}
		}
		if !replaced {
			s.in.Holders = append(s.in.Holders, h)
		}
	}
}

// check asks which holders still hold the plan. A check that fails keeps
// them all: the plan stays until one succeeds.
func (s *planStore) check(ctx workflow.Context) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:                "check what holds the plan",
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var res PlanHolders
	err := workflow.ExecuteLocalActivity(lctx, CheckPlanHoldersName, PlanHoldersCheck{Hash: s.in.Hash, Holders: s.in.Holders}).Get(ctx, &res)
	if err != nil {
		workflow.GetLogger(ctx).Warn("check what holds the plan", "error", err)
		return
	}
	s.in.Holders, s.checked = res.Holders, workflow.Now(ctx)
	if res.CheckEvery > 0 {
		s.every = res.CheckEvery
	}
	if res.Grace > 0 {
		s.grace = res.Grace
	}
}

// details are what the Temporal UI shows as the store's current details.
func (s *planStore) details() string {
	var out string
	if len(s.in.Holders) == 0 {
		out = fmt.Sprintf("held by nothing since %s: ends at %s", s.in.HeldAt.UTC().Format(time.RFC3339),
			s.in.HeldAt.Add(s.grace).UTC().Format(time.RFC3339))
	} else {
		const shown = 10
		names := make([]string, 0, shown)
		for _, h := range s.in.Holders[:min(len(s.in.Holders), shown)] {
			names = append(names, h.String())
		}
		out = "held by " + strings.Join(names, ", ")
		if n := len(s.in.Holders) - shown; n > 0 {
			out += fmt.Sprintf(" and %d more", n)
		}
	}
	if s.in.Summary != "" {
		out = s.in.Summary + "\n" + out
	}
	if !s.checked.IsZero() {
		out += fmt.Sprintf("\nchecked at %s, every %s", s.checked.UTC().Format(time.RFC3339), s.every)
	}
	return out
}
