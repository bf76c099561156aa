// Package cli implements the porch command line: compiling, running and
// watching Azure ML pipeline jobs on Temporal, and running the development
// server and workers.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes Run returns.
const (
	ExitOK          = 0
	ExitFailure     = 1   // a failed run, a bad file, an unreachable server
	ExitUsage       = 2   // a bad command line
	ExitInterrupted = 130 // Ctrl-C or SIGTERM
	exitInternal    = 70
)

// exitError carries an exit code through cobra. A nil err means the message
// was already printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks a mistake on the command line.
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// silentExit ends the command with code, the message already printed.
func silentExit(code int) error { return &exitError{code: code} }

// app is what every command shares: the streams and the process environment,
// injectable for tests.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// terminal says whether stdout is a terminal (live redrawn progress).
	terminal bool
}

// Run runs the porch command line args (without the program name) and
// returns the process exit code. It never panics: an unexpected panic is
// reported as an internal error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "porch: internal error: %v (please report it)\n", r)
			code = exitInternal
		}
	}()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if f, ok := stdout.(*os.File); ok {
		a.terminal = term.IsTerminal(int(f.Fd()))
	}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee *exitError
	if err != nil && ctx.Err() != nil && !errors.As(err, &ee) {
		// Interrupted while starting or connecting: whatever failed did so
		// because of the signal.
		fmt.Fprintln(stderr, "porch: interrupted")
		return ExitInterrupted
	}
	return a.exitCode(err)
}

// exitCode prints err as `porch: ...` and maps it to an exit code.
func (a *app) exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(a.stderr, "porch: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(a.stderr, "porch: %v\n", err)
	if isCobraUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsage recognises the errors cobra reports for bad flags, arguments
// and commands; cobra has no typed errors for them.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument",
		"invalid argument", "accepts ", "requires ", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "porch",
		Short: "Run Azure ML CLI v2 pipeline jobs on Temporal",
		Long: "porch runs Azure Machine Learning CLI v2 pipeline YAML files, unmodified, on Temporal.\n" +
			"With no server configured, `porch run` starts an embedded one for the run.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	root.AddCommand(a.runCommand("run FILE"), a.validateCommand(), a.compileCommand(),
		a.jobCommand(), a.replayCommand(), a.devCommand(), a.workerCommand(), a.versionCommand(),
		a.datastoreCommand(),
		a.assetCommand(dataAssets, "Register, list, show and delete data assets (as az ml data)"),
		a.assetCommand(models, "Register, list, show and delete models (as az ml model)"),
		a.componentCommand(),
		a.scheduleCommand(),
		a.computeCommand(), a.instanceTypeCommand(), a.quotaCommand(), a.uiCommand(), a.environmentCommand())
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group (job, data, ...)
// refuse a word that is none of its commands, as the root does: cobra
// would print the group's help and exit 0. A group given nothing prints
// its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasParent() || !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		hint := ""
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		return usageError("unknown command %q for %q%s: its commands are %s", args[0], cmd.CommandPath(), hint,
			strings.Join(names, ", "))
	}
}

// runArgs checks a job command's arguments: n of them, what they are,
// the first a run id that is not empty.
func runArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := exactArgs(n, what)(cmd, args); err != nil {
			return err
		}
		if strings.TrimSpace(args[0]) == "" {
			return usageError("%s: the run id is empty: give one (see `porch job list`)", cmd.CommandPath())
		}
		return nil
	}
}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s expects %s (see `%s --help`)", cmd.CommandPath(), what, cmd.CommandPath())
		}
		return nil
	}
}
