// Package webdata fetches data a pipeline names by a plain http(s) URL (not
// Azure Storage) into a content-addressed cache under the porch home, as
// Azure ML downloads a web URL input. A URL is fetched once per version:
// the server's ETag, else its Last-Modified, names the version, and a
// version already in the cache is not fetched again. A server that gives
// neither is asked for the whole file every time (the content's hash then
// tells whether it changed).
//
//	<dir>/content/<sha256>/<file name>   the bytes, read-only
//	<dir>/versions/<sha256 of URL and version>   the content's sha256
package webdata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
)

// Cache is a worker's cache of web data. Its zero value is not usable:
// give Dir.
type Cache struct {
	// Dir is the cache's folder ($PORCH_HOME/cache/web).
	Dir string
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// File is a URL's file in the cache.
type File struct {
	// Path is the cached file, named as the URL's last segment.
	Path string
	// SHA256 is its content's hash, hex.
	SHA256 string
	// Version is what the server said of it: `etag "x"`, `last-modified
	// ...`, or "" when it said neither.
	Version string
	// Fetched says whether this call downloaded it (false: it was cached).
	Fetched bool
}

// Error is a failed fetch. Permanent says trying again cannot help (the
// server answered 4xx: the URL is wrong or the file is not public).
type Error struct {
	msg       string
	Permanent bool
}

func (e *Error) Error() string { return e.msg }

// Fetch returns the URL's current version from the cache, downloading it
// first when the cache does not hold it.
func (c *Cache) Fetch(ctx context.Context, rawURL string) (File, error) {
	lock := c.lock(rawURL)
	lock.Lock()
	defer lock.Unlock()
	version, err := c.version(ctx, rawURL)
	if err != nil {
		return File{}, err
	}
	name := FileName(rawURL)
	if version != "" {
		if sum, err := os.ReadFile(c.versionPath(rawURL, version)); err == nil {
			p := filepath.Join(c.Dir, "content", string(sum), name)
			if _, err := os.Stat(p); err == nil {
				return File{Path: p, SHA256: string(sum), Version: version}, nil
			}
		}
	}
	f, err := c.download(ctx, rawURL, name)
	if err != nil {
		return File{}, err
	}
	f.Version = version
	if version != "" {
		if err := writeAtomic(c.versionPath(rawURL, version), []byte(f.SHA256)); err != nil {
			return File{}, err
		}
	}
	return f, nil
}

// FileName is the name a URL's file gets: its path's last segment, else
// "download".
func FileName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err == nil {
		if base := path.Base(u.Path); base != "/" && base != "." && base != "" {
			return base
		}
	}
	return "download"
}

func (c *Cache) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return http.DefaultClient
}

// lock is the mutex of one URL: concurrent steps of this worker fetch it
// once.
func (c *Cache) lock(u string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	if c.locks[u] == nil {
		c.locks[u] = &sync.Mutex{}
	}
	return c.locks[u]
}

func (c *Cache) versionPath(u, version string) string {
	sum := sha256.Sum256([]byte(u + "\n" + version))
	return filepath.Join(c.Dir, "versions", hex.EncodeToString(sum[:]))
}

// Version asks the server (HEAD) for the URL's version without fetching
// it: its ETag, else its Last-Modified, "" when it gives neither.
func (c *Cache) Version(ctx context.Context, u string) (string, error) { return c.version(ctx, u) }

func (c *Cache) version(ctx context.Context, u string) (string, error) {
	resp, err := c.do(ctx, http.MethodHead, u)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if etag := resp.Header.Get("ETag"); etag != "" {
		return "etag " + etag, nil
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		return "last-modified " + lm, nil
	}
	return "", nil
}

// do sends a request and turns a refusal into an *Error.
func (c *Cache) do(ctx context.Context, method, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, &Error{msg: fmt.Sprintf("%s: %v", u, err), Permanent: true}
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, &Error{msg: fmt.Sprintf("cannot fetch %s: %v: check the URL and that this worker reaches its server", u, unwrapURL(err))}
	}
	if resp.StatusCode >= 300 {
		resp.Body.Close()
		return nil, &Error{msg: fmt.Sprintf("cannot fetch %s: the server answered %s: check the URL, and that the file is public", u, resp.Status),
			Permanent: resp.StatusCode >= 400 && resp.StatusCode < 500}
	}
	return resp, nil
}

// unwrapURL drops the *url.Error wrapper, which repeats the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// download streams the URL into the cache, hashing it on the way, and
// moves it to its content's folder.
func (c *Cache) download(ctx context.Context, u, name string) (File, error) {
	resp, err := c.do(ctx, http.MethodGet, u)
	if err != nil {
		return File{}, err
	}
	defer resp.Body.Close()
	tmpDir := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return File{}, err
	}
	tmp, err := os.CreateTemp(tmpDir, "fetch-*")
	if err != nil {
		return File{}, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, &Error{msg: fmt.Sprintf("fetch %s: %v", u, err)}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return File{}, &Error{msg: fmt.Sprintf("fetch %s: got %d of %d bytes", u, n, resp.ContentLength)}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(c.Dir, "content", sum)
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err == nil {
		return File{Path: p, SHA256: sum, Fetched: true}, nil // the same bytes under another URL or version
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return File{}, err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return File{}, err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return File{}, err
	}
	return File{Path: p, SHA256: sum, Fetched: true}, nil
}

// writeAtomic writes data to p through a temporary file beside it.
func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
