package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/workflows"
)

func (a *app) jobGraphCommand() *cobra.Command {
	var flags serverFlags
	var output string
	cmd := &cobra.Command{
		Use:   "graph RUN",
		Short: "Print a run's DAG with each step's status: Mermaid, Graphviz DOT, or SVG (drawn by Graphviz's dot)",
		Long: "Print a run's DAG, each step labelled and coloured with its status: -o mermaid for a README or\n" +
			"an issue, -o dot for Graphviz, -o svg for a browser (needs Graphviz's dot on PATH).\n" +
			"porch compile -o mermaid|dot FILE prints a pipeline's DAG before it runs.",
		Example: "  porch job graph hello-k35ecs76 > run.mmd\n" +
			"  porch job graph hello-k35ecs76 -o svg > run.svg",
		Args: exactArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "mermaid" && output != "dot" && output != "svg" {
				return usageError("-o %q: expected mermaid, dot or svg", output)
			}
			sess, err := a.connect(cmd.Context(), flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			g, statuses, err := runGraph(cmd.Context(), sess, args[0])
			if err != nil {
				return err
			}
			switch output {
			case "mermaid":
				_, err = fmt.Fprint(a.stdout, graph.Mermaid(g, statuses))
			case "dot":
				_, err = fmt.Fprint(a.stdout, graph.DOT(args[0], g, statuses))
			default:
				err = writeSVG(cmd.Context(), a, graph.DOT(args[0], g, statuses))
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "mermaid", "mermaid, dot or svg")
	flags.register(cmd)
	return cmd
}

// runGraph reads a run's DAG from its plan (workflows.RunGraph) and its
// steps' statuses through the steps query, nested pipelines included.
func runGraph(ctx context.Context, sess *session, runID string) (graph.Graph, map[string]graph.Status, error) {
	desc, err := sess.client.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return graph.Graph{}, nil, runError(sess, runID, err)
	}
	gctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	g, err := workflows.RunGraph(gctx, sess.client, runID)
	if err != nil {
		return graph.Graph{}, nil, fmt.Errorf("read the graph of run %s: %v", runID, err)
	}
	w := newStepWatcher(sess.client)
	w.workers = newWorkerCheck(sess.client, sess.settings.connectFlags(), 0)
	steps, err := w.snapshot(ctx, runID)
	if err != nil {
		return graph.Graph{}, nil, fmt.Errorf("read the steps of run %s: %v: porch reads them from a worker running "+
			"porch workflows of this version or later (start one with: porch worker %s)", runID, err, sess.settings.connectFlags())
	}
	steps = endedWithRun(steps, desc.GetWorkflowExecutionInfo())
	out := make(map[string]graph.Status, len(steps))
	for _, s := range steps {
		out[s.Path] = graph.StatusOf(string(s.Status))
		if s.Status == workflows.StatusRunning && w.workers.found[s.WorkflowID] != "" {
			out[s.Path] = graph.Waiting
		}
	}
	return g, out, nil
}

// writeSVG draws dot text as SVG with Graphviz's dot.
func writeSVG(ctx context.Context, a *app, dot string) error {
	bin, err := exec.LookPath("dot")
	if err != nil {
		return errors.New("-o svg draws with Graphviz's dot, which is not on PATH: install Graphviz (apt-get install graphviz, " +
			"brew install graphviz), or print -o dot or -o mermaid and render that elsewhere")
	}
	cmd := exec.CommandContext(ctx, bin, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	cmd.Stdout = a.stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -Tsvg: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
