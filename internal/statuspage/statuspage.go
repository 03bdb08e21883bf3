// Package statuspage is weir's live status page: one HTML page with its
// script and style sheet, embedded in the binary, that draws the pipeline
// from /api/v1/status once a second. It loads nothing from elsewhere (no CDN,
// no font, no framework) and works offline; it only reads.
//
// The page addresses the status document and its assets by relative URLs,
// so it also works behind a reverse proxy that serves it under a prefix
// (docs/status.md shows one with authentication).
package statuspage

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
)

//go:embed assets
var assets embed.FS

// Assets are the page's files: index.html, status.js, status.css.
var Assets = mustSub(assets, "assets")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic("statuspage: " + err.Error())
	}
	return sub
}

// AssetPrefix is the path under which the script and style sheet are served.
const AssetPrefix = "/weir/"

// securityPolicy lets the page load only its own script, style sheet and
// status document, and keeps it out of frames.
const securityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ErrRootTaken is returned by Register when mux already serves GET / itself.
var ErrRootTaken = errors.New("statuspage: the mux already serves GET / (the status page is left out; /api/v1/status still answers)")

// Register serves the page at GET / (exactly) and its assets under
// AssetPrefix. Of an embedder's mux that already serves / exactly, it takes
// nothing and returns ErrRootTaken; a catch-all "/" pattern stays as it is
// for every other path.
func Register(mux *http.ServeMux) error {
	probe := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}, Host: "localhost"}
	if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" && pattern != "GET /" {
		return ErrRootTaken
	}
	page, err := fs.ReadFile(Assets, "index.html")
	if err != nil {
		panic("statuspage: " + err.Error())
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		headers(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	files := http.StripPrefix(AssetPrefix[:len(AssetPrefix)-1], http.FileServerFS(Assets))
	mux.Handle("GET "+AssetPrefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	return nil
}

func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", securityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
