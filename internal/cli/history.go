package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/internal/history"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
)

func (a *app) jobHistoryCommand() *cobra.Command {
	var flags serverFlags
	var dir string
	cmd := &cobra.Command{
		Use:   "history RUN [--dir DIR]",
		Short: "Write the Temporal histories of a run and all its steps, to check them with porch replay",
		Long: "Write the Temporal histories of a run and of every workflow of it (steps, nested pipelines,\n" +
			"sweep trials, the runs of each that continued as new), running or closed, as far as they go.\n\n" +
			"Without --dir, one JSON document goes to stdout:\n" +
			"  {\"run\": RUN, \"workflows\": [{\"workflow_id\", \"run_id\", \"workflow_type\", \"history\"}, ...]}\n" +
			"each history as `temporal workflow show --output json` writes it. With --dir, one such\n" +
			"history file per workflow execution, named after the workflow id: DIR/RUN.json,\n" +
			"DIR/RUN/STEP.json, and DIR/RUN/STEP@2.json for a second run of the same workflow id.\n" +
			"`porch replay` reads either form.",
		Args: runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess, err := a.connect(cmd.Context(), flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			return a.exportHistories(cmd.Context(), sess, args[0], dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "write one history file per workflow execution in this folder (created if missing)")
	flags.register(cmd)
	return cmd
}

// exportHistories writes the histories of runID's workflows to stdout, or
// to files in dir.
func (a *app) exportHistories(ctx context.Context, sess *session, runID, dir string) error {
	query := ""
	if !strings.ContainsAny(runID, `'"\`) {
		// Porch's run ids need no quoting; another id is found through
		// its history alone.
		query = fmt.Sprintf("%s = '%s'", workflows.AttrRun, runID)
	}
	refs, err := history.Find(ctx, sess.client, sess.settings.Namespace, runID, query)
	if err != nil {
		return historyError(sess, runID, err)
	}
	if dir == "" {
		w := history.NewDocumentWriter(a.stdout, runID)
		for _, r := range refs {
			e, err := history.Fetch(ctx, sess.client, r)
			if err != nil {
				return err
			}
			if err := w.Add(e); err != nil {
				return fmt.Errorf("write the histories of run %s: %v", runID, err)
			}
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("write the histories of run %s: %v", runID, err)
		}
		fmt.Fprintf(a.stderr, "porch: wrote the histories of %s of %s\n", plural(len(refs), "workflow execution"), runID)
		return nil
	}
	runs := map[string]int{}
	for _, r := range refs {
		e, err := history.Fetch(ctx, sess.client, r)
		if err != nil {
			return err
		}
		runs[r.WorkflowID]++
		path, err := history.WriteFile(dir, e, runs[r.WorkflowID])
		if err != nil {
			return fmt.Errorf("write the history of %s: %v", r.WorkflowID, err)
		}
		fmt.Fprintf(a.stdout, "%s (%s, %d events)\n", path, e.WorkflowType, len(e.History.GetEvents()))
	}
	return nil
}

// historyError explains an error finding a run's workflows.
func historyError(sess *session, runID string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return runError(sess, runID, err)
	}
	return fmt.Errorf("run %s: %v%s", runID, err, searchAttributesHint(err, sess.settings))
}
