package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
)

func (a *app) jobLogsCommand() *cobra.Command {
	var flags serverFlags
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs RUN [STEP]",
		Short: "Print a run's step logs (all, or STEP): a command's std_log.txt, a parallel step's mini-batch report, a sweep's trials' logs",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError("job logs expects a run id and optionally a step path (see porch job show RUN)")
			}
			return runArgs(len(args), "")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			step := ""
			if len(args) == 2 {
				step = args[1]
			}
			s, err := a.serverSettings(flags)
			if errors.Is(err, errNoServer) {
				// An embedded porch run's server is gone with it; its
				// logs are files in the datastore.
				return a.printStoredLogs(datastoreRoots(s.Home, nil), args[0], step, err.Error())
			}
			if err != nil {
				return err
			}
			sess, err := a.dial(cmd.Context(), s)
			if err != nil {
				return err
			}
			defer sess.Close()
			return a.stepLogs(cmd.Context(), sess, args[0], step, follow)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing as the logs grow, until the run ends (a run no server knows has ended: nothing to follow)")
	flags.register(cmd)
	return cmd
}

// logFile is one step's log and how much of it was printed.
type logFile struct {
	step   workflows.StepState
	log    stepLog
	offset int64
	// warned says a reason the log cannot be read was printed.
	warned bool
}

// stepLogs prints the logs of the command steps of runID, or of step.
func (a *app) stepLogs(ctx context.Context, sess *session, runID, step string, follow bool) error {
	if _, err := sess.client.DescribeWorkflowExecution(ctx, runID, ""); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			// A run of an embedded server that is gone left its logs in
			// the datastore.
			return a.printStoredLogs(datastoreRoots(sess.settings.Home, sess.datastores(ctx)), runID, step,
				fmt.Sprintf("no run %q on %s (namespace %s)", runID, sess.settings.Address, sess.settings.Namespace))
		}
		return runError(sess, runID, err)
	}
	w := newStepWatcher(sess.client)
	files, err := a.logFiles(ctx, w, sess, runID, step)
	if err != nil {
		return err
	}
	last := ""
	for {
		// Read the state before printing, so the pass after the run ends
		// drains everything.
		open := follow && a.runOpen(ctx, sess, runID)
		for _, f := range files {
			last = a.printNew(ctx, sess, f, len(files) > 1, last)
		}
		if !open {
			break
		}
		select {
		case <-ctx.Done():
			return silentExit(ExitInterrupted)
		case <-time.After(pollInterval):
		}
		// Steps that start later appear in later snapshots.
		if more, err := a.logFiles(ctx, w, sess, runID, step); err == nil {
			files = mergeLogFiles(files, more)
		}
	}
	if step != "" && len(files) == 1 && files[0].offset == 0 && !files[0].warned {
		f := files[0]
		if f.log.store != nil {
			fmt.Fprintf(a.stderr, "porch: step %s (%s) has no log in datastore %q yet, nor on this host: its worker copies it to %s when the step ends\n",
				f.step.Path, f.step.Status, f.log.store.Name, f.log)
		} else {
			fmt.Fprintf(a.stderr, "porch: step %s (%s) has no log on this host: %s\n", f.step.Path, f.step.Status, f.log)
		}
	}
	return nil
}

// logFiles lists the log files of the run's command and parallel steps
// matching step.
func (a *app) logFiles(ctx context.Context, w *stepWatcher, sess *session, runID, step string) ([]*logFile, error) {
	steps, err := w.snapshot(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("read the steps of run %s: %v: porch reads them from a worker running porch workflows "+
			"(start one with: porch worker %s)", runID, err, sess.settings.connectFlags())
	}
	var files []*logFile
	var names []string
	logs, datastore := sess.logs(ctx), sess.runDatastore(ctx, runID)
	for _, s := range withTrials(ctx, sess, runID, steps) {
		if s.Type != plan.StepCommand && s.Type != plan.StepParallel {
			continue
		}
		names = append(names, s.Path)
		if step != "" && s.Path != step && !strings.HasSuffix(s.Path, "/"+step) && !strings.HasPrefix(s.Path, step+"/trial-") {
			continue
		}
		files = append(files, &logFile{step: s, log: logs.find(runID, datastore, s)})
	}
	if step != "" && len(files) == 0 {
		return nil, fmt.Errorf("run %s has no command or parallel step %q: its steps are %s", runID, step, strings.Join(names, ", "))
	}
	return files, nil
}

// withTrials adds, after each sweep step, its trials as command steps
// ("<sweep>/trial-<n>"), so their logs can be printed like any step's.
func withTrials(ctx context.Context, sess *session, runID string, steps []workflows.StepState) []workflows.StepState {
	out := make([]workflows.StepState, 0, len(steps))
	for _, s := range steps {
		out = append(out, s)
		if s.Type != plan.StepSweep || s.WorkflowID == "" {
			continue
		}
		p, ok := sweepProgress(ctx, sess.client, s.WorkflowID)
		if !ok {
			continue
		}
		for _, t := range p.Trials {
			out = append(out, workflows.StepState{
				Path: strings.TrimPrefix(t.WorkflowID, runID+"/"), Type: plan.StepCommand,
				WorkflowID: t.WorkflowID, Started: t.Started, Ended: t.Ended,
			})
		}
	}
	return out
}

// mergeLogFiles keeps the offsets of known files and adds new ones.
func mergeLogFiles(old, fresh []*logFile) []*logFile {
	byPath := map[string]*logFile{}
	for _, f := range old {
		byPath[f.step.Path] = f
	}
	for i, f := range fresh {
		if o, ok := byPath[f.step.Path]; ok {
			o.step = f.step
			fresh[i] = o
		}
	}
	return fresh
}

// printNew prints what was appended to f since the last call, under a
// header when several steps' logs interleave. It returns the step printed
// last. A log that cannot be read for another reason than not existing
// yet is reported once.
func (a *app) printNew(ctx context.Context, sess *session, f *logFile, headers bool, last string) string {
	r, err := sess.openLog(ctx, f.log, f.offset)
	if err != nil {
		// A step that has not started has no log yet.
		if !errors.Is(err, fs.ErrNotExist) && !f.warned {
			f.warned = true
			fmt.Fprintf(a.stderr, "porch: cannot read the log of step %s: %v\n", f.step.Path, err)
		}
		return last
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if len(data) == 0 || err != nil {
		return last
	}
	if headers && last != f.step.Path {
		fmt.Fprintf(a.stdout, "==> %s (%s) <==\n", f.step.Path, f.log)
	}
	a.stdout.Write(data)
	f.offset += int64(len(data))
	return f.step.Path
}

// runOpen says whether the run is still running.
func (a *app) runOpen(ctx context.Context, sess *session, runID string) bool {
	desc, err := sess.client.DescribeWorkflowExecution(ctx, runID, "")
	return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
}
