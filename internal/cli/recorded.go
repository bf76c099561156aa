package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// openedRun is a run as a job command found it: on the server (sess and
// info), or only in its record (rec), when no server is configured or
// the server does not know it (an embedded run's, or one its retention
// dropped).
type openedRun struct {
	sess *session
	info *workflowpb.WorkflowExecutionInfo
	rec  *recordedRun
}

// Close closes the session, if any.
func (r *openedRun) Close() {
	if r.sess != nil {
		r.sess.Close()
	}
}

// openRun finds runID on the server porch knows of, else in its record
// in the datastores: those under the home, and with a server its
// registered ones.
func (a *app) openRun(ctx context.Context, flags serverFlags, runID string) (*openedRun, error) {
	s, err := a.serverSettings(flags)
	if errors.Is(err, errNoServer) {
		stores := recordStores(ctx, s.Home, nil, nil)
		if len(stores) == 0 {
			return nil, err
		}
		rec, rerr := findRecord(stores, runID)
		if errors.Is(rerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s; %w", strings.TrimSuffix(rerr.Error(), ": "+fs.ErrNotExist.Error()), err)
		}
		if rerr != nil {
			return nil, rerr
		}
		return &openedRun{rec: rec}, nil
	}
	if err != nil {
		return nil, err
	}
	sess, err := a.dial(ctx, s)
	if err != nil {
		return nil, err
	}
	desc, err := sess.client.DescribeWorkflowExecution(ctx, runID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		rec, rerr := findRecord(recordStores(ctx, s.Home, sess.datastores(ctx), sess), runID)
		if rerr == nil {
			return &openedRun{sess: sess, rec: rec}, nil
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			sess.Close()
			return nil, rerr
		}
	}
	if err != nil {
		sess.Close()
		return nil, runError(sess, runID, err)
	}
	return &openedRun{sess: sess, info: desc.GetWorkflowExecutionInfo()}, nil
}

// showRecorded prints a run from its record as porch job show prints
// one from its server. paths and logs map the record's URIs to this host.
func (a *app) showRecorded(r *recordedRun, paths pathMapper, logs logLocator) {
	fmt.Fprintf(a.stdout, "run %s: %s (started %s, took %s; from its record %s)\n", r.Run, r.Status,
		r.Started.Local().Format("2006-01-02 15:04:05"), formatDuration(r.Ended.Sub(r.Started)), r.where)
	if r.SubmittedBy != "" {
		fmt.Fprintf(a.stdout, "submitted by %s\n", r.SubmittedBy)
	}
	writeStepTable(a, r.steps)
	writeWhyStepsRan(a.stdout, r.Run, r.steps)
	switch r.Status {
	case workflows.RecordCompleted:
		a.printOutputs(paths, watchOutcome{result: workflows.PipelineResult{Outputs: r.Outputs}, steps: r.steps})
	case workflows.RecordFailed:
		for _, f := range r.failures(logs) {
			a.printFailure(f)
		}
	}
}

// mappers are how a run's URIs map to this host: through the server's
// datastores when there is one, else to the home's folders.
func (a *app) mappers(ctx context.Context, r *openedRun) (pathMapper, logLocator) {
	if r.sess != nil {
		return r.sess.paths(ctx), r.sess.logs(ctx)
	}
	home, _ := resolveHome(a.getenv)
	return homePaths(home), logLocator{home: home}
}

// failures explains a recorded failed run: its failed command and
// parallel steps (else its failed steps, else the run's error), with the
// last lines the step's error carries and where its log is.
func (r *recordedRun) failures(logs logLocator) []stepFailure {
	var out []stepFailure
	for _, only := range []bool{true, false} {
		for _, s := range r.steps {
			if s.Status != workflows.StatusFailed || only && s.Type != plan.StepCommand && s.Type != plan.StepParallel {
				continue
			}
			f := stepFailure{path: s.Path, message: firstLine(s.Error), attempt: s.Attempt,
				logFile: logs.find(r.Run, r.DefaultDatastore, s).String()}
			if _, tail, ok := strings.Cut(strings.TrimSpace(s.Error), "\n"); ok {
				f.stderr = strings.Split(tail, "\n")
			}
			if s.Type == plan.StepParallel {
				f.tailLabel = "traceback"
			}
			out = append(out, f)
		}
		if len(out) > 0 {
			return out
		}
	}
	return []stepFailure{{message: r.Error}}
}
