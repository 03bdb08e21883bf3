package statuspage

import (
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// Guarantee: the page is small (no framework bundle: under 100 KB in all)
// and loads nothing from elsewhere: no absolute URL in any asset but the
// SVG namespace, which names and fetches nothing.
func TestAssetsAreSmallAndSelfContained(t *testing.T) {
	total := 0
	absolute := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(Assets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets, path)
		if err != nil {
			return err
		}
		total += len(b)
		for _, m := range absolute.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %q: the page must work offline, from its own files", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > 100<<10 {
		t.Errorf("the page's assets weigh %d bytes, want some, under 100 KB", total)
	}
	for _, name := range []string{"index.html", "status.js", "status.css"} {
		if _, err := fs.Stat(Assets, name); err != nil {
			t.Errorf("asset %s: %v", name, err)
		}
	}
}

// Guarantee: the page refers to its assets and the status document by
// relative URLs, so that it works behind a reverse proxy under a prefix.
func TestPageUsesRelativeURLs(t *testing.T) {
	page, err := fs.ReadFile(Assets, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	script, err := fs.ReadFile(Assets, "status.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range regexp.MustCompile(`(?:href|src)="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		if strings.HasPrefix(ref[1], "/") {
			t.Errorf("index.html refers to %q: make it relative", ref[1])
		}
	}
	if !strings.Contains(string(script), `"api/v1/status?`) {
		t.Error("status.js does not read api/v1/status relatively")
	}
}

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// Guarantee: Register serves the page at / exactly and its assets, each
// with a policy that forbids loading anything from elsewhere; it takes
// nothing from a mux that serves / itself, and leaves a catch-all alone for
// other paths.
func TestRegister(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "catch-all", http.StatusTeapot) })
	if err := Register(mux); err != nil {
		t.Fatalf("Register on a mux with a catch-all: %v", err)
	}
	for path, want := range map[string]string{"/": "text/html", "/weir/status.js": "javascript", "/weir/status.css": "text/css"} {
		rec := get(mux, path)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: policy %q", path, csp)
		}
	}
	if rec := get(mux, "/other"); rec.Code != http.StatusTeapot {
		t.Errorf("GET /other: %d, want the catch-all's answer", rec.Code)
	}
	plain := http.NewServeMux()
	if err := Register(plain); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/weir/status.js"} {
		rec := httptest.NewRecorder()
		plain.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405: the page is read-only", path, rec.Code)
		}
	}

	own := http.NewServeMux()
	own.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {})
	if err := Register(own); !errors.Is(err, ErrRootTaken) {
		t.Errorf("Register on a mux serving / = %v, want ErrRootTaken", err)
	}
}
