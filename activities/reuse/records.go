package reuse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/activities/atomicfile"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// recordsDir is the datastore folder records live in, beside the runs'
// outputs (azureml/<run>/...).
const recordsDir = "porch-reuse"

// KeyURI is where the record of key lives on the datastore ds.
func KeyURI(ds, key string) string {
	return plan.DatastorePrefix + ds + "/paths/" + recordsDir + "/keys/" + key + ".json"
}

// LatestURI is where the latest record of a pipeline's step lives on the
// datastore ds.
func LatestURI(ds, pipeline, step string) string {
	return plan.DatastorePrefix + ds + "/paths/" + recordsDir + "/latest/" + url.PathEscape(pipeline) + "/" + step + ".json"
}

// readRecord reads the record at uri; nil when there is none.
func readRecord(ctx context.Context, h *stepio.Host, uri string) (*Record, error) {
	data, err := readData(ctx, h, uri)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		// A record porch cannot read is as good as none: the step
		// runs and writes a new one.
		return nil, nil
	}
	return &r, nil
}

// codeFilesURI is where the files of the local code folder whose
// snapshot hash is hash are kept, with their hashes.
func codeFilesURI(ds, hash string) string {
	return plan.DatastorePrefix + ds + "/paths/" + recordsDir + "/code/" + hash + ".json"
}

// manifestURI is where the manifest (the files) of a recorded output
// whose manifest hash is hash is kept.
func manifestURI(ds, hash string) string {
	return plan.DatastorePrefix + ds + "/paths/" + recordsDir + "/manifests/" + hash + ".json"
}

func readJSON(ctx context.Context, h *stepio.Host, uri string, v any) error {
	data, err := readData(ctx, h, uri)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func writeJSON(ctx context.Context, h *stepio.Host, uri string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if d, p, ok := h.ObjectLocation(uri); ok {
		s, err := h.ObjectStore(d)
		if err != nil {
			return err
		}
		return s.Put(ctx, p, bytes.NewReader(data), int64(len(data)))
	}
	local, err := localPath(h, uri)
	if err != nil {
		return err
	}
	return atomicfile.Write(local, data)
}

func readData(ctx context.Context, h *stepio.Host, uri string) ([]byte, error) {
	if d, p, ok := h.ObjectLocation(uri); ok {
		s, err := h.ObjectStore(d)
		if err != nil {
			return nil, err
		}
		return fs.ReadFile(s.FS(ctx), p)
	}
	local, err := localPath(h, uri)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(local)
}

// exists says whether the data at uri (a file or folder) is still there.
func exists(ctx context.Context, h *stepio.Host, uri string) (bool, error) {
	if d, p, ok := h.ObjectLocation(uri); ok {
		s, err := h.ObjectStore(d)
		if err != nil {
			return false, err
		}
		// A folder output's URI ends with a slash, which fs paths do not.
		if _, err := fs.Stat(s.FS(ctx), strings.TrimSuffix(p, "/")); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	local, err := localPath(h, uri)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(local); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("check output %q: %w", uri, err)
	}
	return true, nil
}

// UnavailableType is the application error type of a datastore this
// worker cannot map: trying again would not help.
const UnavailableType = "ReuseUnavailable"

// localPath maps uri to this worker's path; a failure is not retried.
func localPath(h *stepio.Host, uri string) (string, error) {
	local, err := h.LocalPath(uri)
	if err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), UnavailableType, nil)
	}
	return local, nil
}
