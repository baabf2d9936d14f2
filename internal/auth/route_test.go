package auth_test

import (
	"net/http/httptest"
	"testing"
)

// TestRoute: a request is named by its route's pattern, through the REST
// API's own table, never by its raw path.
func TestRoute(t *testing.T) {
	srv, _ := restServer(t)
	mux := mountLikeServe(srv)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/registry/capabilities/github/issues.create", "/registry/capabilities/{domain}/{name}"},
		{"GET", "/v1/capabilities/ossa:a/b@1", "/v1/capabilities/{id...}"},
		{"POST", "/mcp", "/mcp"},
		{"POST", "/mcp/servers/memory", "/mcp/servers/"},
		{"GET", "/no/such/thing", "/"},
	} {
		if got := mux.Route(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("Route(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}
