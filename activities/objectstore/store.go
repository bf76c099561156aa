// Package objectstore moves step data between a worker's local folders and an
// s3 datastore: any S3-compatible object store (AWS S3, MinIO, ...), reached
// with minio-go.
//
// Credentials come from the worker, never from the plan: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), else the shared credentials
// file. No error this package returns contains a secret.
//
// A folder upload is committed by a marker object, <folder>/.porch-committed,
// written after every file of the folder, so a reader that checks Committed
// never sees a partial output.
package objectstore

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// CommitMarker is the name of the object, inside an uploaded folder, that
// says the folder is complete. Upload writes it last.
const CommitMarker = ".porch-committed"

// Store is one s3 datastore, opened with the worker's credentials. It is
// safe for concurrent use.
type Store struct {
	def    plan.Datastore
	client *minio.Client
	// secrets are the credential values an error must never show.
	secrets []string
}

// Open connects to an s3 datastore. Credentials: AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile
// AWS_PROFILE or default). Endpoint "http://127.0.0.1:9000" or
// "https://s3.amazonaws.com" (the scheme decides TLS); "" means AWS. Open
// does not reach the server: a refused key shows on the first transfer.
func Open(d plan.Datastore) (*Store, error) { return OpenWith(d, nil) }

// OpenWith is Open with the HTTP transport requests go through; nil means
// minio-go's default. Tests wrap the default to count what a worker fetches.
func OpenWith(d plan.Datastore, transport http.RoundTripper) (*Store, error) {
	if d.Type != plan.DatastoreS3 {
		return nil, fmt.Errorf("datastore %q has type %q, not %q: only s3 datastores are opened as object stores", d.Name, d.Type, plan.DatastoreS3)
	}
	if d.Bucket == "" {
		return nil, fmt.Errorf("datastore %q has no bucket: set bucket: in its datastore file", d.Name)
	}
	if slices.Contains(strings.Split(d.Prefix, "/"), "..") {
		return nil, fmt.Errorf("datastore %q: prefix %q goes up with \"..\": give a path inside the bucket", d.Name, d.Prefix)
	}
	host, secure, err := parseEndpoint(d.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("datastore %q: %w", d.Name, err)
	}
	creds, value, err := workerCredentials()
	if err != nil {
		return nil, fmt.Errorf("datastore %q: %w", d.Name, err)
	}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: d.Region, Transport: transport})
	s := &Store{def: d, client: client, secrets: []string{value.SecretAccessKey, value.SessionToken}}
	if err != nil {
		return nil, s.wrap(err, "connect to endpoint %q", d.Endpoint)
	}
	return s, nil
}

// parseEndpoint splits an s3 endpoint into the host minio-go wants and
// whether to use TLS.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false, fmt.Errorf("endpoint %q is not a URL like \"https://s3.amazonaws.com\" or \"http://127.0.0.1:9000\": start it with https:// or http://", endpoint)
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("endpoint %q has a path, query or user: give only scheme, host and port (the bucket and prefix go in bucket: and prefix: of their own)", endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// workerCredentials finds this worker's credentials: the environment first,
// then the shared credentials file. It reads them once, so a missing or
// broken file is reported by Open rather than by the first transfer.
func workerCredentials() (*credentials.Credentials, credentials.Value, error) {
	if os.Getenv("AWS_ACCESS_KEY_ID") != "" || os.Getenv("AWS_SECRET_ACCESS_KEY") != "" {
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
			return nil, credentials.Value{}, errors.New("only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set: set both, or neither to use the shared credentials file")
		}
		creds := credentials.New(&credentials.EnvAWS{})
		v, err := creds.GetWithContext(nil)
		return creds, v, err
	}
	file, profile := credentialsFile()
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, credentials.Value{}, fmt.Errorf("no s3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the worker's environment, or write them to %q (or the file AWS_SHARED_CREDENTIALS_FILE names)", file)
	}
	creds := credentials.New(&credentials.FileAWSCredentials{Filename: file, Profile: profile})
	v, err := creds.GetWithContext(nil)
	if err != nil || v.AccessKeyID == "" || v.SecretAccessKey == "" {
		// The parser's message may quote a line of the file, and so a secret:
		// it is not passed on.
		return nil, credentials.Value{}, fmt.Errorf("cannot read s3 credentials for profile %q from %q: check the file has a [%s] section with aws_access_key_id and aws_secret_access_key (AWS_PROFILE picks the profile)", profile, file, profile)
	}
	return creds, v, nil
}

// credentialsFile is the shared credentials file and profile this worker uses.
func credentialsFile() (file, profile string) {
	file = os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "~"
		}
		file = filepath.Join(home, ".aws", "credentials")
	}
	profile = os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	return file, profile
}

// Key is the object key of a datastore path: Prefix + "/" + Name(p).
func (s *Store) Key(p string) (string, error) {
	name, err := s.Name(p)
	if err != nil {
		return "", err
	}
	return s.key(name), nil
}

// Name is the datastore path p as FS names it: cleaned, slash-separated,
// with no leading or trailing slash ("a//./b/" is "a/b"). A path that goes
// up with ".." or names no file or folder ("", "/") is refused.
func (s *Store) Name(p string) (string, error) {
	for _, part := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("datastore %q: path %q goes up with \"..\": name a path inside the datastore", s.def.Name, p)
		}
	}
	name := strings.Trim(path.Clean("/"+p), "/")
	if name == "" {
		return "", fmt.Errorf("datastore %q: path %q is empty: name a file or folder inside the datastore", s.def.Name, p)
	}
	return name, nil
}

// key is the object key of name, a clean path inside the datastore; "." is
// the datastore's root, "" when it has no prefix.
func (s *Store) key(name string) string {
	return strings.Trim(path.Clean("/"+s.def.Prefix+"/"+name), "/")
}

// where names the store in messages: datastore, endpoint and bucket.
func (s *Store) where() string {
	endpoint := s.def.Endpoint
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
	}
	return fmt.Sprintf("datastore %q (bucket %q at %s)", s.def.Name, s.def.Bucket, endpoint)
}

// wrap turns an error from minio-go into one that names the datastore, says
// what to do for the usual refusals, and never contains a secret.
func (s *Store) wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var hint string
	switch minio.ToErrorResponse(err).Code {
	// XAdminUserNotFound is how the Versity S3 Gateway (v1.8.0) refuses an
	// unknown access key.
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "InvalidTokenId", "InvalidClientTokenId", "ExpiredToken",
		"XAdminUserNotFound":
		hint = ": the server refused this worker's credentials: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the shared credentials file)"
	case "AccessDenied":
		hint = ": this worker's credentials may not do this: grant them read and write on the bucket and prefix"
	case "NoSuchBucket":
		hint = ": create the bucket, or fix bucket: in the datastore file"
	}
	msg := fmt.Sprintf("%s: %s: %v%s", s.where(), what, err, hint)
	for _, secret := range s.secrets {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "<redacted>")
		}
	}
	return &Error{msg: msg, notFound: isNotFound(err), err: err}
}

// Error is an error from a datastore. Its message names the datastore and
// never contains a credential.
type Error struct {
	msg      string
	notFound bool
	err      error
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the client's error, so errors.Is finds context.Canceled.
func (e *Error) Unwrap() error { return e.err }

// NotFound says whether the error is an object or folder that does not exist.
func (e *Error) NotFound() bool { return e.notFound }

// Is makes errors.Is(err, fs.ErrNotExist) true when NotFound is, so callers
// of FS test for a missing file the usual way.
func (e *Error) Is(target error) bool { return e.notFound && target == fs.ErrNotExist }

// missing is the error for the datastore path p when it is neither an object
// nor a folder.
func (s *Store) missing(p string) error {
	return &Error{msg: fmt.Sprintf("%s: no object or folder %q: check the path, and that the step that writes it has run", s.where(), p), notFound: true}
}

// isNotFound says whether err from minio-go means the object is absent.
func isNotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}
