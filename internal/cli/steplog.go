package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// stepLog is where one step's log is: a file on this host and, when the
// step's artifacts are on an s3 datastore, the object its worker copies
// the log to when the step ends (so it is readable from any machine).
type stepLog struct {
	// local is the log on this host, "" when it cannot be mapped.
	local string
	// store and path are the datastore copy; store is nil when there is
	// none.
	store *plan.Datastore
	path  string
}

// String names the log for a user: the datastore copy's URI, else the
// file on this host.
func (l stepLog) String() string {
	if l.store != nil {
		return "azureml://datastores/" + l.store.Name + "/paths/" + l.path
	}
	return l.local
}

// logLocator finds steps' logs through the server's registered datastores.
type logLocator struct {
	home   string
	stores []plan.Datastore
}

// find locates a step's log: a command's user_logs/std_log.txt, a parallel
// step's logs/sys/job_report/processed_mini-batches.csv (one row per
// attempt of a mini-batch). Other steps have none.
func (l logLocator) find(runID, datastore string, s workflows.StepState) stepLog {
	switch s.Type {
	case plan.StepCommand:
		return l.locate(runID, datastore, s, "user_logs/std_log.txt")
	case plan.StepParallel:
		return l.locate(runID, datastore, s, "logs/sys/job_report/processed_mini-batches.csv")
	}
	return stepLog{}
}

// locate finds the file rel (slash-separated) in a step's artifacts
// folder, as find finds its log.
func (l logLocator) locate(runID, datastore string, s workflows.StepState, rel string) stepLog {
	uri := ""
	for _, o := range s.Outputs {
		if o.Name == plan.ArtifactsOutput {
			uri = o.URI
		}
	}
	if uri == "" {
		if datastore == "" {
			datastore = plan.DefaultDatastore
		}
		uri = stepio.StepArtifactsURI(datastore, runID, s.Path)
	}
	if d, p, ok := stepio.ObjectLocation(l.stores, uri); ok {
		// A worker on this host keeps the step's artifacts under the home
		// while the step runs.
		log := stepLog{store: &d, path: path.Join(p, rel)}
		if dir, err := stepio.LocalPath(l.home, uri); err == nil {
			log.local = filepath.Join(dir, filepath.FromSlash(rel))
		}
		return log
	}
	dir, err := stepio.MapPath(l.home, l.stores, uri)
	if err != nil {
		return stepLog{}
	}
	return stepLog{local: filepath.Join(dir, filepath.FromSlash(rel))}
}

// openLog opens a step's log from byte offset on: the datastore copy when
// there is one, else the file on this host (a step still running on a
// worker here). It returns an error satisfying errors.Is(err,
// fs.ErrNotExist) when neither exists yet.
func (s *session) openLog(ctx context.Context, l stepLog, offset int64) (io.ReadCloser, error) {
	if l.store != nil {
		st, err := s.objectStore(*l.store)
		if err != nil {
			return nil, err
		}
		r, err := st.ReadFrom(ctx, l.path, offset)
		var oe *objectstore.Error
		if err == nil || !errors.As(err, &oe) || !oe.NotFound() {
			return r, err
		}
	}
	if l.local == "" {
		return nil, fs.ErrNotExist
	}
	f, err := os.Open(l.local)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %v", l.local, err)
	}
	return f, nil
}

// objectStore opens an s3 datastore with this user's credentials (the
// same environment or credentials file workers use), once per session.
func (s *session) objectStore(d plan.Datastore) (*objectstore.Store, error) {
	if st, ok := s.objectStores[d.Name]; ok {
		return st, nil
	}
	st, err := objectstore.Open(d)
	if err != nil {
		return nil, err
	}
	if s.objectStores == nil {
		s.objectStores = map[string]*objectstore.Store{}
	}
	s.objectStores[d.Name] = st
	return st, nil
}
