package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"
)

// catalogTimeout bounds a catalogue command's call: the catalogue workflow
// answers only while a worker serves porch's default task queue.
const catalogTimeout = 30 * time.Second

// connectCatalog opens a session with a server that keeps the catalogue:
// a scratch embedded server would forget it at once.
func (a *app) connectCatalog(ctx context.Context, flags serverFlags) (*session, error) {
	sess, err := a.connect(ctx, flags)
	if errors.Is(err, errNoServer) {
		return nil, errors.New("the catalogue lives on a porch server: start one with `porch dev` (or pass --address)")
	}
	if err != nil {
		return nil, err
	}
	if sess.embedded() {
		sess.Close()
		return nil, errors.New("the catalogue lives on a porch server: start one with `porch dev` (or pass --address)")
	}
	return sess, nil
}

// withCatalog runs fn against the catalogue on the configured server.
func (a *app) withCatalog(ctx context.Context, flags serverFlags, fn func(ctx context.Context, sess *session) error) error {
	sess, err := a.connectCatalog(ctx, flags)
	if err != nil {
		return err
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	// The catalogue workflow answers only on a worker: without one, an
	// update would wait in the workflow's history and be applied whenever a
	// worker starts, long after this command gave up. Refuse before sending.
	if !workflowWorkerAppears(ctx, sess) {
		return fmt.Errorf("no worker runs porch's workflows on %s (task queue %q), so the catalogue cannot answer; "+
			"nothing was changed: start porch dev, or porch worker --address %s, and run this again",
			sess.settings.Address, plan.DefaultTaskQueue, sess.settings.Address)
	}
	err = fn(ctx, sess)
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("the catalogue on %s did not answer within %s: is a worker running porch's workflows "+
			"(porch dev, or porch worker) on that server?", sess.settings.Address, catalogTimeout)
	}
	return err
}

// pollerGrace is how long a catalogue command waits for porch's workflow
// worker to show as a poller: a porch dev or worker that has just started
// polls within a moment of announcing itself.
const pollerGrace = 5 * time.Second

// workflowWorkerAppears says whether a worker polls porch's default task
// queue for workflow tasks, waiting up to pollerGrace for one.
func workflowWorkerAppears(ctx context.Context, sess *session) bool {
	deadline := time.Now().Add(pollerGrace)
	for {
		if hasPollers(ctx, sess.client, plan.DefaultTaskQueue, enums.TASK_QUEUE_TYPE_WORKFLOW) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// register sends one entry and prints what happened.
func (a *app) register(ctx context.Context, flags serverFlags, e workflows.CatalogEntry, what string) error {
	return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
		res, err := workflows.RegisterCatalogEntry(ctx, sess.client, e)
		if err != nil {
			return err
		}
		verb := "registered"
		if res.Replaced {
			verb = "replaced"
		}
		fmt.Fprintf(a.stdout, "%s %s on %s (namespace %s)\n", what, verb, sess.settings.Address, sess.settings.Namespace)
		return nil
	})
}

// remove removes one entry and prints what happened.
func (a *app) remove(ctx context.Context, flags serverFlags, r workflows.CatalogRemoval, what string) error {
	return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
		if err := workflows.RemoveCatalogEntry(ctx, sess.client, r); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s deleted\n", what)
		return nil
	})
}

// catalog reads the whole catalogue.
func (a *app) catalog(ctx context.Context, flags serverFlags, fn func(cat plan.Catalog, sess *session) error) error {
	return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
		cat, err := workflows.GetCatalog(ctx, sess.client)
		if err != nil {
			return fmt.Errorf("read the catalogue on %s: %v", sess.settings.Address, err)
		}
		return fn(cat, sess)
	})
}

// createFileCommand is a `create -f FILE` subcommand.
func (a *app) createFileCommand(kind string, create func(ctx context.Context, file string, flags serverFlags) error) *cobra.Command {
	var flags serverFlags
	var file string
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Register a " + kind + " from its YAML file (as az ml " + kind + " create)",
		Args:  exactArgs(0, "no arguments: name the file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageError("%s create needs the %s's file: porch %s create -f FILE", kind, kind, kind)
			}
			return create(cmd.Context(), file, flags)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the "+kind+" YAML file")
	flags.register(cmd)
	return cmd
}

// catalogCommand is a subcommand taking positional arguments and the
// server flags.
func catalogCommand(use, short string, args cobra.PositionalArgs, run func(ctx context.Context, args []string, flags serverFlags) error) *cobra.Command {
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), args, flags)
		},
	}
	flags.register(cmd)
	return cmd
}

// splitVersion splits NAME, NAME:VERSION and NAME@latest; version is ""
// for the latest.
func splitVersion(ref string) (name, version string, err error) {
	if n, ok := strings.CutSuffix(ref, "@latest"); ok {
		return n, "", nil
	}
	name, version, _ = strings.Cut(ref, ":")
	if name == "" || strings.ContainsAny(version, ":@") {
		return "", "", usageError("%q: expected NAME, NAME:VERSION or NAME@latest", ref)
	}
	return name, version, nil
}

// printTable writes a header and rows with aligned columns.
func (a *app) printTable(header string, rows [][]string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		for i, c := range r {
			if c == "" {
				r[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// none says the catalogue has no entries of a kind.
func (a *app) none(sess *session, what, kind string) {
	fmt.Fprintf(a.stdout, "no %s registered on %s (namespace %s): register one with `porch %s create -f FILE`\n",
		what, sess.settings.Address, sess.settings.Namespace, kind)
}
