package auth

import (
	"net/http"
	"strings"
)

// ScopeFor maps a request on caphub serve's mux to the scope it needs, or
// public for the endpoints anyone may call (/healthz, /openapi.json).
//
//   - read: GET (and HEAD) on /registry/*, /v1/capabilities*, /v1/servers*,
//     /v1/agents*, /metrics; POST /registry/negotiate (it only reads).
//   - publish: POST /registry/capabilities and …/deprecate; PUT and DELETE
//     on /v1/servers* and /v1/agents*; POST /v1/servers/{name}/discover.
//   - invoke: POST /v1/invoke, and every request to /mcp and /mcp/* (the MCP
//     gateway and the fronted servers call tools).
//
// Anything else needs admin, so that a route added without a mapping is
// closed rather than open. Token administration has no HTTP endpoint: it
// is CLI-only.
func ScopeFor(r *http.Request) (scope string, public bool) {
	p := r.URL.Path
	m := r.Method
	read := m == http.MethodGet || m == http.MethodHead
	switch {
	case p == "/healthz" || p == "/openapi.json":
		return "", true
	case p == "/mcp" || strings.HasPrefix(p, "/mcp/"):
		return string(ScopeInvoke), false
	case p == "/v1/invoke" && m == http.MethodPost:
		return string(ScopeInvoke), false
	case p == "/registry/negotiate" && m == http.MethodPost:
		return string(ScopeRead), false
	case read && (p == "/metrics" || under(p, "/registry") || under(p, "/v1/capabilities") || under(p, "/v1/servers") || under(p, "/v1/agents")):
		return string(ScopeRead), false
	case p == "/registry/capabilities" && m == http.MethodPost,
		strings.HasPrefix(p, "/registry/capabilities/") && strings.HasSuffix(p, "/deprecate") && m == http.MethodPost:
		return string(ScopePublish), false
	case (under(p, "/v1/servers") || under(p, "/v1/agents")) && (m == http.MethodPut || m == http.MethodDelete):
		return string(ScopePublish), false
	case strings.HasPrefix(p, "/v1/servers/") && strings.HasSuffix(p, "/discover") && m == http.MethodPost:
		return string(ScopePublish), false
	}
	return string(ScopeAdmin), false
}

// under reports whether p is prefix or below it.
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}
