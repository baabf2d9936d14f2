package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, method, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, r)
	return w
}

func checkSecurityHeaders(t *testing.T, path string, h http.Header) {
	t.Helper()
	if got := h.Get("Content-Security-Policy"); got != CSP {
		t.Errorf("%s: Content-Security-Policy %q, want %q", path, got, CSP)
	}
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", path, got)
	}
	if got := h.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s: Referrer-Policy %q", path, got)
	}
}

func TestShellAtRoot(t *testing.T) {
	w := get(t, "GET", "/", nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	checkSecurityHeaders(t, "/", w.Header())
	body := w.Body.String()
	for _, want := range []string{`<main id="page"`, `<script type="module" src="/ui/app.js">`, `<dialog id="login"`,
		`href="#/overview"`, `href="#/catalog"`, `href="#/servers"`, `href="#/agents"`, `href="#/approvals"`, `href="#/audit"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / lacks %s", want)
		}
	}
}

func TestAssetsHaveTypeCacheAndETag(t *testing.T) {
	for path, ct := range map[string]string{
		"/ui/app.js": "text/javascript; charset=utf-8", "/ui/api.js": "text/javascript; charset=utf-8",
		"/ui/ui.js": "text/javascript; charset=utf-8", "/ui/style.css": "text/css; charset=utf-8",
		"/ui/index.html": "text/html; charset=utf-8",
	} {
		w := get(t, "GET", path, nil)
		if w.Code != 200 || w.Header().Get("Content-Type") != ct {
			t.Errorf("GET %s: %d %q, want 200 %q", path, w.Code, w.Header().Get("Content-Type"), ct)
			continue
		}
		checkSecurityHeaders(t, path, w.Header())
		etag := w.Header().Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{24}"$`).MatchString(etag) || w.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: ETag %q Cache-Control %q", path, etag, w.Header().Get("Cache-Control"))
		}
		w2 := get(t, "GET", path, map[string]string{"If-None-Match": `"other", W/` + etag})
		if w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
			t.Errorf("GET %s If-None-Match its ETag: %d, %d bytes, want 304 empty", path, w2.Code, w2.Body.Len())
		}
		w3 := get(t, "HEAD", path, nil)
		if w3.Code != 200 || w3.Body.Len() != 0 || w3.Header().Get("Content-Length") != w.Header().Get("Content-Length") {
			t.Errorf("HEAD %s: %d, %d bytes, Content-Length %q", path, w3.Code, w3.Body.Len(), w3.Header().Get("Content-Length"))
		}
	}
	a, b := get(t, "GET", "/ui/app.js", nil).Header().Get("ETag"), get(t, "GET", "/ui/api.js", nil).Header().Get("ETag")
	if a == b {
		t.Errorf("two files share the ETag %s", a)
	}
}

func TestOnlyItsFiles(t *testing.T) {
	for _, path := range []string{"/ui/", "/ui/nope.js", "/ui/pages/", "/ui/../web.go", "/ui/static/app.js", "/other", "/ui/x/../app.js/"} {
		w := get(t, "GET", path, nil)
		if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(w.Body.String(), "open / for the UI") {
			t.Errorf("GET %s: %d %q %s, want a 404 problem", path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
		checkSecurityHeaders(t, path, w.Header())
	}
	// /ui leads to the UI, with the same headers.
	if w := get(t, "GET", "/ui", nil); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/" {
		t.Errorf("GET /ui: %d Location %q, want 301 to /", w.Code, w.Header().Get("Location"))
	} else {
		checkSecurityHeaders(t, "/ui", w.Header())
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		w := get(t, m, "/ui/app.js", nil)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /ui/app.js: %d Allow %q, want 405", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

// The CSP forbids inline scripts, inline styles and other origins; these
// checks find what would break under it (or leak data) before a browser does.
func TestAssetsKeepToTheCSP(t *testing.T) {
	rules := []struct {
		ext  string
		re   *regexp.Regexp
		what string
	}{
		{".html", regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), "an inline script"},
		{".html", regexp.MustCompile(`(?i)\sstyle\s*=|<style`), "an inline style"},
		{".html", regexp.MustCompile(`(?i)\son[a-z]+\s*=`), "an inline event handler"},
		{"", regexp.MustCompile(`(?i)(?:src|href|action)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|from\s*["'](?:https?:)?//|import\(\s*["'](?:https?:)?//|fetch\(\s*["'](?:https?:)?//`), "a resource of another origin"},
		{".js", regexp.MustCompile(`\.(?:innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|\.style\.|setAttribute\(\s*["']style`), "HTML from strings, eval or an inline style"},
		{".js", regexp.MustCompile(`document\.cookie|localStorage|credentials:\s*'include'`), "a cookie or lasting storage for the token"},
	}
	n := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".html") {
			for _, tag := range regexp.MustCompile(`<script\b[^>]*>`).FindAll(b, -1) {
				if !strings.Contains(string(tag), " src=") {
					t.Errorf("%s has a script without src: %s", p, tag)
				}
			}
		}
		for _, r := range rules {
			if r.ext != "" && !strings.HasSuffix(p, r.ext) {
				continue
			}
			if loc := r.re.FindIndex(b); loc != nil {
				line := strings.Count(string(b[:loc[0]]), "\n") + 1
				t.Errorf("%s:%d has %s: %q", p, line, r.what, b[loc[0]:loc[1]])
			}
		}
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}

// FuzzETagMatches: If-None-Match is read without panicking, and a list that
// names the ETag (weak or strong, anywhere in it) or * matches while one that
// does not name it does not.
func FuzzETagMatches(f *testing.F) {
	etag := assets()["app.js"].etag
	for _, s := range []string{"", "*", etag, "W/" + etag, `"a", ` + etag, `"a",,"b"`, `W/`, `"` + etag} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got := etagMatches(header, etag)
		want := false
		for _, part := range strings.Split(header, ",") {
			part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
			want = want || part == etag || part == "*"
		}
		if got != want {
			t.Errorf("etagMatches(%q) = %v, want %v", header, got, want)
		}
		w := get(t, "GET", "/ui/app.js", map[string]string{"If-None-Match": header})
		if (w.Code == http.StatusNotModified) != got {
			t.Errorf("If-None-Match %q: %d, match %v", header, w.Code, got)
		}
	})
}
