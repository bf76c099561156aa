package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/internal/webui"
	"github.com/porch-pipelines/porch/workflows"
)

// pageFiles reads steps' logs and metrics for porch's web page through a
// session's datastores, as porch job logs reads them. The page's requests
// come concurrently; the session is not safe for that, so one at a time
// finds a file.
type pageFiles struct {
	mu   sync.Mutex
	sess *session
}

func (f *pageFiles) Open(ctx context.Context, runID string, step workflows.StepState, rel string, offset int64) (io.ReadCloser, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.sess.logs(ctx).locate(runID, f.sess.runDatastore(ctx, runID), step, rel)
	if l.local == "" && l.store == nil {
		return nil, "", fmt.Errorf("step %s's artifacts are in no datastore this host reads: %w", step.Path, fs.ErrNotExist)
	}
	r, err := f.sess.openLog(ctx, l, offset)
	return r, l.String(), err
}

func (f *pageFiles) LocalPath(ctx context.Context, uri string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.sess.paths(ctx)(uri)
	if err != nil {
		return ""
	}
	return p
}

// pageHandler is porch's web page for a session's server. temporalUI is
// the Temporal UI's base URL its links go to ("" for none).
func pageHandler(sess *session, temporalUI, banner string) http.Handler {
	return webui.Handler(webui.Options{Client: sess.client, Namespace: sess.settings.Namespace, TemporalUI: temporalUI,
		Files: &pageFiles{sess: sess}, Banner: banner})
}

func (a *app) uiCommand() *cobra.Command {
	var flags serverFlags
	var ip, temporalUI string
	var port int
	var insecure bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve porch's web page for a Temporal server: runs, their live DAG, steps' logs, metrics and trials",
		Long: "Serve porch's web page (porch dev serves it too, at /porch/ on its web UI) for the server the\n" +
			"connection flags name, as every porch command finds it. The page lists runs, draws a run's DAG\n" +
			"coloured live by status, and shows a step's details, log, metrics, mini-batches and trials.\n" +
			"It reads the server's queries and search attributes, and steps' logs from the datastores this\n" +
			"host reads. It has no authentication: it listens on 127.0.0.1 unless --insecure.",
		Example: "  porch ui --address temporal.example.com:7233 --temporal-ui https://temporal.example.com\n" +
			"  porch ui --profile prod --port 9000",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDevIP(ip, insecure); err != nil {
				return err
			}
			if port < 0 || port > 65535 {
				return usageError("--port %d: expected a port, 0 to 65535", port)
			}
			sess, err := a.connect(cmd.Context(), flags)
			if err != nil {
				return err
			}
			defer sess.Close()
			if temporalUI == "" {
				temporalUI = sess.uiAddress()
			}
			return a.serveUI(cmd.Context(), sess, net.JoinHostPort(ip, strconv.Itoa(port)), temporalUI)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&ip, "ip", "127.0.0.1", "address the page listens on (a loopback address unless --insecure)")
	fl.IntVar(&port, "port", 8234, "port the page listens on; 0 for a free one")
	fl.StringVar(&temporalUI, "temporal-ui", "", "the Temporal web UI's URL, for links to workflows (default: porch dev's, when it is the server)")
	fl.BoolVar(&insecure, "insecure", false, "allow an --ip that is not loopback: the page has no authentication, and shows steps' logs")
	flags.register(cmd)
	return cmd
}

// serveUI serves the page on addr until ctx ends.
func (a *app) serveUI(ctx context.Context, sess *session, addr, temporalUI string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %v: choose another with --port", addr, err)
	}
	mux := http.NewServeMux()
	prefix := devserver.PagesPrefix[:len(devserver.PagesPrefix)-1]
	mux.Handle(devserver.PagesPrefix, http.StripPrefix(prefix, pageHandler(sess, temporalUI, "")))
	mux.Handle("/{$}", http.RedirectHandler(devserver.PagesPrefix, http.StatusFound))
	mux.Handle(prefix, http.RedirectHandler(devserver.PagesPrefix, http.StatusFound))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	fmt.Fprintf(a.stdout, "porch ui: http://%s%s (runs of %s, namespace %s); Ctrl-C to stop\n", l.Addr(), devserver.PagesPrefix,
		sess.settings.Address, sess.settings.Namespace)
	select {
	case err := <-done:
		return fmt.Errorf("serve the page: %v", err)
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
