package worker_test

import (
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
)

// site is a web server on loopback, with HTTPS from a test CA that this
// process and the worker processes it starts trust (SSL_CERT_FILE, as a
// user trusts a private CA): the https:// inputs of the tests. It serves
// files with an ETag and counts the GETs of each.
var site = &webSite{files: map[string]webFile{}, gets: map[string]int{}}

type webSite struct {
	URL   string
	mu    sync.Mutex
	files map[string]webFile
	gets  map[string]int
}

type webFile struct{ body, etag string }

func (s *webSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	if ok && r.Method == http.MethodGet {
		s.gets[r.URL.Path]++
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", f.etag)
	_, _ = w.Write([]byte(f.body))
}

// put serves body at path, with an ETag of its own.
func (s *webSite) put(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = webFile{body: body, etag: fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(body)))}
}

// getCount is how many times path was fetched whole.
func (s *webSite) getCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[path]
}

// startWebSite serves site over HTTPS and points SSL_CERT_FILE at its
// certificate, before anything in this process verifies one.
func startWebSite() (func(), error) {
	srv := httptest.NewTLSServer(site)
	dir, err := os.MkdirTemp("", "porch-site-")
	if err != nil {
		srv.Close()
		return nil, err
	}
	ca := filepath.Join(dir, "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, data, 0o644); err != nil {
		srv.Close()
		return nil, err
	}
	os.Setenv("SSL_CERT_FILE", ca)
	site.URL = srv.URL
	return func() { srv.Close(); os.RemoveAll(dir) }, nil
}
