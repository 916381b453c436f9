// Package web is vfx's page for people: a small application of static
// files (HTML, CSS and JavaScript modules, embedded in the binary) that
// signs in with an API key and uses the API of the same origin to list,
// submit, watch and review jobs, plus an operator view. It serves files
// only; every datum comes from the API in the browser.
//
// The page responses carry a strict Content-Security-Policy: scripts and
// styles only from this origin (no inline script or style), media and
// network requests only to this origin and the object store's origins
// given in Options. A browser that accepts gzip gets the files gzipped
// (compressed once, when the Handler is made).
package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var files embed.FS

// Paths the page is served at: the application at "/" and its assets
// under AssetsPath.
const (
	// AssetsPath is the URL prefix of the page's scripts and styles.
	AssetsPath = "/ui/"
)

// Options configure Handler.
type Options struct {
	// MediaOrigins are the origins ("https://s3.example.com") besides the
	// page's own from which signed output URLs are loaded and to which
	// uploads are PUT (an S3 store's endpoint). The local store serves
	// files from the API's own origin and needs none.
	MediaOrigins []string
}

// Handler serves the page: GET / answers the application's HTML and
// GET /ui/{file} its assets, each with the security headers. Mount both
// patterns of Patterns on the API's mux.
func Handler(o Options) (http.Handler, error) {
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	csp, err := policy(o.MediaOrigins)
	if err != nil {
		return nil, err
	}
	assets := map[string]asset{}
	err = fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if _, err := zw.Write(b); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		assets[name] = asset{plain: b, gz: z.Bytes(), ctype: contentType(name)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	if _, ok := assets["index.html"]; !ok {
		return nil, fmt.Errorf("web: no index.html")
	}
	return &handler{assets: assets, csp: csp}, nil
}

// asset is one static file, as is and gzipped.
type asset struct {
	plain, gz []byte
	ctype     string
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip: named
// (or "*" when gzip is not named) with a q-value above 0.
func acceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				} else {
					q = 0
				}
			}
		}
		switch coding {
		case "gzip", "x-gzip":
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}

// Patterns are the http.ServeMux patterns Handler answers.
func Patterns() []string { return []string{"GET /{$}", "GET " + AssetsPath} }

// policy builds the Content-Security-Policy of the page.
func policy(origins []string) (string, error) {
	extra := ""
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || strings.ContainsAny(o, " ;,'\"") {
			return "", fmt.Errorf("web: media origin %q: want scheme://host[:port]", o)
		}
		extra += " " + u.Scheme + "://" + u.Host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:" + extra +
		"; media-src 'self' blob:" + extra + "; connect-src 'self'" + extra +
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'", nil
}

type handler struct {
	assets map[string]asset
	csp    string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	name := "index.html"
	if r.URL.Path != "/" {
		n, ok := strings.CutPrefix(r.URL.Path, AssetsPath)
		if !ok || n == "" || n == "index.html" || !fs.ValidPath(n) {
			http.NotFound(w, r)
			return
		}
		name = n
	}
	a, ok := h.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Vary", "Accept-Encoding")
	b := a.plain
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		b = a.gz
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
