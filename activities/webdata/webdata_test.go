package webdata

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// site is a loopback HTTPS server (httptest's test CA) serving files with
// or without an ETag, counting the GETs of each path.
type site struct {
	mu    sync.Mutex
	files map[string]string
	etags map[string]string
	gets  map[string]int
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if etag := s.etags[r.URL.Path]; etag != "" {
		w.Header().Set("ETag", etag)
	}
	if r.Method == http.MethodGet {
		s.gets[r.URL.Path]++
	}
	_, _ = w.Write([]byte(body))
}

func (s *site) set(p, body, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p], s.etags[p] = body, etag
}

func (s *site) count(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[p]
}

func serve(t *testing.T) (*site, *httptest.Server, *Cache) {
	s := &site{files: map[string]string{}, etags: map[string]string{}, gets: map[string]int{}}
	srv := httptest.NewTLSServer(s)
	t.Cleanup(srv.Close)
	return s, srv, &Cache{Dir: t.TempDir(), Client: srv.Client()}
}

func TestAFileIsFetchedOncePerVersion(t *testing.T) {
	s, srv, c := serve(t)
	ctx := context.Background()
	s.set("/data/iris.csv", "a,b\n1,2\n", `"v1"`)
	first, err := c.Fetch(ctx, srv.URL+"/data/iris.csv")
	require.NoError(t, err)
	assert.True(t, first.Fetched)
	assert.Equal(t, "iris.csv", path.Base(first.Path))
	b, err := os.ReadFile(first.Path)
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,2\n", string(b))
	assert.Equal(t, `etag "v1"`, first.Version)

	again, err := c.Fetch(ctx, srv.URL+"/data/iris.csv")
	require.NoError(t, err)
	assert.False(t, again.Fetched)
	assert.Equal(t, first.Path, again.Path)
	assert.Equal(t, 1, s.count("/data/iris.csv"), "the cached version is not fetched again")

	s.set("/data/iris.csv", "a,b\n3,4\n", `"v2"`)
	changed, err := c.Fetch(ctx, srv.URL+"/data/iris.csv")
	require.NoError(t, err)
	assert.True(t, changed.Fetched)
	assert.NotEqual(t, first.SHA256, changed.SHA256)
	assert.Equal(t, 2, s.count("/data/iris.csv"))
}

func TestAFileWithoutVersionIsFetchedEachTime(t *testing.T) {
	s, srv, c := serve(t)
	s.set("/x.bin", "same", "")
	for range 2 {
		f, err := c.Fetch(context.Background(), srv.URL+"/x.bin")
		require.NoError(t, err)
		assert.Equal(t, "", f.Version)
	}
	assert.Equal(t, 2, s.count("/x.bin"))
}

func TestAMissingFileFailsForGood(t *testing.T) {
	_, srv, c := serve(t)
	_, err := c.Fetch(context.Background(), srv.URL+"/nope.csv")
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.True(t, e.Permanent)
	assert.Contains(t, err.Error(), "the server answered 404 Not Found: check the URL, and that the file is public")

	// A server whose certificate this worker does not trust is refused.
	_, err = (&Cache{Dir: t.TempDir()}).Fetch(context.Background(), srv.URL+"/nope.csv")
	assert.ErrorContains(t, err, "certificate signed by unknown authority")
}
