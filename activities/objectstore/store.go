// Package objectstore moves step data between a worker's local folders and
// object storage: an s3 datastore (any S3-compatible store: AWS S3, MinIO,
// ..., reached with minio-go) or Azure Blob Storage (an azure_blob or
// azure_data_lake_gen2 datastore, or a wasbs://, abfss:// or blob https://
// URI, reached with the Azure SDK for Go). Each kind of storage is one
// backend behind Store; folders, commit markers, listings and mounts are
// Store's, the same on all of them.
//
// Credentials come from the worker, never from the plan: for s3
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN),
// else the shared credentials file; for Azure see OpenAzure. No error this
// package returns contains a secret.
//
// A folder upload is committed by a marker object, <folder>/.porch-committed,
// written after every file of the folder, so a reader that checks Committed
// never sees a partial output.
package objectstore

import (
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// CommitMarker is the name of the object, inside an uploaded folder, that
// says the folder is complete. Upload writes it last.
const CommitMarker = ".porch-committed"

// Store is one object datastore, opened with the worker's credentials. It
// is safe for concurrent use.
type Store struct {
	def plan.Datastore
	b   backend
	// secrets are the credential values an error must never show.
	secrets []string
}

// Open connects to an object datastore: s3, azure_blob or
// azure_data_lake_gen2 (see OpenAzure for where an Azure one's endpoint
// and credentials come from). s3 credentials: AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile
// AWS_PROFILE or default). An s3 endpoint "http://127.0.0.1:9000" or
// "https://s3.amazonaws.com" (the scheme decides TLS); "" means AWS. Open
// does not reach the storage: a refused key shows on the first transfer.
func Open(d plan.Datastore) (*Store, error) { return OpenWith(d, nil) }

// OpenWith is Open with the HTTP transport requests go through; nil means
// the client's default. Tests wrap the default to count what a worker
// fetches.
func OpenWith(d plan.Datastore, transport http.RoundTripper) (*Store, error) {
	if slices.Contains(strings.Split(d.Prefix, "/"), "..") {
		return nil, fmt.Errorf("datastore %q: prefix %q goes up with \"..\": give a path inside the bucket", d.Name, d.Prefix)
	}
	var (
		b       backend
		secrets []string
		err     error
	)
	switch d.Type {
	case plan.DatastoreS3:
		b, secrets, err = openS3(d, transport)
	case plan.DatastoreAzureBlob, plan.DatastoreAzureDataLakeGen2:
		b, secrets, err = openAzure(d, transport)
	default:
		return nil, fmt.Errorf("datastore %q has type %q: only s3, azure_blob and azure_data_lake_gen2 datastores are opened as object stores", d.Name, d.Type)
	}
	s := &Store{def: d, b: b, secrets: secrets}
	if err != nil {
		// The datastore's definition or the worker's settings are wrong:
		// trying again cannot help.
		return nil, &Error{msg: s.hide(err.Error()), permanent: true, err: err}
	}
	return s, nil
}

// Datastore is the datastore the store was opened for.
func (s *Store) Datastore() plan.Datastore { return s.def }

// Key is the object key of a datastore path: Prefix + "/" + Name(p).
func (s *Store) Key(p string) (string, error) {
	name, err := s.Name(p)
	if err != nil {
		return "", err
	}
	return s.key(name), nil
}

// URI is the storage's own URI of the datastore path p, which a direct
// input passes to the command: s3://<bucket>/<key>, or
// https://<account>.blob.<endpoint>/<container>/<key>.
func (s *Store) URI(p string) (string, error) {
	key, err := s.Key(p)
	if err != nil {
		return "", err
	}
	return s.b.uri(key), nil
}

// Name is the datastore path p as FS names it: cleaned, slash-separated,
// with no leading or trailing slash ("a//./b/" is "a/b"). A path that goes
// up with ".." or names no file or folder ("", "/") is refused.
func (s *Store) Name(p string) (string, error) {
	for _, part := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("%s: path %q goes up with \"..\": name a path inside the datastore", s.what(), p)
		}
	}
	name := strings.Trim(path.Clean("/"+p), "/")
	if name == "" {
		return "", fmt.Errorf("%s: path %q is empty: name a file or folder inside the datastore", s.what(), p)
	}
	return name, nil
}

// key is the object key of name, a clean path inside the datastore; "." is
// the datastore's root, "" when it has no prefix.
func (s *Store) key(name string) string {
	return strings.Trim(path.Clean("/"+s.def.Prefix+"/"+name), "/")
}

// what names the datastore in short messages: "datastore \"lake\"", or for
// storage named by a URI rather than a registered datastore, its container.
func (s *Store) what() string {
	if s.def.Name == "" {
		return s.b.where()
	}
	return fmt.Sprintf("datastore %q", s.def.Name)
}

// where names the store in messages: datastore, and bucket or container
// with its endpoint.
func (s *Store) where() string {
	if s.def.Name == "" {
		return s.b.where()
	}
	return fmt.Sprintf("datastore %q (%s)", s.def.Name, s.b.where())
}

// wrap turns a backend's error into one that names the datastore, says
// what to do for the usual refusals, and never contains a secret.
func (s *Store) wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	f := s.b.explain(err)
	msg := fmt.Sprintf("%s: %s: %s", s.where(), what, s.b.message(err))
	if f.hint != "" {
		msg += ": " + f.hint
	}
	return &Error{msg: s.hide(msg), notFound: f.notFound, permanent: f.permanent, err: err}
}

// hide replaces the store's secrets in msg.
func (s *Store) hide(msg string) string {
	for _, secret := range s.secrets {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "<redacted>")
		}
	}
	return msg
}

// Error is an error from a datastore. Its message names the datastore and
// never contains a credential.
type Error struct {
	msg       string
	notFound  bool
	permanent bool
	err       error
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the client's error, so errors.Is finds context.Canceled.
func (e *Error) Unwrap() error { return e.err }

// NotFound says whether the error is an object or folder that does not exist.
func (e *Error) NotFound() bool { return e.notFound }

// Permanent says whether trying again cannot help: the storage refused
// the worker's credentials, or its bucket or container does not exist.
// The message says what to fix.
func (e *Error) Permanent() bool { return e.permanent }

// Is makes errors.Is(err, fs.ErrNotExist) true when NotFound is, so callers
// of FS test for a missing file the usual way.
func (e *Error) Is(target error) bool { return e.notFound && target == fs.ErrNotExist }

// missing is the error for the datastore path p when it is neither an object
// nor a folder.
func (s *Store) missing(p string) error {
	return &Error{msg: fmt.Sprintf("%s: no object or folder %q: check the path, and that the step that writes it has run", s.where(), p), notFound: true}
}

// isNotFound says whether err from the backend means the object is absent.
func (s *Store) isNotFound(err error) bool { return s.b.explain(err).notFound }
