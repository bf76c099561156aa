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
const DatastorePrefix = "azureml://datastores/"

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
	rest := strings.TrimPrefix(uri, DatastorePrefix)
	ds, p, ok := strings.Cut(rest, "/paths/")
	if !ok {
		if ds2, found := strings.CutSuffix(rest, "/paths"); found {
			ds, p, ok = ds2, "", true
		}
	}
	if !ok || ds == "" || strings.Contains(ds, "/") {
		return "", fmt.Errorf("datastore URI %q is malformed: expected %s<name>/paths/<path>", uri, DatastorePrefix)
	}
	if ds == "." || ds == ".." {
		return "", fmt.Errorf("datastore URI %q names datastore %q: expected a datastore name", uri, ds)
	}
	clean := path.Clean("/" + p)
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("datastore URI %q leaves its datastore with \"..\": give a path inside the datastore", uri)
		}
	}
	return filepath.Join(home, "datastores", ds, filepath.FromSlash(clean)), nil
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
