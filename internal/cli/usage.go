package cli

import (
	"context"
	"fmt"
	"io"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/activities/parallel"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// nodeUsage reads the live resource usage of a running parallel step's
// nodes: the last heartbeat of each node's resource monitor.
func nodeUsage(ctx context.Context, c client.Client, workflowID string) []parallel.NodeUsage {
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil
	}
	var out []parallel.NodeUsage
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != parallel.MonitorResourcesName {
			continue
		}
		payloads := pa.GetHeartbeatDetails().GetPayloads()
		if len(payloads) == 0 {
			continue
		}
		var u parallel.NodeUsage
		if converter.GetDefaultDataConverter().FromPayload(payloads[0], &u) == nil && u.Node != "" {
			out = append(out, u)
		}
	}
	return out
}

// printUsage prints the live usage of every running parallel step.
func printUsage(ctx context.Context, w io.Writer, c client.Client, steps []workflows.StepState) {
	for _, s := range steps {
		if s.Type != plan.StepParallel || s.Status != workflows.StatusRunning {
			continue
		}
		for _, u := range nodeUsage(ctx, c, s.WorkflowID) {
			fmt.Fprintf(w, "%s on %s: %s\n", s.Path, u.Node, describeUsage(u))
		}
	}
}

// describeUsage is a sample in one line.
func describeUsage(u parallel.NodeUsage) string {
	s := u.Sample
	return fmt.Sprintf("cpu %.0f%%, memory %s of %s (%.0f%%); entry scripts: %d processes, cpu %.0f%% of a core, rss %s (at %s)",
		s.CPUPercent, bytesSize(s.MemUsedBytes), bytesSize(s.MemTotalBytes), s.MemPercent,
		s.Processes, s.TreeCPUPercent, bytesSize(s.TreeRSSBytes), s.Time.Local().Format("15:04:05"))
}

// bytesSize is 512 B, 3.1 MiB, 2.0 GiB.
func bytesSize(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
