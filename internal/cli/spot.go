package cli

import (
	"context"

	"github.com/porch-pipelines/porch/workflows"
)

// spotDetail says how often a running spot step was preempted, and when it
// moved to dedicated workers; "" before its first preemption. A step that
// moved is not asked again.
func (w *stepWatcher) spotDetail(ctx context.Context, s workflows.StepState) string {
	key := "spot:" + s.WorkflowID
	if d, ok := w.details[key]; ok {
		return d
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := w.c.QueryWorkflow(ctx, s.WorkflowID, "", workflows.SpotQuery)
	if err != nil {
		return ""
	}
	var st workflows.SpotState
	if v.Get(&st) != nil {
		return ""
	}
	if st.Dedicated {
		w.details[key] = st.Summary()
	}
	return st.Summary()
}
