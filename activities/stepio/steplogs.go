package stepio

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/porch-pipelines/porch/activities/metrics"
)

// logUploadTimeout bounds copying a finished step's logs to an object
// store. It runs even when the step was canceled, so it cannot take the
// step's own deadline.
const logUploadTimeout = time.Minute

// stepLogFolders are the folders of a step's artifacts that hold its logs:
// porch copies them to the step's artifacts folder on an s3 datastore when
// the step ends, so the CLI reads them from any machine.
var stepLogFolders = []string{"logs", "user_logs"}

// UploadLogs copies a finished step's log folders to its artifacts folder
// when that is on an s3 datastore, whether the step succeeded or not, and
// its mlflow metrics file, so a sweep reads a trial's final reports from
// whichever worker asks. It
// never fails the step and never replaces the step's own error: a failed
// copy is a warning in the worker's log (and the logs stay on this
// worker's home).
func (h *Host) UploadLogs(ctx context.Context, step string, f Folders) {
	d, p, ok := h.ObjectLocation(f.ArtifactsURI)
	if !ok {
		return
	}
	stop := h.BeatWhile(ctx, func() any { return Beat{Phase: "uploading logs"} })
	defer stop()
	upCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), logUploadTimeout)
	defer cancel()
	warn := func(err error) {
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("porch: the step's logs stay on this worker: copying them to the datastore failed",
				"step", step, "datastore", d.Name, "folder", f.Artifacts, "error", err.Error())
		}
	}
	s, err := h.ObjectStore(d)
	if err != nil {
		warn(err)
		return
	}
	for _, dir := range stepLogFolders {
		local := filepath.Join(f.Artifacts, dir)
		if _, err := os.Stat(local); err != nil {
			continue
		}
		if _, err := s.Upload(upCtx, local, path.Join(p, dir)); err != nil {
			warn(err)
			return
		}
	}
	local := filepath.Join(f.Artifacts, metrics.FileName)
	if _, err := os.Stat(local); err == nil {
		if _, err := s.PutFile(upCtx, local, path.Join(p, metrics.FileName)); err != nil {
			warn(err)
		}
	}
}
