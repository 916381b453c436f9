package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	mux := http.NewServeMux()
	for _, p := range Patterns() {
		mux.Handle(p, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "api", http.StatusTeapot) })
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHandler(t *testing.T) {
	h, err := Handler(Options{MediaOrigins: []string{"https://s3.example.com:9000"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		code         int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8", "textContent"},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8", ".wipe"},
		{"GET", "/ui/index.html", 404, "", ""},
		{"GET", "/ui/", 404, "", ""},
		{"GET", "/ui/nope.js", 404, "", ""},
		{"GET", "/ui/../web.go", 307, "", ""}, // the mux cleans the path: /web.go, the API's
		{"GET", "/ui/%2e%2e/web.go", 404, "", ""},
		{"POST", "/", 418, "", ""},        // the API's catch-all answers other methods
		{"GET", "/v1/other", 418, "", ""}, // and other paths
	} {
		res, body := serve(t, h, c.method, c.path)
		if res.StatusCode != c.code || (c.ctype != "" && res.Header.Get("Content-Type") != c.ctype) || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %q %.60q; want %d %q containing %q", c.method, c.path, res.StatusCode, res.Header.Get("Content-Type"), body, c.code, c.ctype, c.body)
		}
		if c.code == 200 {
			csp := res.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';", "connect-src 'self' https://s3.example.com:9000;",
				"media-src 'self' blob: https://s3.example.com:9000;", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("%s: CSP %q lacks %q", c.path, csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") || res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("%s: headers %v", c.path, res.Header)
			}
		}
	}
}

func TestMediaOrigins(t *testing.T) {
	for _, o := range []string{"s3.example.com", "ftp://x", "https://x/path", "https://x?q=1", "https://x 'unsafe-inline'", "https://a;script-src *", "https://"} {
		if _, err := Handler(Options{MediaOrigins: []string{o}}); err == nil {
			t.Errorf("origin %q accepted", o)
		}
	}
	if _, err := Handler(Options{MediaOrigins: []string{"http://minio:9000", "https://s3.amazonaws.com/"}}); err != nil {
		t.Error(err)
	}
}

// TestNoInlineScriptOrHTMLSinks checks the page's sources: no inline
// script, style or handler in the HTML, and no HTML sink in the scripts
// (user strings go in with textContent).
func TestNoInlineScriptOrHTMLSinks(t *testing.T) {
	html, err := fs.ReadFile(files, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<style|\son[a-z]+=|\sstyle=|javascript:`).Find(html); m != nil {
		t.Errorf("index.html has inline script or style: %q", m)
	}
	for _, s := range regexp.MustCompile(`(?i)<script[^>]*>`).FindAll(html, -1) {
		if !strings.Contains(string(s), `src="/ui/`) {
			t.Errorf("script without a src under /ui/: %s", s)
		}
	}
	entries, _ := fs.ReadDir(files, "static")
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		b, _ := fs.ReadFile(files, "static/"+e.Name())
		if m := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`).Find(b); m != nil {
			t.Errorf("%s uses %s", e.Name(), m)
		}
	}
}
