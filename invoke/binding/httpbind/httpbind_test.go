package httpbind_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/httpbind"
)

// seen is what a test server received.
type seen struct {
	method, rawPath, path, rawQuery string
	query                           url.Values
	header                          http.Header
	body                            []byte
}

// recorder is a test server that records each request and answers with
// reply (200 and {"ok": true} when nil).
type recorder struct {
	srv   *httptest.Server
	hits  atomic.Int64
	conns atomic.Int64
	last  atomic.Pointer[seen]
}

func newRecorder(t *testing.T, reply http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		rec.last.Store(&seen{method: r.Method, rawPath: r.URL.EscapedPath(), path: r.URL.Path, rawQuery: r.URL.RawQuery,
			query: r.URL.Query(), header: r.Header.Clone(), body: body})
		if reply != nil {
			reply(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok": true}`)
	}))
	rec.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rec.conns.Add(1)
		}
	}
	rec.srv.Start()
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) got(t *testing.T) *seen {
	t.Helper()
	s := r.last.Load()
	if s == nil {
		t.Fatal("the server received no request")
	}
	return s
}

func def(hb *capability.HTTPBinding, errs ...capability.ErrorDef) *capability.Definition {
	return &capability.Definition{URI: "ossa:test/http@1.0", Name: "http", Domain: "test", Version: "1.0.0",
		Bindings: capability.Bindings{HTTP: hb}, Errors: errs}
}

func invokeHTTP(t *testing.T, b *httpbind.Binding, d *capability.Definition, input map[string]any) (*invoke.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.Invoke(ctx, &invoke.Call{URI: d.URI, Definition: d, Input: input, Attempt: 1})
}

func mustInvoke(t *testing.T, b *httpbind.Binding, d *capability.Definition, input map[string]any) *invoke.Outcome {
	t.Helper()
	out, err := invokeHTTP(t, b, d, input)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return out
}

func invokeError(t *testing.T, err error) *invoke.Error {
	t.Helper()
	var e *invoke.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *invoke.Error", err, err)
	}
	return e
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the server received a body that is not a JSON object: %v\n%s", err, b)
	}
	return m
}

func TestGetPathAndQueryPlaceholders(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/users/{id}/posts?limit={limit}&sort=asc&cursor={cursor}"})
	out := mustInvoke(t, b, d, map[string]any{"id": "42", "limit": int64(10), "tags": []any{"a", "b c"}, "flag": true})
	s := rec.got(t)
	if s.method != "GET" || s.rawPath != "/users/42/posts" {
		t.Errorf("request = %s %s, want GET /users/42/posts", s.method, s.rawPath)
	}
	want := url.Values{"limit": {"10"}, "sort": {"asc"}, "tags": {"a", "b c"}, "flag": {"true"}}
	if !reflect.DeepEqual(s.query, want) {
		t.Errorf("query = %v, want %v (the absent cursor's pair left out, unconsumed fields as parameters)", s.query, want)
	}
	if len(s.body) != 0 {
		t.Errorf("a GET sent a body: %q", s.body)
	}
	if !reflect.DeepEqual(out.Output, map[string]any{"ok": true}) || out.Meta["status"] != 200 {
		t.Errorf("outcome = %v %v", out.Output, out.Meta)
	}
}

func TestPathPlaceholderInjection(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/files/{name}/meta?q={q}"})

	for _, tc := range []struct{ name, q string }{
		{"../admin?x=1#frag", "a&admin=true#x"},
		{"a/b/../../c", "x=1&y=2"},
		{"%2e%2e", "%26"},
		{"sp ace+plus", "+ &=?#%"},
		{"..", ""}, // refused below
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.last.Store(nil)
			_, err := invokeHTTP(t, b, d, map[string]any{"name": tc.name, "q": tc.q})
			if tc.name == ".." {
				if e := invokeError(t, err); e.Code != invoke.CodeInvalidInput {
					t.Errorf("name %q: code %s, want INVALID_INPUT (a dot segment)", tc.name, e.Code)
				}
				return
			}
			if err != nil {
				t.Fatalf("name %q: %v", tc.name, err)
			}
			s := rec.got(t)
			segs := strings.Split(s.rawPath, "/")
			if len(segs) != 4 || segs[1] != "files" || segs[3] != "meta" {
				t.Errorf("name %q: escaped path %q does not have the value as one segment between /files/ and /meta", tc.name, s.rawPath)
				return
			}
			if got, _ := url.PathUnescape(segs[2]); got != tc.name {
				t.Errorf("name %q: segment decodes to %q", tc.name, got)
			}
			if s.path != "/files/"+tc.name+"/meta" {
				t.Errorf("name %q: r.URL.Path = %q", tc.name, s.path)
			}
			if want := (url.Values{"q": {tc.q}}); !reflect.DeepEqual(s.query, want) {
				t.Errorf("q %q: query = %v (raw %q), want exactly %v", tc.q, s.query, s.rawQuery, want)
			}
		})
	}
}

func TestPostBodyTemplate(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/notes",
		BodyTemplate: `{"title": "{title}", "count": {count}, "tags": {tags}, "meta": {meta}, "greeting": "Hello {user.name}!", "opt": {missing}, "n": "{count}"}`})
	mustInvoke(t, b, d, map[string]any{
		"title": "Shopping", "count": int64(3), "tags": []any{"a", "b"},
		"meta": map[string]any{"k": 1.5}, "user": map[string]any{"name": "Ada"}, "unused": "x",
	})
	s := rec.got(t)
	if ct := s.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	got := decodeJSON(t, s.body)
	want := map[string]any{"title": "Shopping", "count": 3.0, "tags": []any{"a", "b"}, "meta": map[string]any{"k": 1.5},
		"greeting": "Hello Ada!", "opt": nil, "n": "3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}
	if len(s.query) != 0 {
		t.Errorf("unconsumed field went to the query: %v", s.query)
	}
}

func TestBodyTemplateInjection(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/x",
		BodyTemplate: `{"title": "{title}", "note": "prefix {title} suffix", "v": {title}}`})
	for _, v := range []string{
		`"}, "admin": true, "x": {"`,
		`\`, `\"`, `\\", "admin": true, "y": "`,
		"line1\nline2\r\n\ttab",
		"héllo ☃ 😀 \u2028\u2029 \x00 \x1f",
		`</script><b>&amp;`,
		`{title} {other}`,
		``,
	} {
		rec.last.Store(nil)
		if _, err := invokeHTTP(t, b, d, map[string]any{"title": v, "other": "o"}); err != nil {
			t.Fatalf("value %q: %v", v, err)
		}
		got := decodeJSON(t, rec.got(t).body)
		want := map[string]any{"title": v, "note": "prefix " + v + " suffix", "v": v}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("value %q: body = %#v, want %#v", v, got, want)
		}
	}

	// A placeholder after a backslash in a string could unescape a quote.
	bad := def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/x", BodyTemplate: `{"a": "\{title}"}`})
	if _, err := invokeHTTP(t, b, bad, map[string]any{"title": `", "admin": true, "y": "`}); err == nil || !strings.Contains(err.Error(), "backslash") {
		t.Errorf("placeholder after a backslash: err = %v, want a refusal", err)
	}
	// A template that is not JSON is refused before sending.
	rec.last.Store(nil)
	broken := def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/x", BodyTemplate: `{"a": {title}`})
	if _, err := invokeHTTP(t, b, broken, map[string]any{"title": "x"}); err == nil || !strings.Contains(err.Error(), "valid JSON") {
		t.Errorf("broken template: err = %v", err)
	}
	if rec.last.Load() != nil {
		t.Error("a request with an invalid body was sent")
	}
}

func TestHeaderTemplates(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/h",
		Headers: map[string]string{"X-Trace": "t-{trace}", "X-Optional": "{opt}", "X-Fixed": "yes"}})
	mustInvoke(t, b, d, map[string]any{"trace": "abc 123"})
	s := rec.got(t)
	if s.header.Get("X-Trace") != "t-abc 123" || s.header.Get("X-Fixed") != "yes" {
		t.Errorf("headers = %v", s.header)
	}
	if _, ok := s.header["X-Optional"]; ok {
		t.Error("a header naming an absent field was sent")
	}
	if len(s.query) != 0 {
		t.Errorf("consumed header field went to the query: %v", s.query)
	}

	for _, v := range []string{"a\r\nX-Admin: 1", "a\nb", "a\rb", "a\x00b"} {
		rec.last.Store(nil)
		_, err := invokeHTTP(t, b, d, map[string]any{"trace": v})
		if e := invokeError(t, err); e.Code != invoke.CodeInvalidInput || !strings.Contains(e.Message, "CR, LF") {
			t.Errorf("value %q: %v, want INVALID_INPUT about CR/LF", v, err)
		}
		if rec.last.Load() != nil {
			t.Errorf("value %q: the request was sent", v)
		}
	}
}

func TestAuth(t *testing.T) {
	env := map[string]string{"KEY": "k-123", "TOKEN": "tok-456", "CREDS": "ada:s3cr:et"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name  string
		auth  capability.HTTPAuth
		check func(s *seen) bool
	}{
		{"api_key header", capability.HTTPAuth{Type: "api_key", Location: "header", ParamName: "X-API-Key", Env: "KEY"},
			func(s *seen) bool { return s.header.Get("X-API-Key") == "k-123" }},
		{"api_key default location", capability.HTTPAuth{Type: "api_key", ParamName: "X-Key", Env: "KEY"},
			func(s *seen) bool { return s.header.Get("X-Key") == "k-123" }},
		{"api_key query", capability.HTTPAuth{Type: "api_key", Location: "query", ParamName: "api_key", Env: "KEY"},
			func(s *seen) bool { return s.query.Get("api_key") == "k-123" && s.header.Get("Authorization") == "" }},
		{"bearer", capability.HTTPAuth{Type: "bearer", Env: "TOKEN"},
			func(s *seen) bool { return s.header.Get("Authorization") == "Bearer tok-456" }},
		{"oauth2", capability.HTTPAuth{Type: "oauth2", Location: "header", ParamName: "Authorization", Env: "TOKEN"},
			func(s *seen) bool { return s.header.Get("Authorization") == "Bearer tok-456" }},
		{"basic", capability.HTTPAuth{Type: "basic", Env: "CREDS"},
			func(s *seen) bool {
				return s.header.Get("Authorization") == "Basic "+base64.StdEncoding.EncodeToString([]byte("ada:s3cr:et"))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var user, pass string
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				user, pass, _ = r.BasicAuth()
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{}`)
			})
			b := httpbind.New(httpbind.Options{Getenv: getenv})
			a := tc.auth
			mustInvoke(t, b, def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/secure", Auth: &a}), nil)
			s := rec.got(t)
			if !tc.check(s) {
				t.Errorf("the server did not get the credentials: headers %v, query %v", s.header, s.query)
			}
			if tc.auth.Type == "basic" && (user != "ada" || pass != "s3cr:et") {
				t.Errorf("basic auth = %q:%q", user, pass)
			}
		})
	}

	t.Run("missing env", func(t *testing.T) {
		rec := newRecorder(t, nil)
		b := httpbind.New(httpbind.Options{Getenv: getenv})
		for _, name := range []string{"NOT_SET_ANYWHERE", "EMPTY"} {
			env["EMPTY"] = ""
			d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/secure", Auth: &capability.HTTPAuth{Type: "bearer", Env: name}})
			_, err := invokeHTTP(t, b, d, nil)
			if !errors.Is(err, httpbind.ErrMissingSecret) || !strings.Contains(err.Error(), name) {
				t.Errorf("env %s: err = %v, want ErrMissingSecret naming it", name, err)
			}
			if e := invokeError(t, err); e.Code != invoke.CodeNoBinding {
				t.Errorf("env %s: code %s, want NO_BINDING", name, e.Code)
			}
		}
		if rec.hits.Load() != 0 {
			t.Error("a request was sent without its credentials")
		}
	})

	t.Run("query secret not in errors", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", http.StatusForbidden) })
		b := httpbind.New(httpbind.Options{Getenv: getenv})
		d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/secure",
			Auth: &capability.HTTPAuth{Type: "api_key", Location: "query", ParamName: "key", Env: "KEY"}})
		_, err := invokeHTTP(t, b, d, nil)
		if err == nil || strings.Contains(fmt.Sprintf("%v %v", err, invokeError(t, err).Details), "k-123") {
			t.Errorf("err = %v: the secret must not appear", err)
		}
	})
}

func TestStatusMapping(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		var status int
		fmt.Sscan(r.URL.Query().Get("status"), &status)
		if status == 429 {
			w.Header().Set("Retry-After", "7")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error": "status %d"}`, status)
	})
	b := httpbind.New(httpbind.Options{})
	hb := &capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/s?status={status}"}
	for _, tc := range []struct {
		name      string
		status    int
		errs      []capability.ErrorDef
		code      string
		retryable bool
	}{
		{"undeclared 404", 404, nil, "HTTP_404", false},
		{"undeclared 500", 500, nil, "HTTP_500", false},
		{"undeclared 408", 408, nil, "HTTP_408", true},
		{"undeclared 429", 429, nil, "HTTP_429", true},
		{"undeclared 502", 502, nil, "HTTP_502", true},
		{"undeclared 503", 503, nil, "HTTP_503", true},
		{"undeclared 504", 504, nil, "HTTP_504", true},
		{"undeclared 3xx", 304, nil, "HTTP_304", false},
		{"declared HTTP_404", 404, []capability.ErrorDef{{Code: "HTTP_404", Retryable: false}}, "HTTP_404", false},
		{"importer style", 404, []capability.ErrorDef{{Code: "HTTP_400_BAD_REQUEST"}, {Code: "HTTP_404_NOT_FOUND"}}, "HTTP_404_NOT_FOUND", false},
		{"declared retryable flag wins", 500, []capability.ErrorDef{{Code: "HTTP_500", Retryable: true}}, "HTTP_500", true},
		{"declared 503 not retryable", 503, []capability.ErrorDef{{Code: "HTTP_503_SERVICE_UNAVAILABLE", Retryable: false}}, "HTTP_503_SERVICE_UNAVAILABLE", false},
		{"x-http-status number", 404, []capability.ErrorDef{{Code: "HTTP_404"}, {Code: "TARGET_NOT_FOUND", Extra: map[string]any{"x-http-status": int64(404)}}}, "TARGET_NOT_FOUND", false},
		{"x-http-status string", 409, []capability.ErrorDef{{Code: "CONFLICT", Retryable: true, Extra: map[string]any{"x-http-status": "409"}}}, "CONFLICT", true},
		{"x-http-status list", 410, []capability.ErrorDef{{Code: "GONE", Extra: map[string]any{"x-http-status": []any{int64(404), int64(410)}}}}, "GONE", false},
		{"x-http-status class", 502, []capability.ErrorDef{{Code: "UPSTREAM_DOWN", Retryable: true, Extra: map[string]any{"x-http-status": "5XX"}}}, "UPSTREAM_DOWN", true},
		{"class code", 422, []capability.ErrorDef{{Code: "HTTP_4XX_CLIENT_ERROR"}}, "HTTP_4XX_CLIENT_ERROR", false},
		{"exact beats class", 422, []capability.ErrorDef{{Code: "HTTP_4XX_CLIENT_ERROR"}, {Code: "HTTP_422_UNPROCESSABLE_ENTITY"}}, "HTTP_422_UNPROCESSABLE_ENTITY", false},
		{"default response", 418, []capability.ErrorDef{{Code: "HTTP_404_NOT_FOUND"}, {Code: "HTTP_ERROR"}}, "HTTP_ERROR", false},
		{"prefix is not a match", 404, []capability.ErrorDef{{Code: "HTTP_40"}, {Code: "HTTP_4040"}}, "HTTP_404", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := invokeHTTP(t, b, def(hb, tc.errs...), map[string]any{"status": int64(tc.status)})
			e := invokeError(t, err)
			if e.Code != tc.code || e.Retryable != tc.retryable || e.Binding != "http" {
				t.Errorf("error = %s retryable=%v binding=%s, want %s retryable=%v", e.Code, e.Retryable, e.Binding, tc.code, tc.retryable)
			}
			if e.Details["status"] != tc.status {
				t.Errorf("details status = %v", e.Details["status"])
			}
			if tc.status != 304 {
				if !strings.Contains(e.Message, fmt.Sprintf(`"status %d"`, tc.status)) {
					t.Errorf("message %q has no body snippet", e.Message)
				}
				if !reflect.DeepEqual(e.Details["body"], map[string]any{"error": fmt.Sprintf("status %d", tc.status)}) {
					t.Errorf("details body = %v", e.Details["body"])
				}
			}
			if tc.status == 429 && e.Details["retry_after"] != "7" {
				t.Errorf("retry_after = %v", e.Details["retry_after"])
			}
		})
	}
}

func TestHostAllowlist(t *testing.T) {
	rec := newRecorder(t, nil)
	u, _ := url.Parse(rec.srv.URL)
	d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/x"})

	for _, hosts := range [][]string{{"api.example.com"}, {"*.example.com"}, {"127.0.0.1:1"}, {"10.0.0.0/8"}} {
		b := httpbind.New(httpbind.Options{AllowedHosts: hosts})
		_, err := invokeHTTP(t, b, d, nil)
		if !errors.Is(err, httpbind.ErrHostNotAllowed) {
			t.Errorf("hosts %v: err = %v, want ErrHostNotAllowed", hosts, err)
		} else if e := invokeError(t, err); e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "AllowedHosts") {
			t.Errorf("hosts %v: %v, want NO_BINDING saying how to allow it", hosts, e)
		}
	}
	if rec.conns.Load() != 0 || rec.hits.Load() != 0 {
		t.Fatalf("refused hosts were connected to: %d connections, %d requests", rec.conns.Load(), rec.hits.Load())
	}
	for _, hosts := range [][]string{nil, {"127.0.0.1"}, {u.Host}, {"loopback"}, {"127.0.0.0/8:" + u.Port()}, {"*"}} {
		b := httpbind.New(httpbind.Options{AllowedHosts: hosts})
		if _, err := invokeHTTP(t, b, d, nil); err != nil {
			t.Errorf("hosts %v: %v", hosts, err)
		}
	}

	// Empty list: loopback only, refused before any DNS or dial.
	b := httpbind.New(httpbind.Options{})
	for _, raw := range []string{"http://example.com/x", "https://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/", "ftp://127.0.0.1/x", "file:///etc/passwd"} {
		_, err := invokeHTTP(t, b, def(&capability.HTTPBinding{URL: raw}), nil)
		if !errors.Is(err, httpbind.ErrHostNotAllowed) && (err == nil || !strings.Contains(err.Error(), "absolute")) {
			t.Errorf("%s: err = %v, want refused", raw, err)
		}
	}
	// The destination may not come from the input.
	_, err := invokeHTTP(t, b, def(&capability.HTTPBinding{URL: "http://{host}/x"}), map[string]any{"host": "127.0.0.1"})
	if err == nil || !strings.Contains(err.Error(), "destination must be fixed") {
		t.Errorf("placeholder in host: err = %v", err)
	}
}

func TestRedirects(t *testing.T) {
	target := newRecorder(t, nil)
	redirector := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/landed", http.StatusFound)
	})
	ru, _ := url.Parse(redirector.srv.URL)
	tu, _ := url.Parse(target.srv.URL)
	d := def(&capability.HTTPBinding{Method: "GET", URL: redirector.srv.URL + "/go",
		Auth: &capability.HTTPAuth{Type: "api_key", ParamName: "X-API-Key", Env: "KEY"}})
	getenv := func(string) (string, bool) { return "k-1", true }

	b := httpbind.New(httpbind.Options{AllowedHosts: []string{ru.Host}, Getenv: getenv})
	_, err := invokeHTTP(t, b, d, nil)
	if !errors.Is(err, httpbind.ErrHostNotAllowed) || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("redirect to a host not allowed: err = %v", err)
	}
	if target.conns.Load() != 0 {
		t.Error("the redirect target was connected to")
	}

	b = httpbind.New(httpbind.Options{AllowedHosts: []string{ru.Host, tu.Host}, Getenv: getenv})
	mustInvoke(t, b, d, nil)
	s := target.got(t)
	if s.path != "/landed" {
		t.Errorf("landed on %s", s.path)
	}
	if redirector.got(t).header.Get("X-API-Key") != "k-1" || s.header.Get("X-API-Key") != "" {
		t.Error("the api key must reach the original host and not the redirect's other host")
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	d := def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/slow"})

	b := httpbind.New(httpbind.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Invoke(ctx, &invoke.Call{Definition: d})
	if e := invokeError(t, err); e.Code != invoke.CodeTimeout || !e.Retryable {
		t.Errorf("err = %v, want retryable TIMEOUT", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s", el)
	}

	// No deadline on the context: Options.Timeout applies.
	b = httpbind.New(httpbind.Options{Timeout: 100 * time.Millisecond})
	_, err = b.Invoke(context.Background(), &invoke.Call{Definition: d})
	if e := invokeError(t, err); e.Code != invoke.CodeTimeout {
		t.Errorf("Options.Timeout: err = %v, want TIMEOUT", err)
	}
}

func TestResponseDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		want           any
		wantErr        string
	}{
		{"json", "application/json; charset=utf-8", `{"n": 12345678901234, "f": 1.5, "a": [1, "x"]}`,
			map[string]any{"n": int64(12345678901234), "f": 1.5, "a": []any{int64(1), "x"}}, ""},
		{"problem+json", "application/problem+json", `[true]`, []any{true}, ""},
		{"json scalar", "application/json", `"hi"`, "hi", ""},
		{"text", "text/plain", "hello\nworld\n", map[string]any{"text": "hello\nworld\n"}, ""},
		{"html", "text/html", "<p>x</p>", map[string]any{"text": "<p>x</p>"}, ""},
		{"mislabelled json", "text/plain", `{"a": 1}`, map[string]any{"a": int64(1)}, ""},
		{"text that looks numeric", "text/plain", `123`, map[string]any{"text": "123"}, ""},
		{"no content type", "", `{"a": 1}`, map[string]any{"a": int64(1)}, ""},
		{"empty", "application/json", ``, nil, ""},
		{"binary", "application/octet-stream", "\xff\xfe\x00\x01", map[string]any{"base64": "//4AAQ==", "content_type": "application/octet-stream"}, ""},
		{"broken json", "application/json", `{"a": `, nil, "not valid JSON"},
		{"trailing data", "application/json", `{"a": 1} {"b": 2}`, nil, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tc.ct}
				io.WriteString(w, tc.body)
			})
			b := httpbind.New(httpbind.Options{})
			out, err := invokeHTTP(t, b, def(&capability.HTTPBinding{URL: rec.srv.URL + "/r"}), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Output, tc.want) {
				t.Errorf("output = %#v, want %#v", out.Output, tc.want)
			}
		})
	}
}

func TestLargeResponseCapped(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("x", n))
	})
	b := httpbind.New(httpbind.Options{MaxResponseBytes: 1000})
	d := def(&capability.HTTPBinding{URL: rec.srv.URL + "/big?n={n}"})
	out := mustInvoke(t, b, d, map[string]any{"n": int64(1000)})
	if got := out.Output.(map[string]any)["text"].(string); len(got) != 1000 {
		t.Errorf("a body at the limit was cut: %d bytes", len(got))
	}
	_, err := invokeHTTP(t, b, d, map[string]any{"n": int64(50 << 20)})
	if !errors.Is(err, httpbind.ErrResponseTooLarge) || !strings.Contains(err.Error(), "MaxResponseBytes") {
		t.Errorf("err = %v, want ErrResponseTooLarge", err)
	}
}

func TestDefaultBodyAndLocations(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})

	// No template, no recorded locations: a JSON object body.
	d := def(&capability.HTTPBinding{Method: "PUT", URL: rec.srv.URL + "/items/{id}"})
	mustInvoke(t, b, d, map[string]any{"id": int64(7), "name": "n", "nested": map[string]any{"a": []any{int64(1)}}, "nothing": nil})
	s := rec.got(t)
	if s.rawPath != "/items/7" || len(s.query) != 0 {
		t.Errorf("request = %s ?%s", s.rawPath, s.rawQuery)
	}
	if got, want := decodeJSON(t, s.body), map[string]any{"name": "n", "nested": map[string]any{"a": []any{1.0}}, "nothing": nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}

	// Recorded locations (the OpenAPI importer's x-parameters).
	d = def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/orgs/{org}/repos",
		Headers: map[string]string{"X-Req": "{req_id}"},
		Extra: map[string]any{"x-parameters": map[string]any{
			"org":        map[string]any{"in": "path", "name": "org"},
			"req_id":     map[string]any{"in": "header", "name": "X-Req"},
			"per_page":   map[string]any{"in": "query", "name": "per-page"},
			"ids":        map[string]any{"in": "query", "name": "ids", "style": "form", "explode": false},
			"labels":     map[string]any{"in": "query", "name": "labels", "style": "pipeDelimited", "explode": false},
			"filter":     map[string]any{"in": "query", "name": "filter", "style": "deepObject", "explode": true},
			"session":    map[string]any{"in": "cookie", "name": "sid"},
			"trace":      "header",
			"repo_name":  map[string]any{"in": "body", "name": "name"},
			"is_private": map[string]any{"in": "body", "name": "private"},
		}}})
	mustInvoke(t, b, d, map[string]any{
		"org": "go lang", "req_id": "r1", "per_page": int64(5), "ids": []any{int64(1), int64(2)},
		"labels": []any{"a|b", "c"}, "filter": map[string]any{"state": "open", "q": "x y"},
		"session": "abc", "trace": "t1", "repo_name": "caphub", "is_private": true,
	})
	s = rec.got(t)
	if s.rawPath != "/orgs/go%20lang/repos" {
		t.Errorf("path = %s", s.rawPath)
	}
	wantQ := url.Values{"per-page": {"5"}, "ids": {"1,2"}, "labels": {"a|b|c"}, "filter[state]": {"open"}, "filter[q]": {"x y"}}
	if !reflect.DeepEqual(s.query, wantQ) {
		t.Errorf("query = %v (raw %s), want %v", s.query, s.rawQuery, wantQ)
	}
	if s.header.Get("X-Req") != "r1" || s.header.Get("Trace") != "t1" || s.header.Get("Cookie") != "sid=abc" {
		t.Errorf("headers = %v", s.header)
	}
	if got, want := decodeJSON(t, s.body), map[string]any{"name": "caphub", "private": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}

	// A form body, and a field that is the whole body.
	d = def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/form",
		Extra: map[string]any{"x-body": map[string]any{"content_type": "application/x-www-form-urlencoded"}}})
	mustInvoke(t, b, d, map[string]any{"a": "1 & 2", "b": []any{"x", "y"}})
	s = rec.got(t)
	form, _ := url.ParseQuery(string(s.body))
	if s.header.Get("Content-Type") != "application/x-www-form-urlencoded" || !reflect.DeepEqual(form, url.Values{"a": {"1 & 2"}, "b": {"x", "y"}}) {
		t.Errorf("form body = %s %q", s.header.Get("Content-Type"), s.body)
	}
	d = def(&capability.HTTPBinding{Method: "POST", URL: rec.srv.URL + "/raw",
		Extra: map[string]any{"x-body": map[string]any{"content_type": "application/json", "field": "body"},
			"x-parameters": map[string]any{"body": "body", "q": "query"}}})
	mustInvoke(t, b, d, map[string]any{"body": []any{"whole"}, "q": "1"})
	s = rec.got(t)
	if string(s.body) != `["whole"]` || s.query.Get("q") != "1" {
		t.Errorf("whole body = %q, query %v", s.body, s.query)
	}

	// A path location without a placeholder is a definition error.
	d = def(&capability.HTTPBinding{Method: "GET", URL: rec.srv.URL + "/x", Extra: map[string]any{"x-parameters": map[string]any{"id": "path"}}})
	if _, err := invokeHTTP(t, b, d, map[string]any{"id": "1"}); err == nil || !strings.Contains(err.Error(), "no {id} placeholder") {
		t.Errorf("path location without placeholder: %v", err)
	}
}

func TestMissingPathField(t *testing.T) {
	rec := newRecorder(t, nil)
	b := httpbind.New(httpbind.Options{})
	_, err := invokeHTTP(t, b, def(&capability.HTTPBinding{URL: rec.srv.URL + "/u/{id}"}), map[string]any{})
	if e := invokeError(t, err); e.Code != invoke.CodeInvalidInput || !strings.Contains(e.Message, "{id}") {
		t.Errorf("err = %v", err)
	}
	if rec.hits.Load() != 0 {
		t.Error("a request with an incomplete path was sent")
	}
}

func TestNoBinding(t *testing.T) {
	b := httpbind.New(httpbind.Options{})
	_, err := b.Invoke(context.Background(), &invoke.Call{URI: "ossa:x/y@1.0", Definition: &capability.Definition{}})
	if e := invokeError(t, err); e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "ossa:x/y@1.0") {
		t.Errorf("err = %v", err)
	}
	if b.Kind() != "http" {
		t.Errorf("Kind = %s", b.Kind())
	}
}

// BenchmarkHTTPInvoke measures one GET with path and query placeholders and a
// JSON response over loopback.
func BenchmarkHTTPInvoke(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": 42, "name": "Ada", "tags": ["a", "b"]}`)
	}))
	defer srv.Close()
	bind := httpbind.New(httpbind.Options{})
	d := def(&capability.HTTPBinding{Method: "GET", URL: srv.URL + "/users/{id}?fields={fields}",
		Headers: map[string]string{"X-Trace": "{trace}"}})
	call := &invoke.Call{Definition: d, Input: map[string]any{"id": "42", "fields": "name,tags", "trace": "t"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bind.Invoke(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
