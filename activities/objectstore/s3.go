package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// s3Backend is a bucket of an S3-compatible store, reached with minio-go.
type s3Backend struct {
	def    plan.Datastore
	client *minio.Client
}

// openS3 connects to an s3 datastore with this worker's credentials and
// returns them, for errors to hide.
func openS3(d plan.Datastore, transport http.RoundTripper) (*s3Backend, []string, error) {
	if d.Bucket == "" {
		return nil, nil, fmt.Errorf("datastore %q has no bucket: set bucket: in its datastore file", d.Name)
	}
	host, secure, err := parseEndpoint(d.Endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("datastore %q: %w", d.Name, err)
	}
	creds, value, err := workerCredentials()
	if err != nil {
		return nil, nil, fmt.Errorf("datastore %q: %w", d.Name, err)
	}
	secrets := []string{value.SecretAccessKey, value.SessionToken}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: d.Region, Transport: transport})
	if err != nil {
		return nil, secrets, fmt.Errorf("connect to endpoint %q: %w", d.Endpoint, err)
	}
	return &s3Backend{def: d, client: client}, secrets, nil
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
		return "", false, fmt.Errorf("endpoint %q has a path, query or user: give only scheme, host and port, and the bucket and prefix in the datastore's bucket and prefix keys", endpoint)
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

func (b *s3Backend) stat(ctx context.Context, key string) (objInfo, error) {
	st, err := b.client.StatObject(ctx, b.def.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return objInfo{}, err
	}
	return objInfo{key: key, size: st.Size, etag: strings.Trim(st.ETag, `"`), modTime: st.LastModified}, nil
}

func (b *s3Backend) get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	var opts minio.GetObjectOptions
	switch {
	case n > 0:
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, err
		}
	case off > 0:
		if err := opts.SetRange(off, 0); err != nil {
			return nil, err
		}
	}
	obj, err := b.client.GetObject(ctx, b.def.Bucket, key, opts)
	if err != nil {
		return nil, err
	}
	// GetObject reaches the server on the first read: a missing object
	// shows here, as on the other backends.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, err
	}
	return obj, nil
}

func (b *s3Backend) put(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := b.client.PutObject(ctx, b.def.Bucket, key, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (b *s3Backend) putFile(ctx context.Context, key string, f *os.File, size int64) error {
	return b.put(ctx, key, f, size)
}

func (b *s3Backend) list(ctx context.Context, prefix string, recursive bool, max int) iter.Seq2[objInfo, error] {
	return func(yield func(objInfo, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // stops the listing when the caller does
		n := 0
		for obj := range b.client.ListObjects(ctx, b.def.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive}) {
			if obj.Err != nil {
				yield(objInfo{}, obj.Err)
				return
			}
			info := objInfo{key: obj.Key, size: obj.Size, etag: strings.Trim(obj.ETag, `"`), modTime: obj.LastModified,
				dir: strings.HasSuffix(obj.Key, "/")}
			if !yield(info, nil) {
				return
			}
			if n++; max > 0 && n >= max {
				return
			}
		}
	}
}

func (b *s3Backend) remove(ctx context.Context, keys []string) error {
	if len(keys) == 1 {
		err := b.client.RemoveObject(ctx, b.def.Bucket, keys[0], minio.RemoveObjectOptions{})
		if err != nil && !b.explain(err).notFound {
			return err
		}
		return nil
	}
	doomed := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		doomed <- minio.ObjectInfo{Key: k}
	}
	close(doomed)
	var first error
	for res := range b.client.RemoveObjects(ctx, b.def.Bucket, doomed, minio.RemoveObjectsOptions{}) {
		if res.Err != nil && first == nil {
			first = res.Err
		}
	}
	return first
}

func (b *s3Backend) explain(err error) failure {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NotFound":
		return failure{notFound: true}
	// XAdminUserNotFound is how the Versity S3 Gateway (v1.8.0) refuses an
	// unknown access key.
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "InvalidTokenId", "InvalidClientTokenId", "ExpiredToken",
		"XAdminUserNotFound":
		return failure{permanent: true, hint: "the server refused this worker's credentials: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the shared credentials file)"}
	case "AccessDenied":
		return failure{permanent: true, hint: "this worker's credentials may not do this: grant them read and write on the bucket and prefix"}
	case "NoSuchBucket":
		return failure{permanent: true, hint: "create the bucket, or fix bucket: in the datastore file"}
	}
	return failure{}
}

func (b *s3Backend) message(err error) string { return err.Error() }

func (b *s3Backend) uri(key string) string { return "s3://" + b.def.Bucket + "/" + key }

func (b *s3Backend) where() string {
	endpoint := b.def.Endpoint
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
	}
	return fmt.Sprintf("bucket %q at %s", b.def.Bucket, endpoint)
}
