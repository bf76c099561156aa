// Package webui is porch's web page: a server's runs, a run's DAG coloured
// live by status, a step's details, log tail and metrics, a parallel
// step's mini-batches and a sweep's trials. porch dev serves it under
// /porch/ beside the Temporal UI, and porch ui for any Temporal server.
//
// The page reads what a Temporal user reads: porch's search attributes to
// list runs, the Pipeline workflow's graph and steps queries, the progress
// and trials queries of parallel and sweep steps, and the files steps
// leave in their datastore (logs, metrics). It keeps no database. Its
// JavaScript and CSS are embedded in the binary (static/), with two
// vendored libraries built from npm by `make ui-vendor`: elkjs lays the
// DAG out, in a web worker (a run of more than largeGraph steps is placed
// from the layers graph.LayersOf computes), and Chart.js charts a sweep's
// trials.
package webui

import (
	"context"
	"embed"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/porch-pipelines/porch/workflows"
)

//go:embed static
var static embed.FS

// Files reads what steps leave in their artifacts folder.
type Files interface {
	// Open opens rel (a slash-separated path inside the artifacts folder
	// of step, a step of run runID) from byte offset on, and names where
	// it is for a user. An error satisfies errors.Is(err, fs.ErrNotExist)
	// while the file does not exist yet.
	Open(ctx context.Context, runID string, step workflows.StepState, rel string, offset int64) (io.ReadCloser, string, error)
	// LocalPath is where a data URI is on this host, "" when it is
	// nowhere porch can say.
	LocalPath(ctx context.Context, uri string) string
}

// Options configures the page.
type Options struct {
	Client    client.Client
	Namespace string
	// TemporalUI is the Temporal web UI's base URL that the page links
	// workflows to ("" for no links; "/" for the page's own origin).
	TemporalUI string
	// Files reads steps' logs and metrics; nil shows none.
	Files Files
	// Banner, if not empty, is a warning shown above the page.
	Banner string
}

// queryTimeout bounds one Temporal call of a request.
const queryTimeout = 5 * time.Second

// Handler serves the page at / and its API under /api/. Mount it under a
// prefix with http.StripPrefix; the page's own links are relative.
func Handler(opts Options) http.Handler {
	s := &server{opts: opts, nested: newNestedCache(), queues: newQueueCache(opts.Client), graphs: map[string]runGraph{}}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded folder is there at build time
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.HandleFunc("GET /api/config", s.config)
	mux.HandleFunc("GET /api/runs", s.runs)
	mux.HandleFunc("GET /api/runs/{run}", s.run)
	mux.HandleFunc("GET /api/runs/{run}/steps", s.steps)
	mux.HandleFunc("GET /api/runs/{run}/step", s.step)
	mux.HandleFunc("GET /api/runs/{run}/log", s.log)
	return secure(mux)
}

// secure sets headers that keep the page to its own origin.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

type server struct {
	opts   Options
	nested *nestedCache
	queues *queueCache
	mu     sync.Mutex
	graphs map[string]runGraph // by run id
}

func (s *server) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]string{"namespace": s.opts.Namespace, "banner": s.opts.Banner})
}

// workflowLink is where the Temporal UI shows a workflow, "" without one.
func (s *server) workflowLink(workflowID string) string {
	if s.opts.TemporalUI == "" || workflowID == "" {
		return ""
	}
	base := strings.TrimSuffix(s.opts.TemporalUI, "/")
	return base + "/namespaces/" + pathEscape(s.opts.Namespace) + "/workflows/" + pathEscape(workflowID)
}

// pathEscape escapes a path segment as the Temporal UI expects a workflow
// id: "/" included.
func pathEscape(s string) string {
	return strings.NewReplacer("%", "%25", "/", "%2F", "?", "%3F", "#", "%23", " ", "%20").Replace(s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers a request that failed with a message a user can act on.
func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
