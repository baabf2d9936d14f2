package security

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pwnServer is a saved-server body whose program, were it started, would
// create the file marker.
func pwnServer(name, marker string) string {
	return `{"name":"` + name + `","command":"/bin/sh -c \"touch ` + marker + `\""}`
}

func assertNotCreated(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("%s exists: caphub ran the attacker's program", marker)
	}
}

// Break 1: any web page could run commands on a default `caphub serve`
// (loopback, no tokens): the REST API checked neither Host nor Origin and
// took text/plain bodies, which browsers send cross-site without a
// preflight.
func TestWebPageCannotDriveDefaultServe(t *testing.T) {
	s := newSite(t)
	s.serve()
	marker := filepath.Join(s.dir, "pwned")

	// A cross-site form post: foreign Origin, text/plain.
	code, body, _ := s.do(req{method: "POST", path: "/v1/servers/x/discover", body: pwnServer("x", marker), contentType: "text/plain",
		header: map[string]string{"Origin": "https://evil.example"}})
	if code != http.StatusForbidden || !strings.Contains(body, "--allowed-origin") {
		t.Errorf("cross-site POST: %d %s, want 403 naming --allowed-origin", code, body)
	}
	// No Origin (a navigation, an old browser) but a body type a page can send.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "-"} {
		code, body, _ = s.do(req{method: "POST", path: "/v1/servers/x/discover", body: pwnServer("x", marker), contentType: ct})
		if code != http.StatusUnsupportedMediaType || !strings.Contains(body, "Content-Type") {
			t.Errorf("POST with Content-Type %q: %d %s, want 415 naming the header", ct, code, body)
		}
	}
	// A browser that marks the request cross-site.
	code, _, _ = s.do(req{method: "POST", path: "/v1/servers/x/discover", body: pwnServer("x", marker), header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
	if code != http.StatusForbidden {
		t.Errorf("Sec-Fetch-Site: cross-site POST: %d, want 403", code)
	}
	// DNS rebinding: every route refuses a Host it does not serve.
	for _, p := range []string{"/v1/capabilities", "/registry/capabilities", "/registry/search?q=x", "/v1/servers", "/metrics", "/openapi.json", "/healthz", "/mcp", "/mcp/servers/x", "/mcp/agents/a"} {
		code, body, _ := s.do(req{method: "GET", path: p, header: map[string]string{"Host": "rebind.evil.example:8750"}})
		if code != http.StatusForbidden || !strings.Contains(body, "--allowed-host") {
			t.Errorf("GET %s with Host rebind.evil.example: %d %s, want 403 naming --allowed-host", p, code, body)
		}
	}
	// Unusual but legal spellings of JSON pass.
	code, body, _ = s.do(req{method: "POST", path: "/v1/invoke", body: `{"uri":"ossa:everruns/add@1.0","input":{"a":1,"b":2}}`, contentType: "Application/JSON; charset=utf-8",
		header: map[string]string{"Origin": "http://localhost:5173", "Host": "LOCALHOST"}})
	if code != http.StatusOK || !strings.Contains(body, `"output":3`) && !strings.Contains(body, `"result":3`) {
		t.Errorf("a loopback origin with JSON: %d %s", code, body)
	}
	assertNotCreated(t, marker)
}

// A deployment behind a real host name allows it explicitly.
func TestAllowedHostAndOrigin(t *testing.T) {
	s := newSite(t)
	s.serve("--allowed-host", "caphub.internal", "--allowed-origin", "https://app.example")
	code, body, _ := s.do(req{method: "GET", path: "/v1/capabilities?limit=1", header: map[string]string{"Host": "caphub.internal:443", "Origin": "https://app.example"}})
	if code != http.StatusOK {
		t.Errorf("allowed host and origin: %d %s", code, body)
	}
	code, _, _ = s.do(req{method: "GET", path: "/v1/capabilities?limit=1", header: map[string]string{"Host": "other.internal"}})
	if code != http.StatusForbidden {
		t.Errorf("another host: %d, want 403", code)
	}
}

// The web UI (/ and /ui/…) is behind the same guard as the API: a page of
// another site cannot read it through a rebound name or a cross-site
// request, and / answers the shell only, not every path REST does not know.
func TestWebUIBehindTheGuard(t *testing.T) {
	s := newSite(t)
	read := s.token("reader", "--scope", "read")
	admin := s.token("admin", "--scope", "admin")
	s.serve()
	for _, p := range []string{"/", "/ui/app.js", "/ui"} {
		code, body, _ := s.do(req{method: "GET", path: p, header: map[string]string{"Host": "rebind.evil.example:8750"}})
		if code != http.StatusForbidden || !strings.Contains(body, "--allowed-host") {
			t.Errorf("GET %s with Host rebind.evil.example: %d %s, want 403 naming --allowed-host", p, code, body)
		}
		code, body, _ = s.do(req{method: "GET", path: p, header: map[string]string{"Origin": "https://evil.example"}})
		if code != http.StatusForbidden || !strings.Contains(body, "--allowed-origin") {
			t.Errorf("GET %s from Origin https://evil.example: %d %s, want 403 naming --allowed-origin", p, code, body)
		}
		// The shell and its assets carry no data: they load without a
		// token (to show the login), with the UI's CSP.
		code, body, h := s.do(req{method: "GET", path: p})
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Security-Policy"), "default-src 'self'") || body == "" {
			t.Errorf("GET %s without a token: %d CSP %q, want 200 with the CSP", p, code, h.Get("Content-Security-Policy"))
		}
	}
	// The data is not public.
	if code, body, _ := s.do(req{method: "GET", path: "/registry/capabilities"}); code != http.StatusUnauthorized {
		t.Errorf("GET /registry/capabilities without a token: %d %s, want 401", code, body)
	}
	if code, body, _ := s.do(req{method: "GET", path: "/registry/capabilities", token: read}); code != http.StatusOK {
		t.Errorf("GET /registry/capabilities with a read token: %d %s", code, body)
	}
	// Only / exactly is the shell: other paths are REST's (an unknown
	// route needs admin, then it is REST's not-found).
	if code, body, h := s.do(req{method: "GET", path: "/nothing-here", token: admin}); code != http.StatusNotFound || strings.Contains(body, "<main") || h.Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET /nothing-here: %d %q %s, want REST's 404 problem", code, h.Get("Content-Type"), body)
	}
	if code, _, _ := s.do(req{method: "POST", path: "/ui/app.js", body: "{}"}); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/app.js: %d, want 405", code)
	}
}
