package reuse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Activity type names, registered explicitly so renaming a Go method never
// breaks a running history.
const (
	DecideReuseName = "DecideReuse"
	RecordReuseName = "RecordReuse"
	// DecideReuseHereName is DecideReuse run as a local activity by the
	// DAG, on its own worker: the decision then costs no round trip
	// through the server. A worker that runs no steps of the default
	// queue declines it (DecideElsewhereType), and the DAG schedules
	// DecideReuse for a worker that does.
	DecideReuseHereName = "DecideReuseHere"
)

// DecideElsewhereType is the error type of a local decision a worker
// declines: it runs no steps of the default queue, so the decision runs
// on a worker that does.
const DecideElsewhereType = "DecideElsewhere"

// Why a step runs whatever its record says.
const (
	ReasonForced           = "force_rerun"
	ReasonNotDeterministic = "is_deterministic: false"
	ReasonFirstRun         = "first run"
	ReasonNoRecord         = "no record of this key"
	// ReasonNoManifest is a record written before porch listed outputs'
	// files: what its outputs hold now cannot be checked.
	ReasonNoManifest = "the record lists no files of its outputs (an older porch wrote it)"
)

// Activities decide and record reuse on a worker.
type Activities struct {
	Host   *stepio.Host
	Hasher *Hasher
}

// Register registers the activities under their explicit names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.DecideReuse, activity.RegisterOptions{Name: DecideReuseName})
	r.RegisterActivityWithOptions(a.RecordReuse, activity.RegisterOptions{Name: RecordReuseName})
	r.RegisterActivityWithOptions(a.DecideReuseHere, activity.RegisterOptions{Name: DecideReuseHereName})
}

// DecideReuseHere is DecideReuse as a local activity of the DAG's own
// worker: it does not heartbeat (a local activity cannot); the DAG bounds
// it, and leaves a decision that fails or takes long to DecideReuse.
func (a *Activities) DecideReuseHere(ctx context.Context, in DecideInput) (Decision, error) {
	return a.DecideReuse(ctx, in)
}

// RegisterElsewhere registers, on a worker that runs workflows but no
// steps of the default queue, the local decision declined: the datastores
// a step reads may not be reachable from here, and DecideReuse on the
// default queue decides as it always has.
func RegisterElsewhere(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(declineHere, activity.RegisterOptions{Name: DecideReuseHereName})
}

func declineHere(context.Context, DecideInput) (Decision, error) {
	return Decision{}, temporal.NewNonRetryableApplicationError(
		"this worker runs no steps of the default queue: a worker that does decides", DecideElsewhereType, nil)
}

// Upstream says that an input is an output of an upstream step.
type Upstream struct {
	Input  string `json:"input"`
	Step   string `json:"step"`
	Output string `json:"output"`
	// Ran says the step ran in this run rather than being reused.
	Ran bool `json:"ran,omitempty"`
}

// DecideInput is one step about to run.
type DecideInput struct {
	Pipeline         string `json:"pipeline"`
	RunID            string `json:"run_id"`
	DefaultDatastore string `json:"default_datastore"`
	// Step is the step as planned; Inputs its inputs with resolved values.
	Step     plan.Step    `json:"step"`
	Inputs   []plan.Input `json:"inputs,omitempty"`
	Upstream []Upstream   `json:"upstream,omitempty"`
	// Force is why the step runs whatever is recorded (ReasonForced,
	// ReasonNotDeterministic); "" lets a record decide.
	Force string `json:"force,omitempty"`
	// Records are steps of the run that succeeded since the last
	// decision, recorded first: the decision carries them, so recording
	// costs no activity of its own.
	Records []Record `json:"records,omitempty"`
}

// Decision is whether a step reuses a record, and why not.
type Decision struct {
	Key   string `json:"key"`
	Parts []Part `json:"parts"`
	// Reused is the record whose outputs the step takes (without its
	// parts); nil when the step runs.
	Reused *Record `json:"reused,omitempty"`
	// Reason says why the step runs.
	Reason string `json:"reason,omitempty"`
	// Was are the parts of the step path's latest record, for a reader
	// to compare (porch job explain).
	Was    []Part `json:"was,omitempty"`
	WasRun string `json:"was_run,omitempty"`
}

// DecideReuse computes a step's key and looks for a record of it whose
// outputs still hold what they held; otherwise it compares the key's
// parts with the step's latest record to say why the step runs.
func (a *Activities) DecideReuse(ctx context.Context, in DecideInput) (Decision, error) {
	uris := []string{KeyURI(in.DefaultDatastore, "x")}
	for _, i := range in.Inputs {
		if i.Value.Data != nil {
			uris = append(uris, i.Value.Data.Path)
		}
	}
	a.Host.RefreshDatastores(ctx, uris...)
	// Hashing a large input takes long: the heartbeats tell a worker that
	// died mid-hash (the decision then runs again elsewhere) from one
	// that is busy.
	stop := a.Host.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "deciding reuse: hashing the step's code and inputs"} })
	defer stop()
	if err := a.record(ctx, in.DefaultDatastore, in.Records); err != nil {
		return Decision{}, err
	}
	parts, err := a.parts(ctx, in)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Key: Key(parts), Parts: parts}
	latest, err := readRecord(ctx, a.Host, LatestURI(in.DefaultDatastore, in.Pipeline, in.Step.Path))
	if err != nil {
		return d, err
	}
	elsewhere := ""
	if latest == nil && in.Force == "" {
		// Only a reason needs it, and a forced step has its own (a step
		// that is not deterministic never has a latest record).
		latest, elsewhere = a.latestElsewhere(ctx, in)
	}
	if latest != nil {
		d.Was, d.WasRun = latest.Parts, latest.Run
	}
	if in.Force != "" {
		d.Reason = in.Force
		return d, nil
	}
	rec, err := readRecord(ctx, a.Host, KeyURI(in.DefaultDatastore, d.Key))
	if err != nil || rec == nil {
		d.Reason = a.why(ctx, in, d.Parts, latest, elsewhere)
		return d, err
	}
	if d.Reason, err = a.checkOutputs(ctx, in.DefaultDatastore, *rec); err != nil || d.Reason != "" {
		return d, err
	}
	rec.Parts = nil
	d.Reused = rec
	return d, nil
}

// parts are the step's key parts: its spec, its code, its inputs.
func (a *Activities) parts(ctx context.Context, in DecideInput) ([]Part, error) {
	parts := a.environmentPart(ctx, in.Step, specParts(in.Step, in.Inputs))
	if c := code(in.Step); c != "" {
		p, err := a.codePart(ctx, in.DefaultDatastore, c)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	for _, i := range in.Inputs {
		var up *Upstream
		for k := range in.Upstream {
			if in.Upstream[k].Input == i.Name {
				up = &in.Upstream[k]
			}
		}
		p, err := a.inputPart(ctx, i, up)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// why says why a step with no record of its key runs. elsewhere names
// the datastore latest is on when it is not the run's default datastore.
func (a *Activities) why(ctx context.Context, in DecideInput, parts []Part, latest *Record, elsewhere string) string {
	if latest == nil {
		return ReasonFirstRun
	}
	cs := Compare(parts, latest.Parts)
	ran := map[string]bool{}
	for _, u := range in.Upstream {
		ran[u.Step] = ran[u.Step] || u.Ran
	}
	var codeNames string
	for _, c := range cs {
		if c.Name == PartCode && c.Changed() && c.Hash != "" && c.Was != "" {
			codeNames = a.codeChanges(ctx, in.DefaultDatastore, c, c)
		}
	}
	changes := Changes(cs, ran, codeNames)
	if elsewhere != "" {
		changes = append([]string{fmt.Sprintf("default_datastore changed (%s → %s)", elsewhere, in.DefaultDatastore)}, changes...)
	}
	if len(changes) > 0 {
		return strings.Join(changes, "; ")
	}
	return ReasonNoRecord
}

// RecordInput is steps that succeeded, to record under their keys.
type RecordInput struct {
	DefaultDatastore string   `json:"default_datastore"`
	Records          []Record `json:"records"`
}

// RecordReuse writes the records of steps that succeeded and were not yet
// recorded (those no later decision carried).
func (a *Activities) RecordReuse(ctx context.Context, in RecordInput) error {
	return a.record(ctx, in.DefaultDatastore, in.Records)
}

// record writes each record, with its outputs' manifests, under its key,
// then as its step path's latest.
func (a *Activities) record(ctx context.Context, ds string, records []Record) error {
	if len(records) == 0 {
		return nil
	}
	uris := []string{KeyURI(ds, "x")}
	for _, r := range records {
		for _, o := range r.Outputs {
			uris = append(uris, o.URI)
		}
	}
	a.Host.RefreshDatastores(ctx, uris...)
	for _, r := range records {
		r, err := a.withManifests(ctx, ds, r)
		if err != nil {
			return fmt.Errorf("record step %q for reuse: %w", r.Step, err)
		}
		r.Created = time.Now().UTC()
		if err := writeJSON(ctx, a.Host, KeyURI(ds, r.Key), r); err != nil {
			return fmt.Errorf("record step %q for reuse: %w", r.Step, err)
		}
		if err := writeJSON(ctx, a.Host, LatestURI(ds, r.Pipeline, r.Step), r); err != nil {
			return fmt.Errorf("record step %q for reuse: %w", r.Step, err)
		}
	}
	return nil
}
