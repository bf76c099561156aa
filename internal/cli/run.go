package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// cancelWait bounds the wait for a canceled run's steps to stop.
const cancelWait = time.Minute

// setUsage is the help of --set.
const setUsage = "override what the file says, as az ml job create --set (repeatable): inputs.NAME=VALUE, " +
	"inputs.NAME.path=PATH, settings.force_rerun=True, jobs.STEP.compute=NAME, display_name=TEXT, tags.KEY=VALUE, ..."

// runFlags are the flags of `porch run` and `porch job create`.
type runFlags struct {
	server serverFlags
	set    []string
	detach bool
	// noReuse runs every step, as settings.force_rerun does.
	noReuse bool
	// runtime is --runtime, for an embedded run's worker.
	runtime string
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.set, "set", nil, setUsage)
	cmd.Flags().BoolVar(&f.detach, "detach", false, "submit the run and exit without watching it (needs a server)")
	cmd.Flags().BoolVar(&f.noReuse, "no-reuse", false, "run every step, reusing no earlier run's outputs (as settings.force_rerun: true)")
	registerRuntime(cmd.Flags(), &f.runtime)
	f.server.register(cmd)
}

func (a *app) runCommand(use string) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: "Compile a pipeline job YAML file, run it and watch it",
		Long: "Compile a pipeline job YAML file, run it and watch its steps.\n\n" +
			"The run goes to the configured server (--address, $TEMPORAL_ADDRESS, the address of a Temporal client\n" +
			"profile, address: in $PORCH_HOME/config.yaml), else to the `porch dev` of this porch home when one runs.\n" +
			"With neither, porch starts an embedded Temporal server and a worker for the run, and stops them at the end.\n" +
			"The first line says which server the run is on.",
		Args: exactArgs(1, "one pipeline YAML file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPipeline(cmd.Context(), args[0], f)
		},
	}
	f.register(cmd)
	return cmd
}

// jobCreateCommand is `porch job create -f FILE`, as `az ml job create`.
func (a *app) jobCreateCommand() *cobra.Command {
	var f runFlags
	var file string
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Run a pipeline job YAML file (the same as porch run FILE)",
		Args:  exactArgs(0, "no arguments: name the file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageError("job create needs the pipeline file: porch job create -f FILE")
			}
			return a.runPipeline(cmd.Context(), file, f)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the pipeline job YAML file")
	f.register(cmd)
	return cmd
}

// runPipeline compiles file, submits it and, unless detached, watches it to
// the end.
func (a *app) runPipeline(ctx context.Context, file string, f runFlags) error {
	set, err := parseSet(f.set)
	if err != nil {
		return err
	}
	name, err := runName(set)
	if err != nil {
		return err
	}
	// The same rule as every command's: the configured server, else a
	// running porch dev of this home; with neither, an embedded one.
	s, err := a.serverSettings(f.server)
	if err != nil && !errors.Is(err, errNoServer) {
		return err
	}
	p, err := a.compile(ctx, file, set, f.server, true)
	if err != nil {
		return err
	}
	if f.noReuse {
		p.Settings.ForceRerun = true
	}
	source, err := a.readSource(ctx, file)
	if err != nil {
		return err
	}
	if f.detach && s.Address == "" {
		return usageError("--detach needs a server that outlives porch, and none is configured and no `porch dev` " +
			"is running: the embedded server stops when porch exits. Start one with `porch dev`, or give a server's " +
			"address with --address or " + envAddress)
	}
	sess, err := a.openRunSession(ctx, s, p, f)
	if err != nil {
		return err
	}
	defer sess.Close()
	started := time.Now()
	run, runID, err := a.submit(ctx, sess, p, name, source)
	if err != nil {
		return err
	}
	if f.detach {
		fmt.Fprintln(a.stdout, runID)
		fmt.Fprintf(a.stderr, "porch: run %s submitted: watch it with `porch job show --watch %s`\n", runID, runID)
		return nil
	}
	a.printRunHeader(sess, runID)
	out := a.watch(ctx, sess, run, newProgress(a.stdout, a.terminal))
	if out.interrupted {
		return a.interrupted(sess, run, out)
	}
	return a.report(ctx, sess, runID, p.Settings.DefaultDatastore, time.Since(started), out)
}

// submit starts a run of p under the run name given (else a fresh run
// id): its code snapshotted, its quotas checked.
func (a *app) submit(ctx context.Context, sess *session, p *plan.Plan, name string, source []byte) (client.WorkflowRun, string, error) {
	runID := workflows.NewRunID(p)
	if name != "" {
		if err := a.checkNameFree(ctx, sess, name, p.Settings.DefaultDatastore); err != nil {
			return nil, "", err
		}
		runID = name
	}
	if err := a.prepareStart(ctx, sess, p); err != nil {
		return nil, "", err
	}
	run, err := startWhenAttributesTaken(ctx, sess.client, sess.settings.Namespace, func() (client.WorkflowRun, error) {
		return workflows.Start(ctx, sess.client, p, runID, source)
	})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil, "", nameInUse(runID, fmt.Sprintf("a run %s was started on %s a moment ago", runID, sess.settings.Address))
	}
	if err != nil {
		return nil, "", fmt.Errorf("submit the run to %s: %v%s", sess.settings.Address, err, searchAttributesHint(err, sess.settings))
	}
	return run, runID, nil
}

// prepareStart readies a compiled plan to be started, by porch run and
// job create now or by a schedule later: its code snapshotted, its quotas
// checked, its submitter recorded.
func (a *app) prepareStart(ctx context.Context, sess *session, p *plan.Plan) error {
	if err := a.snapshotCode(ctx, sess, p); err != nil {
		return err
	}
	// A step that no quota could ever admit is refused now, not left to
	// wait forever.
	if err := workflows.CheckQuotas(ctx, sess.client, p); err != nil {
		return err
	}
	p.Settings.SubmittedBy = submitter(a.getenv)
	return nil
}

// openRunSession connects to the server s names, or embeds one when it
// names none, whose worker runs steps on the runtime f asks for.
func (a *app) openRunSession(ctx context.Context, s settings, p *plan.Plan, f runFlags) (*session, error) {
	if s.Address == "" {
		rt, err := a.resolveRuntime(f.runtime, s.Home)
		if err != nil {
			return nil, err
		}
		return a.startEmbedded(ctx, s, planComputes(p), rt)
	}
	sess, err := a.dial(ctx, s)
	if err != nil {
		return nil, err
	}
	a.checkWorkers(ctx, sess, p)
	a.checkDevPython(s)
	return sess, nil
}

// printRunHeader is the first line of a watched run: its id and how to
// watch it from elsewhere.
func (a *app) printRunHeader(sess *session, runID string) {
	watch := "porch job show --watch " + runID
	switch {
	case sess.embedded():
		fmt.Fprintf(a.stdout, "run %s on an embedded server at %s (stops when porch exits): watch with `%s --address %s`",
			runID, sess.settings.Address, watch, sess.settings.Address)
	case isDevServer(sess.settings):
		fmt.Fprintf(a.stdout, "run %s on porch dev at %s: watch with `%s`", runID, sess.settings.Address, watch)
	default:
		fmt.Fprintf(a.stdout, "run %s on %s (from %s): watch with `%s`", runID, sess.settings.Address,
			sess.settings.AddressFrom, watch)
	}
	if ui := sess.uiAddress(); ui != "" {
		fmt.Fprintf(a.stdout, ", UI %s", ui)
	}
	fmt.Fprintln(a.stdout)
}

// interrupted handles Ctrl-C: an embedded server's run is canceled and
// waited for; a remote run goes on and porch says how to get back to it.
func (a *app) interrupted(sess *session, run client.WorkflowRun, out watchOutcome) error {
	id := run.GetID()
	if !sess.embedded() {
		fmt.Fprintf(a.stderr, "porch: stopped watching; run %s goes on on %s\n"+
			"  reattach: porch job show --watch %s\n  cancel:   porch job cancel %s\n", id, sess.settings.Address, id, id)
		return silentExit(ExitInterrupted)
	}
	fmt.Fprintf(a.stderr, "porch: interrupted: canceling run %s and stopping its steps (Ctrl-C again to quit at once)\n", id)
	// A second signal now kills porch the default way.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
	defer cancel()
	if err := sess.client.CancelWorkflow(ctx, id, ""); err != nil {
		fmt.Fprintf(a.stderr, "porch: cancel run %s: %v\n", id, err)
		return silentExit(ExitInterrupted)
	}
	p := newPlainProgress(a.stderr, time.Local)
	p.Update(time.Now(), out.steps)
	if after := a.watch(ctx, sess, run, p); after.interrupted {
		fmt.Fprintf(a.stderr, "porch: run %s did not stop within %s; stopping the server anyway\n", id, cancelWait)
	} else {
		fmt.Fprintf(a.stderr, "porch: run %s canceled\n", id)
	}
	return silentExit(ExitInterrupted)
}
