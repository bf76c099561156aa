package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

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
		p, err := readStoredPlan(ctx, c, *in.Plan)
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

// readStoredPlan reads the stored plan ref names from the server and
// checks its hash. A reader does not hold the plan: a plan whose store
// retention deleted is gone.
func readStoredPlan(ctx context.Context, c client.Client, ref PlanRef) (*plan.Plan, error) {
	var gz []byte
	for i := range ref.Chunks {
		ch, err := readChunk(ctx, c, ref, i)
		if err != nil {
			return nil, err
		}
		gz = append(gz, ch...)
	}
	return decodePlan(ref, gz)
}
