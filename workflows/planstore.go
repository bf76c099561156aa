package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Plans by reference. A run's input names its plan by a PlanRef; the plan
// itself (gzipped JSON, cut in chunks under Temporal's 2 MB payload limit)
// is stored once on the Temporal server, each chunk the input of a
// PlanStore workflow whose id is the plan's hash and the chunk's index,
// which lives as long as a run or schedule holds the plan (planlife.go). A
// workflow reads the chunks through a local activity (LoadPlanChunkName),
// which the worker caches by hash, and decodes them itself. The server is
// the one store both an embedded server and a cluster's workers share, and
// a schedule's runs find the plan its creation stored.

// PlanStoreName is the workflow type whose input is one chunk of a plan.
const PlanStoreName = "PlanStore"

// LoadPlanChunkName is the local activity that returns one chunk of a
// stored plan (registered by the worker, which has a client).
const LoadPlanChunkName = "LoadPlanChunk"

// planChunkSize is the size of a plan's chunks, half Temporal's payload
// limit.
const planChunkSize = 1 << 20

// PlanRef names a stored plan.
type PlanRef struct {
	// Hash is the SHA-256 of the plan's JSON, in hex.
	Hash string `json:"hash"`
	// Chunks is how many chunks the gzipped JSON is cut in.
	Chunks int `json:"chunks"`
	// Size is the plan's JSON size in bytes.
	Size int `json:"size"`
}

// PlanChunk is one chunk of a stored plan: the input of a PlanStore
// workflow and the result of LoadPlanChunkName.
type PlanChunk struct {
	Hash  string `json:"hash"`
	Index int    `json:"index"`
	Data  []byte `json:"data"`
}

// PlanChunkID is the workflow id of a plan's chunk i.
func PlanChunkID(hash string, i int) string {
	return fmt.Sprintf("porch-plan-%s-%d", hash, i)
}

// storedPlan is a plan encoded for the store: its reference, chunks and
// label.
type storedPlan struct {
	ref    PlanRef
	chunks [][]byte
	// summary names the plan's pipeline: "pipeline train: 3 steps".
	summary string
}

// encodePlan encodes p for the store.
func encodePlan(p *plan.Plan) (storedPlan, error) {
	js, err := json.Marshal(p)
	if err != nil {
		return storedPlan{}, err
	}
	sum := sha256.Sum256(js)
	gz, err := gzipBytes(js)
	if err != nil {
		return storedPlan{}, err
	}
	sp := storedPlan{ref: PlanRef{Hash: hex.EncodeToString(sum[:]), Size: len(js)}, summary: RunSummary(p)}
	for data := gz; len(data) > 0; {
		n := min(len(data), planChunkSize)
		sp.chunks = append(sp.chunks, data[:n])
		data = data[n:]
	}
	sp.ref.Chunks = len(sp.chunks)
	return sp, nil
}

// store registers holder with the plan's PlanStore workflows, starting
// those the server does not run (never stored, or ended).
func (sp storedPlan) store(ctx context.Context, c client.Client, holder PlanHolder) error {
	for i, data := range sp.chunks {
		id := PlanChunkID(sp.ref.Hash, i)
		_, err := c.SignalWithStartWorkflow(ctx, id, PlanHoldSignal, holder, client.StartWorkflowOptions{
			ID:                       id,
			TaskQueue:                plan.DefaultTaskQueue,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:            sp.chunkSummary(i),
			StaticDetails:            sp.details(holder),
		}, PlanStoreName, PlanStoreInput{PlanChunk: PlanChunk{Hash: sp.ref.Hash, Index: i, Data: data}, Summary: sp.chunkSummary(i)})
		if err != nil {
			return fmt.Errorf("store the plan on the server (chunk %d of %d): %w", i+1, len(sp.chunks), err)
		}
	}
	return nil
}

// chunkSummary labels chunk i's workflow: "plan of pipeline train: 3
// steps · 12.3 KB · chunk 1 of 1".
func (sp storedPlan) chunkSummary(i int) string {
	return oneLine(fmt.Sprintf("plan of %s · %s · chunk %d of %d", sp.summary, kilobytes(sp.ref.Size), i+1, len(sp.chunks)), maxSummary)
}

// details are a PlanStore's markdown details: the plan, and its life.
func (sp storedPlan) details(first PlanHolder) string {
	return fmt.Sprintf("**porch plan** `%s`: %s, %s of JSON (%s gzipped in %s)\n\n"+
		"First stored for %s. It stays while a run or schedule that uses it is on the server, "+
		"then a grace (the workers' --plan-grace); its current details say what holds it.\n",
		sp.ref.Hash, sp.summary, kilobytes(sp.ref.Size), kilobytes(sp.gzipped()), plural(int64(len(sp.chunks)), "chunk", "chunks"), first)
}

func (sp storedPlan) gzipped() int {
	n := 0
	for _, c := range sp.chunks {
		n += len(c)
	}
	return n
}

// kilobytes is a size for people: "12.3 KB".
func kilobytes(n int) string {
	return fmt.Sprintf("%.1f KB", float64(n)/1000)
}

// PlanGoneType is the error type of a plan the server no longer holds.
const PlanGoneType = "PlanGone"

// planGone is the error reading a plan the server no longer holds.
func planGone(ref PlanRef) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"the server no longer holds plan %.12s: its workflow %s ended when no run or schedule held it, and namespace retention deleted it; "+
			"submit the pipeline again (porch run, porch job create)", ref.Hash, PlanChunkID(ref.Hash, 0)), PlanGoneType, nil)
}

// ReadPlan reads every chunk of the plan ref names from the server (the
// inputs of its PlanStore workflows, open or closed) for holder: a run
// that reads a plan whose store ended (reset, started from Temporal,
// resumed) holds it again, its store started again. always registers
// holder with a store that runs too (porch job resume).
func ReadPlan(ctx context.Context, c client.Client, ref PlanRef, holder PlanHolder, always bool) ([][]byte, error) {
	out := make([][]byte, ref.Chunks)
	ended := false
	for i := range out {
		id := PlanChunkID(ref.Hash, i)
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		var missing *serviceerror.NotFound
		if errors.As(err, &missing) {
			return nil, planGone(ref)
		}
		if err != nil {
			return nil, fmt.Errorf("read workflow %s: %w", id, err)
		}
		ended = ended || d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
		if out[i], err = readChunk(ctx, c, ref, i); err != nil {
			return nil, err
		}
	}
	if !ended && !always {
		return out, nil
	}
	var gz []byte
	for _, c := range out {
		gz = append(gz, c...)
	}
	p, err := decodePlan(ref, gz)
	if err != nil {
		return nil, err
	}
	return out, storedPlan{ref: ref, chunks: out, summary: RunSummary(p)}.store(ctx, c, holder)
}

// readChunk reads chunk i of the plan ref names: the input of its
// PlanStore workflow's latest execution.
func readChunk(ctx context.Context, c client.Client, ref PlanRef, i int) ([]byte, error) {
	id := PlanChunkID(ref.Hash, i)
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, planGone(ref)
	}
	ev, err := it.Next()
	var missing *serviceerror.NotFound
	if errors.As(err, &missing) {
		return nil, planGone(ref)
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	var in PlanChunk
	if len(payloads) == 0 {
		return nil, fmt.Errorf("workflow %s has no input", id)
	}
	if err := converter.GetDefaultDataConverter().FromPayload(payloads[0], &in); err != nil {
		return nil, fmt.Errorf("read workflow %s's input: %w", id, err)
	}
	if in.Hash != ref.Hash || in.Index != i {
		return nil, fmt.Errorf("workflow %s holds chunk %d of plan %s", id, in.Index, in.Hash)
	}
	return in.Data, nil
}

// planLoadTimeout bounds reading one chunk of a plan from the server.
const planLoadTimeout = time.Minute

// loadPlan reads the plan ref names, chunk by chunk, and checks its hash.
// A plan the server no longer holds fails the run: nothing can run it.
func loadPlan(ctx workflow.Context, ref PlanRef) (*plan.Plan, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:                fmt.Sprintf("load plan %.12s", ref.Hash),
		ScheduleToCloseTimeout: planLoadTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var gz []byte
	for i := range ref.Chunks {
		var c PlanChunk
		if err := workflow.ExecuteLocalActivity(lctx, LoadPlanChunkName, ref, i).Get(ctx, &c); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("load the run's plan %s (chunk %d of %d) from the server: %s", ref.Hash, i+1, ref.Chunks, ErrorMessage(err)),
				"PlanNotLoaded", err)
		}
		gz = append(gz, c.Data...)
	}
	return decodePlan(ref, gz)
}

// decodePlan decodes a stored plan's gzipped JSON and checks it is the
// plan ref names: a pure function of its input (see gzipJSON).
//
//workflowcheck:ignore
func decodePlan(ref PlanRef, gz []byte) (*plan.Plan, error) {
	js, err := gunzipBytes(gz)
	if err == nil {
		sum := sha256.Sum256(js)
		if hex.EncodeToString(sum[:]) != ref.Hash {
			err = fmt.Errorf("its content does not match its hash")
		} else {
			var p plan.Plan
			if err = json.Unmarshal(js, &p); err == nil {
				return &p, nil
			}
		}
	}
	return nil, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("the run's plan %s cannot be read: %v", ref.Hash, err), "PlanNotLoaded", nil)
}

// subPipeline finds the nested pipeline of the step at path.
func subPipeline(p plan.Pipeline, path string) (plan.Pipeline, bool) {
	for _, s := range p.Steps {
		if s.Pipeline == nil {
			continue
		}
		if s.Path == path {
			return *s.Pipeline, true
		}
		if sub, ok := subPipeline(*s.Pipeline, path); ok {
			return sub, true
		}
	}
	return plan.Pipeline{}, false
}
