package cli

import (
	"context"
	"fmt"
	"github.com/porch-pipelines/porch/activities/launch"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// session is a connection to a Temporal server, remote or embedded, with
// the in-process worker porch started for it, if any.
type session struct {
	settings settings
	client   client.Client
	server   *devserver.Server // nil for a remote server
	worker   *worker.Worker    // nil when porch runs no worker
	// ui is the web UI of a remote server, when porch knows it.
	ui      string
	closers []io.Closer
	// stores are the server's registered datastores, read once (paths).
	stores     []plan.Datastore
	storesRead bool
	// objectStores are the s3 datastores opened to read logs, by name.
	objectStores map[string]*objectstore.Store
	// runStores are runs' default datastores, read once (runDatastore).
	runStores map[string]string
}

// pathMapper maps a data URI to where it is on this host.
type pathMapper func(uri string) (string, error)

// homePaths maps data URIs to folders under home only.
func homePaths(home string) pathMapper {
	return func(uri string) (string, error) { return stepio.LocalPath(home, uri) }
}

// storesTimeout bounds reading the server's datastores to show paths.
const storesTimeout = 3 * time.Second

// datastores are the server's registered datastores, read once; none when
// they cannot be read.
func (s *session) datastores(ctx context.Context) []plan.Datastore {
	if !s.storesRead && s.client != nil {
		s.storesRead = true
		ctx, cancel := context.WithTimeout(ctx, storesTimeout)
		defer cancel()
		if stores, err := worker.CatalogDatastores(s.client)(ctx); err == nil {
			s.stores = stores
		}
	}
	return s.stores
}

// paths maps data URIs through the server's registered datastores, else
// to folders under the home.
func (s *session) paths(ctx context.Context) pathMapper {
	home, stores := s.settings.Home, s.datastores(ctx)
	return func(uri string) (string, error) { return stepio.MapPath(home, stores, uri) }
}

// runDatastore is the default datastore a run was submitted with; ""
// (the default) when it cannot be read. A step that failed reports no
// outputs, so its folders are found from it.
func (s *session) runDatastore(ctx context.Context, runID string) string {
	if s.runStores == nil {
		s.runStores = map[string]string{}
	}
	if ds, ok := s.runStores[runID]; ok {
		return ds
	}
	ctx, cancel := context.WithTimeout(ctx, storesTimeout)
	defer cancel()
	settings, _ := workflows.RunSettings(ctx, s.client, runID)
	s.runStores[runID] = settings.DefaultDatastore
	return settings.DefaultDatastore
}

// logs finds steps' logs through the server's registered datastores.
func (s *session) logs(ctx context.Context) logLocator {
	return logLocator{home: s.settings.Home, stores: s.datastores(ctx)}
}

// embedded says whether porch started the server and stops it at the end.
func (s *session) embedded() bool { return s.server != nil }

// uiAddress is the web UI's address, "" when there is none porch knows of.
func (s *session) uiAddress() string {
	if s.server == nil {
		return s.ui
	}
	return s.server.UIAddress()
}

// Close stops the worker, the clients and the embedded server, in that
// order.
func (s *session) Close() {
	if s.worker != nil {
		s.worker.Stop()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.server != nil {
		s.server.Stop()
	}
	for _, c := range slices.Backward(s.closers) {
		c.Close()
	}
}

// openLog opens (appending) a log file under $PORCH_HOME/logs.
func openLog(home, name string) (*os.File, error) {
	dir := filepath.Join(home, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the log folder: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open a log file: %v", err)
	}
	return f, nil
}

// sdkLogger routes the Temporal SDK's logs to w at level and above.
func sdkLogger(w io.Writer, level slog.Level) sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}

// dial connects to a remote server. The SDK's logs go to $PORCH_HOME/logs/porch.log.
func (a *app) dial(ctx context.Context, s settings) (*session, error) {
	logf, err := openLog(s.Home, "porch.log")
	if err != nil {
		return nil, err
	}
	sess := &session{settings: s, closers: []io.Closer{logf}}
	if st, ok := loadDevState(s.Home); ok && st.serves(s.Address) {
		sess.ui = st.UI
	}
	sess.client, err = dialClient(ctx, s, sdkLogger(logf, slog.LevelWarn))
	if err != nil {
		sess.Close()
		return nil, err
	}
	return sess, nil
}

// startEmbedded starts a scratch server on a free port and a worker that
// runs workflows and serves the default queue and computes. It is used
// only when no server is configured and no porch dev runs, so there is no
// catalogue but the scratch server's own (empty) one.
func (a *app) startEmbedded(ctx context.Context, s settings, computes []string, rt launch.Runtime) (*session, error) {
	serverLog, err := openLog(s.Home, "server.log")
	if err != nil {
		return nil, err
	}
	clientLog, err := openLog(s.Home, "porch.log")
	if err != nil {
		serverLog.Close()
		return nil, err
	}
	sess := &session{settings: s, closers: []io.Closer{serverLog, clientLog}}
	sess.server, err = devserver.Start(ctx, devserver.Options{
		Namespace:        s.Namespace,
		SearchAttributes: workflows.SearchAttributes(),
		LogWriter:        serverLog,
	})
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("start the embedded temporal server: %v (its log: %s)", err, serverLog.Name())
	}
	sess.settings = sess.settings.local(sess.server.FrontendAddress(), "the embedded server")
	sess.client, err = dialClient(ctx, sess.settings, sdkLogger(clientLog, slog.LevelWarn))
	if err != nil {
		sess.Close()
		return nil, err
	}
	// This machine is every node of the cluster. GPU -1: the machine's
	// GPUs, as nvidia-smi lists them.
	sess.worker, err = worker.Start(sess.client, worker.Options{Home: s.Home, Computes: computes, Workflows: true,
		Datastores: worker.CatalogDatastores(sess.client), AnyNode: true, Capacity: plan.ResourceList{GPU: -1}, Runtime: rt})
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("start the worker: %v", err)
	}
	return sess, nil
}

// planComputes lists the default queue ("") and every compute the plan's
// steps use, sorted: the queues an embedded run's worker serves.
func planComputes(p *plan.Plan) []string {
	out := p.Computes()
	if !slices.Contains(out, "") {
		out = slices.Insert(out, 0, "")
	}
	return out
}
