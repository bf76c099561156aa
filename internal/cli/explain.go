package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/activities/reuse"
	"github.com/porch-pipelines/porch/workflows"
)

// jobExplainCommand is `porch job explain RUN STEP`: the step's reuse key,
// part by part, beside the step's latest record before the run.
func (a *app) jobExplainCommand() *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "explain RUN STEP",
		Short: "Say why a step ran or was reused: its reuse key, part by part, beside the latest record of the step",
		Args:  runArgs(2, "a run id (see porch job list) and a step path (see porch job show RUN)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.openRun(cmd.Context(), flags, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			var steps []workflows.StepState
			if r.rec != nil {
				steps = r.rec.steps
			} else if steps, err = newStepWatcher(r.sess.client).snapshot(cmd.Context(), args[0]); err != nil {
				return runError(r.sess, args[0], err)
			}
			for _, s := range steps {
				if s.Path == args[1] {
					return explainStep(a.stdout, args[0], s)
				}
			}
			var paths []string
			for _, s := range steps {
				paths = append(paths, s.Path)
			}
			return usageError("run %s has no step %q: its steps are %q", args[0], args[1], paths)
		},
	}
	flags.register(cmd)
	return cmd
}

// explainStep prints a step's reuse decision and its key's comparison.
func explainStep(w io.Writer, runID string, s workflows.StepState) error {
	r := s.Reuse
	switch {
	case r == nil:
		fmt.Fprintf(w, "step %s of run %s: %s, without a reuse decision (a nested pipeline's steps decide their own, and runs started before porch reused steps decided none)\n", s.Path, runID, s.Status)
		return nil
	case r.Key == "":
		fmt.Fprintf(w, "step %s of run %s: %s: %s\n", s.Path, runID, s.Status, r.Reason)
		return nil
	case s.Status == workflows.StatusReused:
		fmt.Fprintf(w, "step %s of run %s: reused the outputs of step %s of run %s\n", s.Path, runID, r.FromStep, r.FromRun)
	default:
		fmt.Fprintf(w, "step %s of run %s: %s; it ran because: %s\n", s.Path, runID, s.Status, r.Reason)
	}
	fmt.Fprintf(w, "key %s\n", r.Key)
	if r.WasRun == "" {
		fmt.Fprintln(w, "no earlier record of this step in this pipeline")
	} else {
		fmt.Fprintf(w, "compared with the latest record before it, of run %s:\n", r.WasRun)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tTHIS RUN\tRECORDED\t")
	for _, c := range reuse.Compare(r.Parts, r.Was) {
		state := "same"
		switch {
		case r.WasRun == "":
			state = ""
		case c.Hash == "":
			state = "removed"
		case c.Was == "":
			state = "added"
		case c.Changed():
			state = "changed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, partValue(c.Hash, c.Detail, c.Step), partValue(c.Was, c.WasDetail, ""), state)
	}
	return tw.Flush()
}

// partValue is a part's short hash, with what it stands for.
func partValue(hash, detail, step string) string {
	if hash == "" {
		return "-"
	}
	v := reuse.Short(hash)
	switch {
	case step != "":
		v += " (output of " + step + ")"
	case detail != "":
		v += " (" + truncate(detail, 50) + ")"
	}
	return v
}
