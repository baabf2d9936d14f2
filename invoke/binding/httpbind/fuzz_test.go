package httpbind

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// FuzzRenderBody checks that no value can change a body template's
// structure: the rendered body is valid JSON and every string holding the
// placeholder decodes to exactly the value. Arbitrary templates must never
// panic, and any body they render is valid JSON.
func FuzzRenderBody(f *testing.F) {
	for _, s := range []string{`"}, "admin": true, "x": {"`, `\`, `\"`, "a\nb\r\x00\u2028", "☃😀", `{v}`, "\xff\xfe"} {
		f.Add(s, `{"a": "{v}"}`)
	}
	f.Add("x", `{"a": "\{v}"}`)
	f.Add("x", `[{v}, "{v}", "{v}{v}"]`)
	f.Fuzz(func(t *testing.T, value, tmpl string) {
		in := map[string]any{"v": value}
		body, err := renderBody(`{"a": "{v}", "b": "<{v}>", "c": {v}}`, in, map[string]bool{})
		if err != nil {
			t.Fatalf("fixed template: %v", err)
		}
		var got map[string]string
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("rendered body is not JSON: %v\n%s", err, body)
		}
		want := string([]rune(value)) // invalid bytes become U+FFFD, as encoding/json writes them
		if len(got) != 3 || got["a"] != want || got["b"] != "<"+want+">" || got["c"] != want {
			t.Fatalf("value %q: body %s", value, body)
		}
		if out, err := renderBody(tmpl, in, map[string]bool{}); err == nil && !json.Valid(out) {
			t.Fatalf("template %q rendered invalid JSON without an error: %s", tmpl, out)
		}
	})
}

// FuzzFillURL checks that a path placeholder's value stays one path segment
// and a query placeholder's value one query value.
func FuzzFillURL(f *testing.F) {
	for _, s := range []string{"../admin?x=1#frag", "..", ".", "%2e%2e", "a/b", "a&b=c", "+ %", "\x00\r\n", "\xff"} {
		f.Add(s)
	}
	b := New(Options{})
	f.Fuzz(func(t *testing.T, value string) {
		hb := &capability.HTTPBinding{URL: "http://127.0.0.1:1/a/{v}/b?q={v}&fixed=1"}
		r, err := b.build(hb, map[string]any{"v": value})
		if err != nil {
			var e *invoke.Error
			if errors.As(err, &e) && e.Code == invoke.CodeInvalidInput && (value == "." || value == "..") {
				return
			}
			t.Fatalf("value %q: %v", value, err)
		}
		segs := strings.Split(r.url.EscapedPath(), "/")
		if len(segs) != 4 || segs[1] != "a" || segs[3] != "b" {
			t.Fatalf("value %q: path %q", value, r.url.EscapedPath())
		}
		if got, err := url.PathUnescape(segs[2]); err != nil || got != value {
			t.Fatalf("value %q: segment %q decodes to %q (%v)", value, segs[2], got, err)
		}
		q, err := url.ParseQuery(r.url.RawQuery)
		if err != nil || len(q) != 2 || len(q["q"]) != 1 || q.Get("q") != value || q.Get("fixed") != "1" {
			t.Fatalf("value %q: query %q → %v (%v)", value, r.url.RawQuery, q, err)
		}
	})
}
