package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// sweepProgress asks a sweep step's workflow for its trials.
func sweepProgress(ctx context.Context, c client.Client, workflowID string) (workflows.SweepProgress, bool) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var p workflows.SweepProgress
	v, err := c.QueryWorkflow(ctx, workflowID, "", workflows.TrialsQuery)
	if err != nil || v.Get(&p) != nil {
		return p, false
	}
	return p, true
}

// printTrials prints every sweep step's trials: parameters, last and best
// metric, status and duration, the best marked.
func printTrials(ctx context.Context, w io.Writer, c client.Client, steps []workflows.StepState) {
	for _, s := range steps {
		if s.Type != plan.StepSweep || s.WorkflowID == "" || s.Status == workflows.StatusWaiting || s.Status == workflows.StatusSkipped {
			continue
		}
		p, ok := sweepProgress(ctx, c, s.WorkflowID)
		if !ok || len(p.Trials) == 0 {
			continue
		}
		fmt.Fprintf(w, "trials of %s (%s, %s):\n", s.Path, p.Metric, p.Goal)
		writeTrialTable(w, p)
	}
}

func writeTrialTable(w io.Writer, p workflows.SweepProgress) {
	var names []string
	seen := map[string]bool{}
	for _, t := range p.Trials {
		for _, v := range t.Params {
			if !seen[v.Name] {
				seen[v.Name] = true
				names = append(names, v.Name)
			}
		}
	}
	best, _ := p.Best()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  TRIAL\t%s\tLAST\tBEST\tSTATUS\tDURATION\t\n", strings.ToUpper(strings.Join(names, "\t")))
	now := time.Now()
	for _, t := range p.Trials {
		var vals []string
		for _, n := range names {
			v := "-"
			for _, pv := range t.Params {
				if pv.Name == n {
					v = pv.Text
				}
			}
			vals = append(vals, v)
		}
		last, top := "-", "-"
		if k := len(t.Points); k > 0 {
			last = fmt.Sprintf("%.4g", t.Points[k-1].Value)
			b, _ := t.BestValue(p.Goal)
			top = fmt.Sprintf("%.4g", b)
		}
		end := t.Ended
		if end.IsZero() {
			end = now
		}
		mark := ""
		if t.Trial == best {
			mark = "* best"
		}
		status := strings.ReplaceAll(string(t.Status), "_", "-")
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Trial, strings.Join(vals, "\t"), last, top, status,
			formatDuration(end.Sub(t.Started)), mark)
	}
	tw.Flush()
}
