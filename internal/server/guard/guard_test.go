package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostAndOrigin(t *testing.T) {
	g := New(Options{AllowedOrigins: []string{"https://app.example.com", "http://tool.example.com:*"}, AllowedHosts: []string{"caphub.internal", "api.example.com:8443"}})
	for _, tc := range []struct {
		host, origin string
		want         int // 0: passes
	}{
		{"127.0.0.1:8750", "", 0},
		{"localhost:8750", "http://localhost:3000", 0},
		{"LOCALHOST", "", 0},
		{"[::1]:8750", "http://[::1]:3000", 0},
		{"127.0.0.1:8750", "https://127.0.0.1:9999", 0},
		{"caphub.internal:8750", "https://app.example.com", 0},
		{"api.example.com:8443", "http://tool.example.com:3000", 0},
		{"api.example.com:9999", "", 403},
		{"caphub.internal", "https://app.example.com:444", 403},
		{"rebind.evil.example", "", 403},
		{"evil.localhost", "", 403},
		{"", "", 403},
		{"127.0.0.1:8750", "https://evil.example", 403},
		{"127.0.0.1:8750", "null", 403},
		{"127.0.0.1:8750", "http://app.example.com", 403},
	} {
		r := httptest.NewRequest(http.MethodGet, "/v1/capabilities", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		ref := g.Check(r)
		got := 0
		if ref != nil {
			got = ref.Status
		}
		if got != tc.want {
			t.Errorf("Host %q Origin %q: %d (%v), want %d", tc.host, tc.origin, got, ref, tc.want)
		}
	}
	if !New(Options{AllowedHosts: []string{"*"}}).HostAllowed("anything.example") {
		t.Error(`AllowedHosts "*" refused a host`)
	}
	if !New(Options{AllowedOrigins: []string{"*"}}).OriginAllowed("null") {
		t.Error(`AllowedOrigins "*" refused an origin`)
	}
}

func TestBodyTypes(t *testing.T) {
	yaml := func(r *http.Request) bool { return r.URL.Path == "/registry/capabilities" }
	g := New(Options{AcceptsYAML: yaml})
	for _, tc := range []struct {
		method, path, ct, body string
		want                   int
	}{
		{"POST", "/v1/invoke", "application/json", "{}", 0},
		{"POST", "/v1/invoke", "Application/JSON; charset=UTF-8", "{}", 0},
		{"POST", "/v1/invoke", "application/merge-patch+json", "{}", 0},
		{"POST", "/v1/invoke", "text/plain", "{}", 415},
		{"POST", "/v1/invoke", "text/plain;charset=utf-8", "{}", 415},
		{"POST", "/v1/invoke", "application/x-www-form-urlencoded", "a=b", 415},
		{"POST", "/v1/invoke", "multipart/form-data; boundary=x", "--x--", 415},
		{"POST", "/v1/invoke", "", "{}", 415},
		{"POST", "/v1/invoke", "application/yaml", "a: b", 415},
		{"POST", "/registry/capabilities", "application/yaml", "a: b", 0},
		{"POST", "/registry/capabilities", "text/plain", "a: b", 415},
		{"POST", "/v1/servers/x/discover", "", "", 0}, // no body: nothing to type
		{"DELETE", "/mcp", "", "", 0},
		{"GET", "/mcp", "", "", 0},
	} {
		var r *http.Request
		if tc.body == "" {
			r = httptest.NewRequest(tc.method, tc.path, nil)
		} else {
			r = httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		}
		r.Host = "127.0.0.1:8750"
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		got := 0
		if ref := g.Check(r); ref != nil {
			got = ref.Status
			if !strings.Contains(ref.Detail, "Content-Type") {
				t.Errorf("%s %s %q: the refusal does not name the header: %s", tc.method, tc.path, tc.ct, ref.Detail)
			}
		}
		if got != tc.want {
			t.Errorf("%s %s Content-Type %q: %d, want %d", tc.method, tc.path, tc.ct, got, tc.want)
		}
	}
}

func TestCrossSiteFetch(t *testing.T) {
	g := New(Options{})
	r := httptest.NewRequest("POST", "/v1/servers/x/discover", nil)
	r.Host = "localhost"
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if ref := g.Check(r); ref == nil || ref.Status != 403 {
		t.Errorf("a cross-site POST passed: %v", ref)
	}
	r = httptest.NewRequest("GET", "/", nil)
	r.Host = "localhost"
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if ref := g.Check(r); ref != nil {
		t.Errorf("a cross-site navigation was refused: %v", ref)
	}
}

func TestRefusalIsProblem(t *testing.T) {
	h := New(Options{HostFlag: "--allowed-host"}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("reached the handler") }))
	r := httptest.NewRequest("GET", "/v1/capabilities", nil)
	r.Host = "rebind.evil.example:8750"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 || w.Header().Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(w.Body.String(), "--allowed-host rebind.evil.example") || !strings.Contains(w.Body.String(), `"header":"Host"`) {
		t.Errorf("refusal: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
}
