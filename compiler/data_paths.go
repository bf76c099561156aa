package compiler

import (
	"fmt"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// What porch reads at run time (activities/stepio): a local path (relative
// to the YAML file, or absolute), a file:// URI of this host, a datastore
// URI (a registered local, s3 or Azure datastore, else a folder under each
// worker's porch home), Azure Storage URIs (wasbs://, abfss://, a blob's
// https:// URL), any other http(s) URL (a plain download) and a registered
// data asset. Any other URI is refused here, where the position is known,
// rather than when a step starts.
const readableData = "porch reads local paths, file:// URIs, " + datastoreForm +
	", wasbs://, abfss:// and https:// URIs, and data assets registered with " + registerData

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
// URI: a summary (what is "data" or "--set inputs.x: data") and a detail
// saying what to do. Both are "" for a path porch reads.
func unreadableURI(what, v string) (string, string) {
	if _, ok, err := plan.ParseStorageURI(v); ok {
		if err != nil {
			return fmt.Sprintf("%s %v", what, err), "write the URI in that form, or register the storage with porch datastore create -f datastore.yml and write " + datastoreForm
		}
		return "", ""
	}
	scheme := uriScheme(v)
	switch scheme {
	case "", "file", "azureml":
		return "", ""
	}
	summary := fmt.Sprintf("%s %q: porch cannot read %s:// URIs", what, v, scheme)
	register := "register the storage with porch datastore create -f datastore.yml (type: local, s3, azure_blob or azure_data_lake_gen2) and write " + datastoreForm
	switch scheme {
	case "adl":
		return summary, "adl:// is Azure Data Lake Storage Gen1, which Microsoft retired in February 2024: move the data to ADLS Gen2 and write abfss://FILESYSTEM@ACCOUNT.dfs.core.windows.net/PATH"
	case "s3":
		return summary, "porch reads buckets through datastores: " + register
	}
	return summary, "copy the data to a local path and give that path, or to a datastore: " + register
}
