package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// Plans by reference. A run's input names its plan by a PlanRef; the plan
// itself (gzipped JSON, cut in chunks under Temporal's 2 MB payload limit)
// is stored once on the Temporal server, each chunk the input of a
// PlanStore workflow whose id is the plan's hash and the chunk's index. A
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

// PlanStore holds a chunk of a plan in its input, for as long as runs may
// read it: it never ends, so no retention period deletes it.
func PlanStore(ctx workflow.Context, _ PlanChunk) error {
	return workflow.Await(ctx, func() bool { return false })
}

// storedPlan is a plan encoded for the store: its reference and chunks.
type storedPlan struct {
	ref    PlanRef
	chunks [][]byte
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
	sp := storedPlan{ref: PlanRef{Hash: hex.EncodeToString(sum[:]), Size: len(js)}}
	for data := gz; len(data) > 0; {
		n := min(len(data), planChunkSize)
		sp.chunks = append(sp.chunks, data[:n])
		data = data[n:]
	}
	sp.ref.Chunks = len(sp.chunks)
	return sp, nil
}

// store starts the PlanStore workflows of a plan that the server does not
// hold yet; a plan stored before (the same hash) is left as it is.
func (sp storedPlan) store(ctx context.Context, c client.Client) error {
	for i, data := range sp.chunks {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                       PlanChunkID(sp.ref.Hash, i),
			TaskQueue:                plan.DefaultTaskQueue,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:            fmt.Sprintf("plan %.12s, chunk %d of %d", sp.ref.Hash, i+1, len(sp.chunks)),
		}, PlanStoreName, PlanChunk{Hash: sp.ref.Hash, Index: i, Data: data})
		if err != nil {
			return fmt.Errorf("store the plan on the server (chunk %d of %d): %w", i+1, len(sp.chunks), err)
		}
	}
	return nil
}

// StorePlan stores p on the server, once, and returns its reference.
func StorePlan(ctx context.Context, c client.Client, p *plan.Plan) (PlanRef, error) {
	sp, err := encodePlan(p)
	if err != nil {
		return PlanRef{}, err
	}
	return sp.ref, sp.store(ctx, c)
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
