package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/porch-pipelines/porch/quota"
)

// queryDescriptions describe porch's queries where Temporal lists them
// (`temporal workflow metadata`, the UI's Queries tab).
var queryDescriptions = map[string]string{
	StepsQuery:        "Every step of the run: its status, attempt, times, progress detail, error and outputs; at most 448 KiB, the steps from the first that fit. With an argument {\"start\": N, \"max\": M}, one page: {\"steps\", \"next\", \"total\"}; ask again from next until it is total. With \"gzip\": true, the page's steps come gzipped, in \"gzip\".",
	GraphQuery:        "The pipeline's DAG: its steps (nested pipelines' inside theirs), their type, compute and inputs, and an edge for each step output another step reads; up to 448 KiB (porch job graph reads a larger one from the run's plan).",
	ProgressQuery:     "A parallel step's progress: its phase, mini-batches planned, running, succeeded and failed, items, and the nodes it ran on.",
	TrialsQuery:       "A sweep step's trials: their parameters, status, metrics and which is best so far.",
	SpotQuery:         "A spot step's preemptions, and whether it moved to dedicated workers.",
	QuotaWaitQuery:    "Whether the step waits for quota, and for which pool.",
	CatalogQuery:      "The catalogue of datastores, data assets, components, computes and instance types.",
	quota.StatusQuery: "A quota pool's cores, its holders and the steps waiting for cores.",
}

// setQuery registers a query handler with its description.
func setQuery(ctx workflow.Context, name string, handler any) error {
	return workflow.SetQueryHandlerWithOptions(ctx, name, handler, workflow.QueryHandlerOptions{Description: queryDescriptions[name]})
}
