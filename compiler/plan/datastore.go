package plan

import (
	"net/url"
	"strings"
)

// DatastorePrefix starts every datastore URI,
// azureml://datastores/<name>/paths/<path>: the only place porch writes
// outputs.
const DatastorePrefix = "azureml://datastores/"

// SplitDatastoreURI splits azureml://datastores/<name>/paths/<path> (or
// .../paths with no path) into the datastore's name and the path inside it.
// ok is false when uri has another form, or names no datastore.
func SplitDatastoreURI(uri string) (name, path string, ok bool) {
	tail, found := strings.CutPrefix(uri, DatastorePrefix)
	if !found {
		return "", "", false
	}
	name, path, ok = strings.Cut(tail, "/paths/")
	if !ok {
		name, ok = strings.CutSuffix(tail, "/paths")
	}
	return name, path, ok && name != "" && !strings.Contains(name, "/")
}

// ValidDatastoreName reports whether name can name a datastore, and so a
// folder under the porch home: letters, digits, '_', '-' and '.', and not
// only dots.
func ValidDatastoreName(name string) bool {
	if strings.Trim(name, ".") == "" {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// LeavesDatastore reports whether a path inside a datastore climbs out of
// it: a ".." segment, written as is or percent-encoded (%2e%2e, %2E%2e,
// %252e%252e, ...), between slashes or backslashes, themselves written as
// is or encoded.
func LeavesDatastore(path string) bool {
	forms := []string{path}
	for p := path; strings.Contains(p, "%"); {
		next, err := url.PathUnescape(p)
		if err != nil || next == p {
			break
		}
		forms = append(forms, next)
		p = next
	}
	for _, p := range forms {
		for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == ".." {
				return true
			}
		}
	}
	return false
}
