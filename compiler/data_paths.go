package compiler

import (
	"fmt"
	"strings"
)

// What porch reads at run time (activities/stepio): a local path (relative
// to the YAML file, or absolute), a file:// URI of this host, a datastore
// URI (a registered local or s3 datastore, else a folder under each
// worker's porch home) and a registered data asset. A worker downloads
// nothing from anywhere else, so any other URI is refused here, where the
// position is known, rather than when a step starts.
const readableData = "porch reads local paths, file:// URIs, " + datastoreForm +
	" and data assets registered with " + registerData

// uriScheme is the scheme of a URI written scheme://..., "" for anything
// else (a path, azureml:<name>:<version>).
func uriScheme(v string) string {
	scheme, _, ok := strings.Cut(strings.TrimSpace(v), "://")
	if !ok || scheme == "" {
		return ""
	}
	for i, r := range scheme {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || strings.ContainsRune("+-.", r))) {
			return ""
		}
	}
	return strings.ToLower(scheme)
}

// unreadableURI explains why porch cannot read a data path written as a
// URI of another scheme than file:// and azureml://: a summary (what is
// "data" or "--set inputs.x: data") and a detail saying what to do. Both
// are "" for a path porch reads.
func unreadableURI(what, v string) (string, string) {
	scheme := uriScheme(v)
	switch scheme {
	case "", "file", "azureml":
		return "", ""
	}
	summary := fmt.Sprintf("%s %q: porch cannot read %s:// URIs", what, v, scheme)
	register := "register the storage with porch datastore create -f datastore.yml (type: local or s3) and write " + datastoreForm
	switch scheme {
	case "http", "https":
		return summary, "porch downloads nothing from the web: download the file and give its local path, or copy it to a datastore: " + register
	case "wasb", "wasbs", "abfs", "abfss", "adl":
		return summary, "porch cannot reach Azure storage: copy the data to a local path and give that path, or to a datastore: " + register
	case "s3":
		return summary, "porch reads buckets through datastores: " + register
	}
	return summary, "copy the data to a local path and give that path, or to a datastore: " + register
}
