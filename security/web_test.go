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
