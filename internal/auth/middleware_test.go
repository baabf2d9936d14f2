package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/server/rest"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

type noInvoker struct{}

func (noInvoker) Invoke(context.Context, invoke.Request) (*invoke.Result, error) {
	return nil, errors.New("no bindings in this test")
}

// restServer is the REST API with every optional route on (invoke, metrics).
func restServer(t *testing.T) (*rest.Server, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	log := audit.New(st)
	t.Cleanup(func() { _ = log.Close() })
	return rest.New(registry.NewService(st), nil, rest.WithInvoker(noInvoker{}), rest.WithMetrics(metrics),
		rest.WithPolicies(policy.NewPolicies(st, log)), rest.WithTokens(auth.New(st, log)), rest.WithAudit(log)), st
}

// routeScopes is the scope each REST route needs, keyed "METHOD /path" as
// the OpenAPI document names them. TestScopeForEveryRoute fails when the
// REST server gains a route this table does not list.
var routeScopes = map[string]string{
	"GET /registry/capabilities":                            "read",
	"GET /registry/capabilities/{domain}":                   "read",
	"GET /registry/capabilities/{domain}/{name}":            "read",
	"POST /registry/capabilities":                           "publish",
	"POST /registry/capabilities/{domain}/{name}/deprecate": "publish",
	"GET /registry/capabilities/{domain}/{name}/diff":       "read",
	"POST /registry/negotiate":                              "read",
	"GET /registry/resolve":                                 "read",
	"GET /registry/search":                                  "read",
	"GET /registry/index.yaml":                              "read",
	"GET /v1/capabilities":                                  "read",
	"GET /v1/capabilities/{id}":                             "read",
	"GET /healthz":                                          "",
	"GET /readyz":                                           "",
	"GET /v0/servers":                                       "read",
	"GET /v0/servers/{serverName}/versions":                 "read",
	"GET /v0/servers/{serverName}/versions/{version}":       "read",
	"GET /v0.1/servers":                                     "read",
	"GET /v0.1/servers/{serverName}/versions":               "read",
	"GET /v0.1/servers/{serverName}/versions/{version}":     "read",
	"POST /registry/jobs":                                   "publish",
	"GET /registry/jobs/{id}":                               "read",
	"GET /registry/jobs/{id}/results":                       "read",
	"DELETE /registry/jobs/{id}":                            "publish",
	"GET /openapi.json":                                     "",
	"GET /v1/servers":                                       "read",
	"GET /v1/servers/{name}":                                "read",
	"PUT /v1/servers/{name}":                                "publish",
	"DELETE /v1/servers/{name}":                             "publish",
	"PUT /v1/servers/{name}/listing":                        "publish",
	"POST /v1/servers/{name}/discover":                      "publish",
	"GET /v1/agents":                                        "read",
	"GET /v1/agents/{id}":                                   "read",
	"PUT /v1/agents/{id}":                                   "publish",
	"DELETE /v1/agents/{id}":                                "publish",
	"GET /v1/agents/{id}/capabilities":                      "read",
	"PUT /v1/agents/{id}/capabilities":                      "publish",
	"GET /v1/agents/{id}/config":                            "read",
	"POST /v1/invoke":                                       "invoke",
	"GET /metrics":                                          "read",
	"GET /v1/policies":                                      "read",
	"GET /v1/policies/{agent}":                              "read",
	"PUT /v1/policies/{agent}":                              "admin",
	"DELETE /v1/policies/{agent}":                           "admin",
	"GET /v1/tokens":                                        "admin",
	"POST /v1/tokens":                                       "admin",
	"DELETE /v1/tokens/{id}":                                "admin",
	"GET /v1/audit":                                         "admin",
	"GET /v1/audit/verify":                                  "admin",
	"GET /v1/stats":                                         "read",
}

// mcpScopes are the endpoints caphub serve mounts beside the REST API.
var mcpScopes = map[string]string{
	"POST /mcp":                       "invoke",
	"GET /mcp":                        "invoke",
	"DELETE /mcp":                     "invoke",
	"GET /mcp/sse":                    "invoke",
	"POST /mcp/sse":                   "invoke",
	"POST /mcp/servers/github":        "invoke",
	"GET /mcp/servers/github/sse":     "invoke",
	"POST /mcp/servers/github/sse":    "invoke",
	"GET /mcpx":                       "admin", // not an MCP path: closed by default
	"PATCH /registry/capabilities":    "admin", // no such route: closed by default
	"POST /v1/capabilities":           "admin",
	"GET /registry/capabilities/a/b":  "read",
	"HEAD /registry/index.yaml":       "read",
	"POST /registry/capabilities/a/b": "admin",
}

// concrete fills a route template's parameters with sample values.
func concrete(path string) string {
	r := strings.NewReplacer("{domain}", "security", "{name}", "scan_vulnerabilities@1.0", "{id}", "reviewer", "{agent}", "reviewer")
	return r.Replace(path)
}

// restRoutes lists the REST server's routes from its OpenAPI document.
func restRoutes(t *testing.T, srv *rest.Server) []string {
	t.Helper()
	paths, _ := srv.OpenAPI()["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("the OpenAPI document lists no paths")
	}
	var out []string
	for p, item := range paths {
		for m := range item.(map[string]any) {
			switch m {
			case "get", "put", "post", "delete", "patch", "head":
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestScopeForEveryRoute(t *testing.T) {
	srv, _ := restServer(t)
	mux := mountLikeServe(srv)
	routes := restRoutes(t, srv)
	seen := map[string]bool{}
	for _, rt := range routes {
		seen[rt] = true
		want, ok := routeScopes[rt]
		if !ok {
			t.Errorf("route %s has no entry in routeScopes: decide its scope (the route's scope field) and list it here", rt)
			continue
		}
		checkScope(t, mux, rt, want)
	}
	for rt := range routeScopes {
		if !seen[rt] {
			t.Errorf("routeScopes lists %s, which the REST server no longer serves", rt)
		}
	}
	for rt, want := range mcpScopes {
		checkScope(t, mux, rt, want)
	}
}

// mountLikeServe mounts the MCP endpoints beside the REST API as caphub
// serve does.
func mountLikeServe(srv *rest.Server) *auth.Routes {
	mcp := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux := auth.NewRoutes()
	mux.Handle("/mcp/agents/", auth.ScopeInvoke, mcp)
	mux.Handle("/mcp", auth.ScopeInvoke, mcp)
	mux.Handle("/mcp/sse", auth.ScopeInvoke, mcp)
	mux.Handle("/mcp/servers/", auth.ScopeInvoke, mcp)
	mux.Mount("/", srv)
	return mux
}

func checkScope(t *testing.T, mux *auth.Routes, rt, want string) {
	t.Helper()
	method, path, _ := strings.Cut(rt, " ")
	r := httptest.NewRequest(method, concrete(path), nil)
	scope, public := mux.ScopeOf(r)
	if want == "" {
		if !public {
			t.Errorf("ScopeOf(%s) = %q, want public", rt, scope)
		}
		return
	}
	if public || scope != want {
		t.Errorf("ScopeOf(%s) = %q (public %v), want %q", rt, scope, public, want)
	}
}

type fixture struct {
	handler http.Handler
	secrets map[string]string // scope → token with only that scope
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	srv, st := restServer(t)
	toks := auth.New(st, nil)
	f := fixture{secrets: map[string]string{}}
	for _, s := range auth.Scopes {
		_, secret, err := toks.Create(context.Background(), "only-"+string(s), []auth.Scope{s}, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.secrets[string(s)] = secret
	}
	// As caphub serve mounts it: the MCP endpoints beside the REST API.
	mux := mountLikeServe(srv)
	f.handler = toks.Middleware(mux.ScopeOf, mux)
	return f
}

func (f fixture) do(t *testing.T, rt, bearer string) *httptest.ResponseRecorder {
	t.Helper()
	method, path, _ := strings.Cut(rt, " ")
	r := httptest.NewRequest(method, concrete(path), strings.NewReader("{}"))
	r.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

func TestMiddlewareEveryRoute(t *testing.T) {
	f := newFixture(t)
	all := map[string]string{}
	for rt, s := range routeScopes {
		all[rt] = s
	}
	for rt, s := range mcpScopes {
		if s != "admin" {
			all[rt] = s
		}
	}
	for rt, scope := range all {
		if scope == "" {
			if w := f.do(t, rt, ""); w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
				t.Errorf("public %s without a token: %d", rt, w.Code)
			}
			continue
		}
		if w := f.do(t, rt, ""); w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s without a token: %d %q, want 401 with WWW-Authenticate: Bearer", rt, w.Code, w.Header().Get("WWW-Authenticate"))
		}
		for _, other := range []string{"read", "publish", "invoke"} {
			if other == scope {
				continue
			}
			w := f.do(t, rt, f.secrets[other])
			if w.Code != http.StatusForbidden {
				t.Errorf("%s with a %s token: %d, want 403", rt, other, w.Code)
				continue
			}
			var p struct {
				Status        int    `json:"status"`
				Detail        string `json:"detail"`
				RequiredScope string `json:"required_scope"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != 403 || p.RequiredScope != scope || !strings.Contains(p.Detail, `"`+scope+`"`) {
				t.Errorf("%s 403 body %s: want a problem naming scope %s", rt, w.Body, scope)
			}
		}
		for _, ok := range []string{scope, "admin"} {
			if w := f.do(t, rt, f.secrets[ok]); w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
				t.Errorf("%s with a %s token: %d %s", rt, ok, w.Code, w.Body)
			}
		}
	}
}

func TestMiddleware401(t *testing.T) {
	f := newFixture(t)
	for name, header := range map[string]string{
		"basic":     "Basic dXNlcjpwYXNz",
		"malformed": "Bearer nope",
		"unknown":   "Bearer chp_000000000000_abc",
	} {
		r := httptest.NewRequest("GET", "/registry/capabilities", nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		f.handler.ServeHTTP(w, r)
		if w.Code != 401 || w.Header().Get("Content-Type") != "application/problem+json" || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %v", name, w.Code, w.Header())
		}
		var p map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p["status"] != float64(401) || p["instance"] != "/registry/capabilities" {
			t.Errorf("%s: body %s", name, w.Body)
		}
	}
}

func TestMiddlewareActor(t *testing.T) {
	_, st := restServer(t)
	toks := auth.New(st, nil)
	ctx := context.Background()
	_, bot, err := toks.Create(ctx, "ci-bot", []auth.Scope{auth.ScopeRead, auth.ScopeInvoke}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, scanner, err := toks.CreateForAgent(ctx, "scanner-key", []auth.Scope{auth.ScopeInvoke}, 0, "scanner")
	if err != nil {
		t.Fatal(err)
	}
	_, admin, err := toks.Create(ctx, "root", []auth.Scope{auth.ScopeAdmin}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var actor, caller, cred string
	var tok *auth.Token
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := identity.From(r.Context())
		actor, caller, cred = c.Actor, c.Agent, c.Credential
		tok, _ = auth.FromContext(r.Context())
	})
	mux := auth.NewRoutes()
	mux.Handle("GET /v1/capabilities", auth.ScopeRead, record)
	mux.Handle("POST /v1/invoke", auth.ScopeInvoke, record)
	mux.Handle("/mcp/agents/", auth.ScopeInvoke, record)
	h := toks.Middleware(mux.ScopeOf, mux)
	for _, tc := range []struct {
		name, secret, path, claim string
		status                    int
		caller                    string
	}{
		{"token acts as itself", bot, "/v1/capabilities", "", 200, "token:ci-bot"},
		{"token claims another agent", bot, "/v1/capabilities", "someone-else", 403, ""},
		{"token on an agent's endpoint", bot, "/mcp/agents/boss", "", 403, ""},
		{"bound token acts as its agent", scanner, "/v1/invoke", "", 200, "scanner"},
		{"bound token names its agent", scanner, "/v1/invoke", "scanner", 200, "scanner"},
		{"bound token on its agent's endpoint", scanner, "/mcp/agents/scanner", "", 200, "scanner"},
		{"bound token on another agent's endpoint", scanner, "/mcp/agents/boss", "", 403, ""},
		{"bound token claims another agent", scanner, "/v1/invoke", "boss", 403, ""},
		{"admin acts as any agent", admin, "/v1/invoke", "boss", 200, "boss"},
		{"admin on an agent's endpoint", admin, "/mcp/agents/boss", "", 200, "token:root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller, tok = "", nil
			method := "GET"
			if tc.path == "/v1/invoke" {
				method = "POST"
			}
			r := httptest.NewRequest(method, tc.path, nil)
			r.Header.Set("Authorization", "Bearer "+tc.secret)
			if tc.claim != "" {
				r.Header.Set(identity.Header, tc.claim)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.status)
			}
			if tc.status != 200 {
				if !strings.Contains(w.Body.String(), "--agent") {
					t.Errorf("the refusal does not say how to get a token for the agent: %s", w.Body)
				}
				return
			}
			if caller != tc.caller || tok == nil || actor != auth.Actor(tok) || cred != auth.Actor(tok) {
				t.Errorf("caller %q actor %q credential %q, want caller %q", caller, actor, cred, tc.caller)
			}
			if r.Header.Get(identity.Header) != tc.claim {
				t.Error("the middleware changed the caller's request headers")
			}
		})
	}
}
