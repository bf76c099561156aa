package stepio

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// DatastorePrefix starts every datastore URI porch can map to a local folder.
const DatastorePrefix = plan.DatastorePrefix

// LocalPath maps a data URI to the local path that holds it on a worker
// whose porch home is home:
//
//	azureml://datastores/<ds>/paths/<p>  -> <home>/datastores/<ds>/<p>
//	file:///abs                          -> /abs
//	/abs                                 -> /abs
//
// A trailing slash is meaningless. Remote schemes (https, wasbs, abfss, s3,
// ...) and data asset references are errors that say to download the data
// first: porch never downloads anything.
func LocalPath(home, uri string) (string, error) {
	switch {
	case uri == "":
		return "", fmt.Errorf("empty data path: give an absolute path, a file:// URI or %s<name>/paths/<path>", DatastorePrefix)
	case strings.HasPrefix(uri, DatastorePrefix):
		return datastoreLocalPath(home, uri)
	case strings.HasPrefix(uri, "azureml:"):
		return "", fmt.Errorf("porch reads only local and datastore paths, not %q: porch maps only %s<name>/paths/<path>; download the data first and give its local path", uri, DatastorePrefix)
	case strings.HasPrefix(uri, "file:"):
		return fileURILocalPath(uri)
	case strings.HasPrefix(uri, "/"):
		return filepath.Clean(uri), nil
	}
	if scheme, _, ok := strings.Cut(uri, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, "/.") {
		return "", fmt.Errorf("porch reads only local and datastore paths, not %s:// URIs; download %q first and give its local path", scheme, uri)
	}
	return "", fmt.Errorf("data path %q is relative: give an absolute path, a file:// URI or %s<name>/paths/<path>", uri, DatastorePrefix)
}

func datastoreLocalPath(home, uri string) (string, error) {
	if home == "" {
		return "", fmt.Errorf("cannot map %q: the porch home folder is not set", uri)
	}
	ds, p, ok := plan.SplitDatastoreURI(uri)
	if !ok {
		return "", fmt.Errorf("datastore URI %q is malformed: expected %s<name>/paths/<path>", uri, DatastorePrefix)
	}
	if !plan.ValidDatastoreName(ds) {
		return "", fmt.Errorf("datastore URI %q names datastore %q: expected a datastore name (letters, digits, '_', '-' and '.')", uri, ds)
	}
	if err := insideDatastore(uri, p); err != nil {
		return "", err
	}
	return filepath.Join(home, "datastores", ds, filepath.FromSlash(path.Clean("/"+p))), nil
}

// insideDatastore refuses a path p inside a datastore (of the URI uri) that
// climbs out of it, even percent-encoded: the compiler refuses such paths,
// and this keeps a plan built otherwise from writing outside the datastore.
func insideDatastore(uri, p string) error {
	if plan.LeavesDatastore(p) {
		return fmt.Errorf("datastore URI %q leaves its datastore with \"..\": give a path inside the datastore", uri)
	}
	return nil
}

func fileURILocalPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("file URI %q is malformed: %v", uri, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("file URI %q names host %q: porch reads only this host's files; write file:///absolute/path", uri, u.Host)
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("file URI %q is not absolute: write file:///absolute/path", uri)
	}
	return filepath.Clean(u.Path), nil
}

// StepArtifactsURI is the URI of a step's artifacts folder (its outputs/,
// logs/ and user_logs/), the reserved output plan.ArtifactsOutput.
func StepArtifactsURI(datastore, runID, stepPath string) string {
	return plan.DefaultOutputURI(datastore, runID, stepPath, plan.ArtifactsOutput)
}
