package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/porch-pipelines/porch/internal/history"
	"github.com/porch-pipelines/porch/internal/replay"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
)

func (a *app) replayCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "replay FILE|DIR...",
		Short: "Check that recorded histories replay on this build's workflows, before upgrading workers",
		Long: "Replay Temporal histories against this build's workflow code, as a worker of this build would\n" +
			"when it picks them up, and print one line per workflow. A FILE is what `porch job history`\n" +
			"writes (a whole run) or one history as `temporal workflow show --output json` writes it; a\n" +
			"DIR holds such files (its .json files, subfolders included). A history that has not ended\n" +
			"replays as far as it goes.\n\n" +
			"porch replay exits non-zero when a history does not replay, naming the file, the workflow\n" +
			"and what differs: a worker of this build would fail that workflow's next task, so keep\n" +
			"workers of the build that started it until it ends (see docs/upgrading.md, \"Upgrading porch safely\").",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("replay expects history files or folders (see `porch replay --help`)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.replay(cmd.Context(), args, verbose)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also print the Temporal SDK's whole error for a history that does not replay")
	return cmd
}

// replayTally counts what porch replay did.
type replayTally struct {
	workflows, failed, badFiles int
}

// replay replays every history in paths and reports each.
func (a *app) replay(ctx context.Context, paths []string, verbose bool) error {
	var t replayTally
	for _, p := range paths {
		files, err := history.Files(p)
		if err != nil {
			fmt.Fprintf(a.stderr, "porch: %v\n", err)
			t.badFiles++
			continue
		}
		for _, f := range files {
			if ctx.Err() != nil {
				fmt.Fprintln(a.stderr, "porch: interrupted")
				return silentExit(ExitInterrupted)
			}
			a.replayFile(ctx, f, relName(p, f), verbose, &t)
		}
	}
	if t.failed > 0 {
		verb := "do"
		if t.failed == 1 {
			verb = "does"
		}
		fmt.Fprintf(a.stderr, "porch: %d of %s %s not replay on this build: do not roll it out to workers while such "+
			"workflows run (see docs/upgrading.md)\n", t.failed, plural(t.workflows, "workflow"), verb)
	}
	if t.badFiles > 0 {
		fmt.Fprintf(a.stderr, "porch: %s could not be read as histories\n", plural(t.badFiles, "file"))
	}
	if t.failed > 0 || t.badFiles > 0 {
		return silentExit(ExitFailure)
	}
	fmt.Fprintf(a.stdout, "all %s replay on this build\n", plural(t.workflows, "workflow"))
	return nil
}

// relName is the name of file f relative to the folder path it was found
// in, or its base name when it was named itself: it names a single
// history's workflow.
func relName(path, f string) string {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		if rel, err := filepath.Rel(path, f); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(f)
}

// replayFile replays the histories in one file.
func (a *app) replayFile(ctx context.Context, file, rel string, verbose bool, t *replayTally) {
	loaded, err := history.ReadFile(ctx, file, rel)
	if err != nil {
		fmt.Fprintf(a.stderr, "porch: %v\n", err)
		t.badFiles++
		return
	}
	for _, l := range loaded {
		t.workflows++
		res, err := replay.History(l.History, replay.Options{WorkflowID: l.WorkflowID, RunID: l.RunID, Register: workflows.Register})
		what := fmt.Sprintf("%s (%s, %d events", l.Name, orNone(l.WorkflowType), res.Events)
		switch {
		case err != nil:
			t.failed++
			fmt.Fprintf(a.stdout, "FAIL  %s)\n", what)
			run := ""
			if l.RunID != "" {
				run = ", run " + l.RunID
			}
			fmt.Fprintf(a.stderr, "porch: %s: workflow %s (%s%s) does not replay: %v\n", file, l.Name, orNone(l.WorkflowType), run, err)
			var re *replay.Error
			if verbose && errors.As(err, &re) && re.Cause != nil {
				fmt.Fprintf(a.stderr, "    the SDK's error: %v\n", re.Cause)
			}
		case res.Skipped != "":
			fmt.Fprintf(a.stdout, "skip  %s): %s\n", what, res.Skipped)
		case res.Running:
			fmt.Fprintf(a.stdout, "ok    %s, running: replayed as far as it goes)\n", what)
		default:
			fmt.Fprintf(a.stdout, "ok    %s)\n", what)
		}
	}
}

// plural is "1 workflow", "2 workflows".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orNone is s, or "no type" for "".
func orNone(s string) string {
	if s == "" {
		return "no type"
	}
	return s
}
