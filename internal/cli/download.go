package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// jobDownloadCommand is `porch job download RUN`, as `az ml job download`.
func (a *app) jobDownloadCommand() *cobra.Command {
	var flags serverFlags
	var output, dir string
	var all bool
	cmd := &cobra.Command{
		Use:   "download RUN [--output-name NAME] [--download-path DIR] [--all]",
		Short: "Download a run's logs and outputs (as az ml job download)",
		Long: "Download what an ended run wrote, as az ml job download does: by default its logs, each step's\n" +
			"artifacts folder (user_logs/, logs/, outputs/) under DIR/artifacts/<step>/; with --output-name,\n" +
			"one output under DIR/named-outputs/<name>/, a pipeline output (NAME) or a step's (STEP.NAME, as\n" +
			"porch run lists them); with --all, the logs and every output. Files already in DIR are\n" +
			"replaced. A run no server knows is found from its record in the datastores.",
		Args: runArgs(1, "one run id (see porch job list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && output != "" {
				return usageError("--all downloads every output: give --all or --output-name, not both")
			}
			r, err := a.openRun(cmd.Context(), flags, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			v, err := a.endedRun(cmd.Context(), r, args[0])
			if err != nil {
				return err
			}
			items := downloadItems(v, output, all)
			if len(items) == 0 && output != "" {
				return fmt.Errorf("run %s has no output %q: its outputs are %s", args[0], output, outputNames(v))
			}
			return a.download(cmd.Context(), r, v, items, dir)
		},
	}
	cmd.Flags().StringVar(&output, "output-name", "", "download only this output: a pipeline output, or STEP.OUTPUT")
	cmd.Flags().StringVarP(&dir, "download-path", "p", ".", "the folder to download into")
	cmd.Flags().BoolVar(&all, "all", false, "download the logs and every output")
	flags.register(cmd)
	return cmd
}

// runView is an ended run's steps and outputs, from its server or its
// record.
type runView struct {
	id        string
	datastore string
	steps     []workflows.StepState
	outputs   []workflows.OutputLocation
}

// endedRun reads what download needs of r; a run still running is
// refused, as az ml job download refuses a job not in a terminal state.
func (a *app) endedRun(ctx context.Context, r *openedRun, runID string) (runView, error) {
	if r.rec != nil {
		return runView{id: runID, datastore: r.rec.DefaultDatastore, steps: r.rec.steps, outputs: r.rec.Outputs}, nil
	}
	if st := r.info.GetStatus(); st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return runView{}, fmt.Errorf("run %s is running: porch downloads a run once it has ended, as az ml job download "+
			"does; wait for it with `porch job show --watch %s`", runID, runID)
	}
	steps, err := newStepWatcher(r.sess.client).snapshot(ctx, runID)
	if err != nil {
		return runView{}, fmt.Errorf("read the steps of run %s: %v: porch reads them from a worker running porch workflows "+
			"(start one with: porch worker %s)", runID, err, r.sess.settings.connectFlags())
	}
	v := runView{id: runID, datastore: r.sess.runDatastore(ctx, runID), steps: steps}
	var res workflows.PipelineResult
	if r.info.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED &&
		r.sess.client.GetWorkflow(ctx, runID, "").Get(ctx, &res) == nil {
		v.outputs = res.Outputs
	}
	return v, nil
}

// downloadItem is one folder or file to download and where it goes,
// relative to the download path.
type downloadItem struct {
	name, uri, dest string
}

// downloadItems lists what to download: the steps' artifacts, and the
// output asked for or, with all, every output.
func downloadItems(v runView, output string, all bool) []downloadItem {
	var items []downloadItem
	if output == "" {
		for _, s := range v.steps {
			if s.Type != plan.StepCommand && s.Type != plan.StepParallel || s.Status == workflows.StatusWaiting ||
				s.Status == workflows.StatusSkipped {
				continue
			}
			uri := stepio.StepArtifactsURI(orDefaultDatastore(v.datastore), v.id, s.Path)
			for _, o := range s.Outputs {
				if o.Name == plan.ArtifactsOutput {
					uri = o.URI
				}
			}
			items = append(items, downloadItem{name: s.Path + " logs", uri: uri, dest: filepath.Join("artifacts", filepath.FromSlash(s.Path))})
		}
	}
	if output == "" && !all {
		return items
	}
	named := func(name, uri string) {
		if output == "" || output == name {
			items = append(items, downloadItem{name: name, uri: uri, dest: filepath.Join("named-outputs", name)})
		}
	}
	for _, o := range v.outputs {
		named(o.Name, o.URI)
	}
	for _, s := range v.steps {
		for _, o := range s.Outputs {
			if o.Name != plan.ArtifactsOutput {
				named(s.Path+"."+o.Name, o.URI)
			}
		}
	}
	return items
}

// orDefaultDatastore is a run's default datastore, the default one when the
// run says none.
func orDefaultDatastore(ds string) string {
	if ds == "" {
		return plan.DefaultDatastore
	}
	return ds
}

// download copies items into dir, saying what went where.
func (a *app) download(ctx context.Context, r *openedRun, v runView, items []downloadItem, dir string) error {
	home, err := resolveHome(a.getenv)
	if err != nil {
		return err
	}
	var stores []plan.Datastore
	if r.sess != nil {
		stores = r.sess.datastores(ctx)
	}
	copied := 0
	for _, it := range items {
		dest := filepath.Join(dir, it.dest)
		err := a.fetch(ctx, r.sess, home, stores, it.uri, dest)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(a.stderr, "porch: %s: nothing at %s\n", it.name, it.uri)
			continue
		}
		if err != nil {
			return fmt.Errorf("download %s (%s): %v", it.name, it.uri, err)
		}
		copied++
		fmt.Fprintf(a.stdout, "%s: %s\n", it.name, dest)
	}
	if copied == 0 {
		return fmt.Errorf("run %s: nothing to download is on this machine or its datastores", v.id)
	}
	return nil
}

// outputNames lists a run's outputs as --output-name takes them.
func outputNames(v runView) string {
	var names []string
	for _, it := range downloadItems(v, "", true) {
		if strings.HasPrefix(it.dest, "named-outputs") {
			names = append(names, it.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// fetch copies the file or folder at uri to dest: from an object-store datastore
// with this user's credentials, else from the folder it maps to here.
func (a *app) fetch(ctx context.Context, sess *session, home string, stores []plan.Datastore, uri, dest string) error {
	if d, p, ok := stepio.ObjectLocation(stores, uri); ok && sess != nil {
		st, err := sess.objectStore(d)
		if err != nil {
			return err
		}
		if _, err := st.Download(ctx, p, dest); err != nil {
			return err
		}
		if _, err := os.Stat(dest); err != nil {
			return err
		}
		return nil
	}
	src, err := stepio.MapPath(home, stores, uri)
	if err != nil {
		return err
	}
	return copyTree(src, dest)
}

// copyTree copies the file or folder src to dst: regular files and
// folders, symbolic links as links; porch's own staging and commit files
// are left out.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != src && strings.HasPrefix(d.Name(), ".porch-") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.Remove(target)
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil
	})
}

// copyFile copies one regular file, replacing dst.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
