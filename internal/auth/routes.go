package auth

import (
	"net/http"
	"strings"
)

// Public marks a route anyone may call, with or without a token (/healthz,
// /openapi.json).
const Public Scope = ""

// Scoped is a handler that knows the scope each of its requests needs (the
// REST API, from its route table).
type Scoped interface {
	http.Handler
	ScopeOf(r *http.Request) (scope string, public bool)
}

// Routes is a ServeMux whose every route names the scope it needs, so that
// a route and its scope are declared together. A request no route matches
// needs admin: a route added without a scope is closed, not open.
type Routes struct {
	mux    *http.ServeMux
	scopes map[string]Scope  // pattern → scope
	mounts map[string]Scoped // pattern → a handler that scopes its own routes
}

// NewRoutes returns an empty route table.
func NewRoutes() *Routes {
	return &Routes{mux: http.NewServeMux(), scopes: map[string]Scope{}, mounts: map[string]Scoped{}}
}

// Handle serves pattern (http.ServeMux syntax) with h; its requests need
// scope (Public: none).
func (rt *Routes) Handle(pattern string, scope Scope, h http.Handler) {
	rt.mux.Handle(pattern, h)
	rt.scopes[pattern] = scope
}

// Mount serves pattern with h, which says the scope of each request itself.
func (rt *Routes) Mount(pattern string, h Scoped) {
	rt.mux.Handle(pattern, h)
	rt.mounts[pattern] = h
}

// ServeHTTP routes the request.
func (rt *Routes) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.mux.ServeHTTP(w, r) }

// ScopeOf is the scope a request needs, or public; Middleware takes it.
func (rt *Routes) ScopeOf(r *http.Request) (scope string, public bool) {
	_, pattern := rt.mux.Handler(r)
	if h, ok := rt.mounts[pattern]; ok {
		return h.ScopeOf(r)
	}
	s, ok := rt.scopes[pattern]
	switch {
	case !ok:
		return string(ScopeAdmin), false
	case s == Public:
		return "", true
	}
	return string(s), false
}

// Route is the pattern of the route a request goes to, without its
// method (/registry/capabilities/{domain}, /mcp/servers/), asking a
// mounted handler that has routes of its own (a Route method): what
// traces name a request by, never the raw path.
func (rt *Routes) Route(r *http.Request) string {
	_, pattern := rt.mux.Handler(r)
	if h, ok := rt.mounts[pattern].(interface{ Route(*http.Request) string }); ok {
		return h.Route(r)
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// under reports whether p is prefix or below it.
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}
