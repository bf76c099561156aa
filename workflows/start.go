package workflows

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// The memo is part of the run's mutable state: the server writes it again
// with every update of the run (each step's start and end) and with every
// visibility record. maxMemoSource and maxMemoPlan bound the pipeline YAML
// and the plan summary it keeps, so a run of 10,000 steps costs per step
// what a run of ten does: with the YAML of 1,000 steps (80 KB) and its
// summary in full, the run went at half the speed.
const (
	maxMemoSource = 16 << 10
	maxMemoPlan   = 16 << 10
)

// NewRunID returns a fresh run id, "<pipeline-name>-<short-id>".
func NewRunID(p *plan.Plan) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return p.Name + "-" + string(b)
}

// StartRequest is how porch starts a run of a plan: the Pipeline
// workflow's start options and input. porch run and job create start it
// as it is; a schedule's action carries the same options and input, so
// every scheduled run starts as a submitted one does.
type StartRequest struct {
	Options client.StartWorkflowOptions
	Input   PipelineInput
	// stored is the plan the input names, to store before the run starts.
	stored *storedPlan
}

// StorePlan stores the plan the request's input names on the server (see
// PlanStore), once, for holder: a run, or a schedule's runs, read it from
// there for as long as a holder is on the server.
func (r StartRequest) StorePlan(ctx context.Context, c client.Client, holder PlanHolder) error {
	if r.stored == nil {
		return nil
	}
	return r.stored.store(ctx, c, holder)
}

// NewStartRequest is the request that starts a run of p as runID. source
// is the pipeline YAML, kept in the memo for the UI. With an empty runID
// the run takes its workflow id as its run id, as a run started from
// porch compile -o start-input does, and sets its PorchRun itself: the
// options then have no ID and no PorchRun attribute, and their details
// name the run RUN.
func NewStartRequest(p *plan.Plan, runID string, source []byte) StartRequest {
	label := runID
	if label == "" {
		label = "RUN"
	}
	if len(source) > maxMemoSource {
		// Whole lines, so no character is cut in two.
		cut := bytes.LastIndexByte(source[:maxMemoSource], '\n') + 1
		source = append(source[:cut:cut],
			fmt.Sprintf("# ... truncated by porch after %d of %d bytes: the whole file is %s\n", cut, len(source), p.Source)...)
	}
	opts := client.StartWorkflowOptions{
		ID:                    runID,
		TaskQueue:             plan.DefaultTaskQueue,
		TypedSearchAttributes: runAttributes(runKeys{runID, p.Name, p.ExperimentName, p.Settings.SubmittedBy}),
		// A run id names one run, as an Azure ML job name does: a run
		// named after one that ended is refused, not started over it.
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         RunSummary(p),
		StaticDetails:         RunDetails(p, label),
		Memo: map[string]any{
			MemoSource: string(source),
			MemoPlan:   Summary(p, label),
		},
	}
	if p.Settings.SubmittedBy != "" {
		opts.Memo[MemoSubmittedBy] = p.Settings.SubmittedBy
	}
	if len(p.Tags) > 0 {
		opts.Memo[MemoTags] = p.Tags
	}
	r := StartRequest{Options: opts, Input: NewPipelineInput(p, runID)}
	// The input names the plan, stored on the server, rather than carry
	// it: a plan of thousands of steps passes Temporal's payload limit. A
	// plan that cannot be encoded (it always can) travels in the input.
	if sp, err := encodePlan(p); err == nil {
		r.stored = &sp
		r.Input.Plan, r.Input.Pipeline = &sp.ref, plan.Pipeline{}
	}
	return r
}

// Start submits a compiled plan as a run with the given id. source is the
// pipeline YAML, kept in the memo for the UI.
func Start(ctx context.Context, c client.Client, p *plan.Plan, runID string, source []byte) (client.WorkflowRun, error) {
	r := NewStartRequest(p, runID, source)
	if err := r.StorePlan(ctx, c, PlanHolder{Run: runID}); err != nil {
		return nil, err
	}
	return c.ExecuteWorkflow(ctx, r.Options, PipelineName, r.Input)
}

// NewPipelineInput is the input of a run of p: what Start passes, and what
// porch compile -o start-input prints for a Temporal client to start. With
// an empty runID the run takes its workflow id as its run id.
func NewPipelineInput(p *plan.Plan, runID string) PipelineInput {
	return PipelineInput{
		PlanVersion: p.Version,
		RunID:       runID,
		Name:        p.Name,
		Experiment:  p.ExperimentName,
		Settings:    p.Settings,
		Pipeline:    p.Pipeline,
		Inputs:      p.Pipeline.Inputs,
	}
}

// runAttributes are a run's search attributes; without a run id, all but
// PorchRun.
func runAttributes(k runKeys) temporal.SearchAttributes {
	kws := rootAttributes(k)
	if k.run == "" {
		kws = slices.DeleteFunc(kws, func(kw keyword) bool { return kw.key == keyRun })
	}
	return temporal.NewSearchAttributes(updatesOf(kws)...)
}

// Summary describes a plan one line per step, indented by nesting:
// "train  command  compute=cpu-cluster  after: prep".
// Past maxMemoPlan bytes the summary stops and says how many steps it left
// out and which command, for runID, lists them.
func Summary(p *plan.Plan, runID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n", p.Name, p.Source)
	left := summarise(&b, p.Pipeline, "  ", maxMemoPlan)
	if left > 0 {
		fmt.Fprintf(&b, "  ... and %d more steps: porch job show %s lists them all\n", left, runID)
	}
	return b.String()
}

// summarise writes pl's steps to b while b holds less than limit bytes, and
// returns how many steps it left out.
func summarise(b *strings.Builder, pl plan.Pipeline, indent string, limit int) int {
	left := 0
	for _, s := range pl.Steps {
		if b.Len() >= limit {
			left += 1 + nestedSteps(s.Pipeline)
			continue
		}
		fmt.Fprintf(b, "%s%s  %s", indent, s.Name, s.Type)
		if s.Compute != "" {
			fmt.Fprintf(b, "  compute=%s", s.Compute)
		}
		if id := s.JobIdentity(); id != "" {
			fmt.Fprintf(b, "  identity=%s", id)
		}
		if len(s.DependsOn) > 0 {
			fmt.Fprintf(b, "  after: %s", strings.Join(s.DependsOn, ", "))
		}
		b.WriteString("\n")
		if s.Pipeline != nil {
			left += summarise(b, *s.Pipeline, indent+"  ", limit)
		}
	}
	return left
}

// nestedSteps counts the steps of a nested pipeline, at every depth; 0
// for nil.
func nestedSteps(pl *plan.Pipeline) int {
	if pl == nil {
		return 0
	}
	n := 0
	for _, s := range pl.Steps {
		n += 1 + nestedSteps(s.Pipeline)
	}
	return n
}
