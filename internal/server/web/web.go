// Package web serves caphub's browser UI: an HTML shell, a stylesheet and
// JavaScript modules embedded in the binary (no framework, no build step,
// nothing fetched from another site). The assets carry no data; every page
// reads the REST API with the caller's token.
//
// There is no cookie, on purpose. The token is typed into the login form,
// kept in the tab's sessionStorage and sent by the page's own script as an
// Authorization: Bearer header. A browser attaches nothing of the kind to a
// request another site makes, so there is no ambient credential for a
// cross-site request to ride (CSRF), and closing the tab forgets it.
//
// Every response carries a Content-Security-Policy that allows only this
// origin's scripts, styles and connections and no inline script or style,
// with nosniff and no-referrer; pages must therefore never use inline
// handlers or style attributes.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/caphub/caphub/internal/problem"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every response of the UI.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Prefix is the path the assets are served under.
const Prefix = "/ui/"

// contentTypes are the types of the assets by extension; an asset of
// another extension is not served (it would have no reliable type).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// assets are the embedded files by their path under static, read and
// hashed on the first request (not at start: every caphub command links
// this package).
var assets = sync.OnceValue(func() map[string]asset {
	m := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[strings.TrimPrefix(p, "static/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: reading the embedded assets: " + err.Error())
	}
	return m
})

// Handler serves GET and HEAD of / (the shell, index.html) and of
// /ui/{file} (the assets), and redirects /ui to /. Mount it on "/" and
// "/ui" exactly and on Prefix: it answers 404 to any other path.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		_ = problem.Write(w, http.StatusMethodNotAllowed, &problem.Document{Type: problem.Base + "method-not-allowed", Title: "Method not allowed", Status: http.StatusMethodNotAllowed,
			Detail: r.Method + " " + r.URL.Path + ": the web UI's files are read with GET", Instance: r.URL.Path})
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		// /ui: the UI is at /, with the headers above (the mux's own
		// redirect to /ui/ had none).
		h.Set("Location", "/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	name, ok := "index.html", r.URL.Path == "/"
	if !ok {
		name, ok = strings.CutPrefix(r.URL.Path, Prefix)
	}
	a, found := assets()[name]
	if !ok || !found || name == "" {
		_ = problem.Write(w, http.StatusNotFound, &problem.Document{Type: problem.Base + "not-found", Title: "Not found", Status: http.StatusNotFound,
			Detail: r.URL.Path + " is not a file of the web UI; open / for the UI", Instance: r.URL.Path})
		return
	}
	h.Set("Content-Type", a.contentType)
	// Revalidate every time: names carry no hash, so a new binary's file
	// must replace the cached one at once; the ETag makes that a 304.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(a.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag (or *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
