// Package web is vfx's page for people: a small application of static
// files (HTML, CSS and JavaScript modules, embedded in the binary) that
// signs in with an API key and uses the API of the same origin to list,
// submit, watch and review jobs, plus an operator view. It serves files
// only; every datum comes from the API in the browser.
//
// The page responses carry a strict Content-Security-Policy: scripts and
// styles only from this origin (no inline script or style), media and
// network requests only to this origin and the object store's origins
// given in Options.
package web

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
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
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return &handler{static: static, index: index, csp: csp}, nil
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
	static fs.FS
	index  []byte
	csp    string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.URL.Path == "/" {
		hd.Set("Content-Type", "text/html; charset=utf-8")
		hd.Set("Cache-Control", "no-cache")
		_, _ = w.Write(h.index)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, AssetsPath)
	if !ok || name == "" || name == "index.html" || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(h.static, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		hd.Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		hd.Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		hd.Set("Content-Type", "image/svg+xml")
	default:
		hd.Set("Content-Type", "application/octet-stream")
	}
	hd.Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
