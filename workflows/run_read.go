package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
)

// QuerySteps reads every step of the Pipeline workflow id through its
// steps query, a page (StepsPage) at a time, each within pageTimeout: a
// run's steps may be more than one query answers.
func QuerySteps(ctx context.Context, c client.Client, id string, pageTimeout time.Duration) ([]StepState, error) {
	var out []StepState
	for page := (StepsPage{Gzip: true}); ; {
		qctx, cancel := context.WithTimeout(ctx, pageTimeout)
		v, err := c.QueryWorkflow(qctx, id, "", StepsQuery, page)
		cancel()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := v.Get(&raw); err != nil {
			return nil, err
		}
		if bytes.HasPrefix(raw, []byte("[")) {
			// A worker of a porch before pages ignores the argument and
			// answers every step.
			var steps []StepState
			return steps, json.Unmarshal(raw, &steps)
		}
		var a StepsPageAnswer
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		if a.Gzip != nil {
			js, err := gunzipBytes(a.Gzip)
			if err == nil {
				err = json.Unmarshal(js, &a.Steps)
			}
			if err != nil {
				return nil, fmt.Errorf("the steps query of %s answered steps %d to %d that cannot be read: %v", id, page.Start, a.Next, err)
			}
		}
		if out == nil {
			out = make([]StepState, 0, a.Total)
		}
		out = append(out, a.Steps...)
		if a.Next >= a.Total {
			return out, nil
		}
		if a.Next <= page.Start {
			return nil, fmt.Errorf("the steps query of %s answered no step from step %d of %d", id, page.Start, a.Total)
		}
		page.Start = a.Next
	}
}

// RunGraph is the DAG of the run id, built from the pipeline its input
// holds or names (a plan stored on the server, read from its PlanStore
// workflows): it reads the server's history and needs no worker, and it is
// whole however large the run, where the graph query answers at most
// answerBudget. A run compiled to another plan version is asked its graph
// query, which a worker of its version answers.
func RunGraph(ctx context.Context, c client.Client, id string) (graph.Graph, error) {
	in, err := startInput(ctx, c, id, "")
	if err != nil {
		return graph.Graph{}, err
	}
	if in.PlanVersion != plan.Version {
		var g graph.Graph
		v, err := c.QueryWorkflow(ctx, id, "", GraphQuery)
		if err == nil {
			err = v.Get(&g)
		}
		return g, err
	}
	if in.Plan != nil {
		p, err := ReadPlan(ctx, c, *in.Plan)
		if err != nil {
			return graph.Graph{}, err
		}
		in.Pipeline = p.Pipeline
		if in.Prefix != "" {
			sub, ok := subPipeline(p.Pipeline, in.Prefix)
			if !ok {
				return graph.Graph{}, fmt.Errorf("the plan %s of %s has no pipeline step %q", in.Plan.Hash, id, in.Prefix)
			}
			in.Pipeline = sub
		}
	}
	return graph.Of(in.Pipeline), nil
}

// ReadPlan reads the stored plan ref names from the server and checks its
// hash.
func ReadPlan(ctx context.Context, c client.Client, ref PlanRef) (*plan.Plan, error) {
	chunks, err := ReadPlanChunks(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	var gz []byte
	for _, ch := range chunks {
		gz = append(gz, ch...)
	}
	return decodePlan(ref, gz)
}

// ReadPlanChunks reads every chunk of a stored plan from the server: the
// inputs of its PlanStore workflows.
func ReadPlanChunks(ctx context.Context, c client.Client, ref PlanRef) ([][]byte, error) {
	out := make([][]byte, ref.Chunks)
	for i := range out {
		id := PlanChunkID(ref.Hash, i)
		it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			return nil, fmt.Errorf("the server holds no workflow %s", id)
		}
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read workflow %s: %w", id, err)
		}
		payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
		var ch PlanChunk
		if len(payloads) == 0 {
			return nil, fmt.Errorf("workflow %s has no input", id)
		}
		if err := converter.GetDefaultDataConverter().FromPayload(payloads[0], &ch); err != nil {
			return nil, fmt.Errorf("read workflow %s's input: %w", id, err)
		}
		if ch.Hash != ref.Hash || ch.Index != i {
			return nil, fmt.Errorf("workflow %s holds chunk %d of plan %s", id, ch.Index, ch.Hash)
		}
		out[i] = ch.Data
	}
	return out, nil
}
