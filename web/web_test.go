package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
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

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "gzip, deflate, br, zstd": true, "GZIP;q=0.5": true, "x-gzip": true,
		"gzip;q=0": false, "gzip; q=0.000": false, "gzip;q=abc": false, "identity": false, "br": false,
		"*": true, "*;q=0": false, "*, gzip;q=0": false, "gzip;q=0, *": false, "deflate, *;q=0.1": true, "gzipx": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", h, got, want)
		}
	}
}

// TestGzip checks that every file goes gzipped to a browser that takes
// gzip, decompresses to the file, and goes as is to one that does not.
func TestGzip(t *testing.T) {
	h, err := Handler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range Patterns() {
		mux.Handle(p, h)
	}
	var plainSum, gzSum int
	for path, file := range map[string]string{"/": "index.html", "/ui/app.js": "app.js", "/ui/style.css": "style.css"} {
		want, err := fs.ReadFile(files, "static/"+file)
		if err != nil {
			t.Fatal(err)
		}
		for _, ae := range []string{"gzip, deflate, br, zstd", "", "gzip;q=0"} {
			req := httptest.NewRequest("GET", path, nil)
			if ae != "" {
				req.Header.Set("Accept-Encoding", ae)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			res := rec.Result()
			body := rec.Body.Bytes()
			gz := ae == "gzip, deflate, br, zstd"
			if res.StatusCode != 200 || res.Header.Get("Vary") != "Accept-Encoding" || (res.Header.Get("Content-Encoding") == "gzip") != gz ||
				res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Errorf("%s (Accept-Encoding %q): %d %v", path, ae, res.StatusCode, res.Header)
				continue
			}
			if gz {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				plain, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(plain, want) {
					t.Errorf("%s: gunzipped body differs from %s (%v)", path, file, err)
				}
				if len(body) >= len(want)/2 {
					t.Errorf("%s: gzipped %d bytes of %d", path, len(body), len(want))
				}
				plainSum += len(want)
				gzSum += len(body)
				t.Logf("%s: %d bytes, %d gzipped", file, len(want), len(body))
			} else if !bytes.Equal(body, want) {
				t.Errorf("%s (Accept-Encoding %q): body differs from %s", path, ae, file)
			}
		}
	}
	t.Logf("page: %d bytes, %d gzipped", plainSum, gzSum)
}
