package objectstore

import (
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"time"
)

// backend is one kind of object storage behind a Store: an S3-compatible
// bucket (s3.go) or an Azure Blob container (azblob.go). It moves objects
// by key; everything porch builds on objects (folders, commit markers,
// staging, listings as a file system, mounts) is Store's, the same for
// every backend. Keys are relative to the bucket or container.
type backend interface {
	// stat describes the object key; an absent object is an error for
	// which explain says notFound, and a folder the store keeps as such
	// (an ADLS Gen2 directory) errFolder, which is notFound too.
	stat(ctx context.Context, key string) (objInfo, error)
	// get streams n bytes of the object key from offset off; n < 0 means
	// to its end.
	get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// put writes size bytes of r to the object key, whole or not at all.
	put(ctx context.Context, key string, r io.Reader, size int64) error
	// putFile streams the local file f of size bytes to the object key,
	// whole or not at all.
	putFile(ctx context.Context, key string, f *os.File, size int64) error
	// list yields the objects whose keys start with prefix, in key order:
	// every one when recursive, else those of one level and, as entries
	// with dir set (their keys ending in "/"), the folders below it. max
	// > 0 stops after about that many.
	list(ctx context.Context, prefix string, recursive bool, max int) iter.Seq2[objInfo, error]
	// remove deletes the objects keys; an absent one is no error.
	remove(ctx context.Context, keys []string) error
	// explain classifies an error of this backend.
	explain(err error) failure
	// message is err as a message shows it: one line.
	message(err error) string
	// uri is the storage URI a direct input passes for key
	// (s3://bucket/key, https://account.blob.core.windows.net/container/key).
	uri(key string) string
	// where names the storage in messages: bucket or container, and endpoint.
	where() string
}

// errFolder is stat's error for a key that names a folder the store keeps
// as one (an ADLS Gen2 directory), even an empty one: no object.
var errFolder = errors.New("a folder, not an object")

// objInfo is an object, or a folder in a one-level listing.
type objInfo struct {
	key     string
	size    int64
	etag    string
	modTime time.Time
	dir     bool
}

// failure is what a backend's error means for porch.
type failure struct {
	// notFound: the object or folder does not exist.
	notFound bool
	// permanent: trying again cannot help (credentials refused, access
	// denied, no such bucket or container); the hint says what to fix.
	permanent bool
	hint      string
}
