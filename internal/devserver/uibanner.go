package devserver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// PagesPrefix is where Server.ServePages serves pages on the web UI's
// origin.
const PagesPrefix = "/porch/"

// frontProxy serves the web UI on its public address: pages under
// PagesPrefix, everything else forwarded to ui-server, with a banner added
// to the top of its pages when there is one.
type frontProxy struct {
	server *http.Server
	done   chan struct{} // closed when Serve returns
	pages  atomic.Pointer[http.Handler]
}

// startFrontProxy listens on addr and forwards every request but those
// for PagesPrefix to the UI at upstream, adding banner (if not empty) to
// its HTML pages.
func startFrontProxy(addr, upstream, banner string) (*frontProxy, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	target := &url.URL{Scheme: "http", Host: upstream}
	block := []byte(bannerHTML(banner))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The UI sees the browser's host, as it would without the
			// proxy: its CSRF and CORS checks compare origins.
			r.Out.Host = r.In.Host
		},
	}
	if banner != "" {
		proxy.ModifyResponse = func(resp *http.Response) error { return addBanner(resp, block) }
	}
	p := &frontProxy{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.Handle(PagesPrefix, http.HandlerFunc(p.servePages))
	mux.Handle(strings.TrimSuffix(PagesPrefix, "/"), http.RedirectHandler(PagesPrefix, http.StatusFound))
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.server.Serve(l) // returns when closed
	}()
	return p, nil
}

// servePages serves a request for PagesPrefix with the pages' handler,
// which sees the path without the prefix.
func (p *frontProxy) servePages(w http.ResponseWriter, r *http.Request) {
	h := p.pages.Load()
	if h == nil {
		http.Error(w, "porch's pages are not served by this server yet", http.StatusServiceUnavailable)
		return
	}
	http.StripPrefix(strings.TrimSuffix(PagesPrefix, "/"), *h).ServeHTTP(w, r)
}

func (p *frontProxy) stop() {
	_ = p.server.Close()
	<-p.done
}

// bannerHTML is a line of warning above the UI. Its style is inline: the
// UI's index page restricts scripts only.
func bannerHTML(text string) string {
	return `<div role="alert" style="position:sticky;top:0;z-index:2147483647;margin:0;padding:6px 12px;` +
		`background:#b91c1c;color:#fff;font:600 14px/1.4 system-ui,sans-serif;text-align:center">` +
		html.EscapeString(text) + `</div>`
}

// addBanner puts block right after the <body> tag of an HTML page. Pages
// that set their own Content-Security-Policy (the UI's markdown renderer,
// shown in frames) would refuse the inline style, and are left alone, as
// are bodies in an encoding other than gzip.
func addBanner(resp *http.Response, block []byte) error {
	enc := resp.Header.Get("Content-Encoding")
	if resp.StatusCode != http.StatusOK || resp.Request.Method == http.MethodHead ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		resp.Header.Get("Content-Security-Policy") != "" || (enc != "" && enc != "gzip") {
		return nil
	}
	body, err := readBody(resp.Body, enc)
	if err != nil {
		return fmt.Errorf("read the UI's page: %w", err)
	}
	if i := bytes.Index(body, []byte("<body")); i >= 0 {
		if end := bytes.IndexByte(body[i:], '>'); end >= 0 {
			at := i + end + 1
			body = append(body[:at:at], append(block, body[at:]...)...)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	resp.TransferEncoding = nil
	return nil
}

// readBody reads and closes a response's body, gunzipping it if enc is gzip.
func readBody(body io.ReadCloser, enc string) ([]byte, error) {
	defer body.Close()
	var r io.Reader = body
	if enc == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	}
	return io.ReadAll(r)
}
