package fallback

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// env is a real SQLite registry with its saved MCP servers; clock is the
// registry's time, which tests may move.
type env struct {
	reg     *registry.Service
	servers *discover.Servers
	clock   time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{servers: discover.NewServers(st), clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e.reg = registry.NewService(st, registry.WithClock(func() time.Time { return e.clock }))
	return e
}

func def(scheme, domain, name, version string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: capability.NewURI(scheme, domain, name, v).String(), Name: name, Domain: domain, Version: version, Description: "the " + name + " capability",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

func (e *env) register(t *testing.T, defs ...capability.Definition) {
	t.Helper()
	if _, err := e.reg.RegisterBatch(context.Background(), defs); err != nil {
		t.Fatal(err)
	}
}

func (e *env) find(t *testing.T, r *Resolver, uri string) *Result {
	t.Helper()
	if r == nil {
		r = &Resolver{}
	}
	r.Reg = e.reg
	res, err := r.Find(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func uris(res *Result) []string {
	var out []string
	for _, p := range res.Proposals {
		out = append(out, p.Source+" "+p.URI)
	}
	return out
}

func TestExactHit(t *testing.T) {
	e := newEnv(t)
	e.register(t, def("ossa", "github", "list_issues", "1.2.0"))
	res := e.find(t, nil, "ossa:github/list_issues@1")
	if !res.Found || len(res.Proposals) != 1 || res.Proposals[0].Source != SourceExact || res.Proposals[0].URI != "ossa:github/list_issues@1.2" {
		t.Fatalf("got %+v", res)
	}
}

func TestConfiguredAlias(t *testing.T) {
	e := newEnv(t)
	e.register(t, def("ossa", "vcs", "issues", "1.0.0"))
	// A chain: old → mid (not registered) → vcs/issues.
	r := &Resolver{Aliases: map[string]string{"ossa:github/tickets": "ossa:github/mid", "ossa:github/mid": "ossa:vcs/issues"}}
	res := e.find(t, r, "ossa:github/tickets")
	if res.Found || len(res.Proposals) != 1 || res.Proposals[0].Source != SourceAlias || res.Proposals[0].URI != "ossa:vcs/issues@1.0" {
		t.Fatalf("got %v", uris(res))
	}
	if len(res.Registered) != 0 {
		t.Fatalf("registered without Auto: %v", res.Registered)
	}
}

func TestSunsetProposesReplacement(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.register(t, def("ossa", "files", "read", "1.0.0"), def("ossa", "files", "read", "2.0.0"), def("ossa", "files", "read", "2.1.0"), def("ossa", "files", "read_file", "1.0.0"))
	if _, err := e.reg.Deprecate(ctx, "ossa", "files", "read", "1.0.0", registry.DeprecateRequest{DeprecatedBy: "ossa:files/read_file@1.0", SunsetDate: "2026-08-01"}); err != nil {
		t.Fatal(err)
	}
	// Still within the grace period: resolves, deprecated, replacement proposed too.
	res := e.find(t, nil, "ossa:files/read@1")
	if !res.Found || len(res.Proposals) != 2 || res.Proposals[1].URI != "ossa:files/read_file@1.0" {
		t.Fatalf("before sunset: %v", uris(res))
	}
	e.clock = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	res = e.find(t, nil, "ossa:files/read@1")
	if res.Found || len(res.Proposals) == 0 {
		t.Fatalf("after sunset: %+v", res)
	}
	p := res.Proposals[0]
	if p.Source != SourceAlias || p.URI != "ossa:files/read_file@1.0" || !p.Registered {
		t.Fatalf("after sunset: %v", uris(res))
	}
}

func TestPartialMatch(t *testing.T) {
	e := newEnv(t)
	e.register(t, def("ossa", "github", "list_issues", "1.0.0"), def("ossa", "github", "list_pulls", "1.0.0"),
		def("ossa", "github", "get_repo", "1.0.0"), def("ossa", "gitlab", "list_issues", "1.0.0"))
	res := e.find(t, nil, "ossa:github/list_issue")
	got := uris(res)
	if res.Found || len(got) != 2 || got[0] != "partial ossa:github/list_issues@1.0" || got[1] != "partial ossa:github/list_pulls@1.0" {
		t.Fatalf("got %v", got)
	}
	// "ge" is all get_repo shares with "gen_docs": too short.
	if res := e.find(t, nil, "ossa:github/gen_docs"); len(res.Proposals) != 0 {
		t.Fatalf("prefix of 2 proposed %v", uris(res))
	}
}

func (e *env) saveListing(t *testing.T, server string, tools ...string) {
	t.Helper()
	ctx := context.Background()
	if err := e.servers.SaveServer(ctx, &mcpconn.Server{Name: server, Command: "true"}); err != nil {
		t.Fatal(err)
	}
	l := &discover.Listing{Server: server, Source: "true", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, name := range tools {
		l.Tools = append(l.Tools, &mcp.Tool{Name: name, Description: "tool " + name, InputSchema: map[string]any{"type": "object"}})
	}
	if err := e.servers.SaveListing(ctx, l); err != nil {
		t.Fatal(err)
	}
}

func TestCachedMCPListing(t *testing.T) {
	e := newEnv(t)
	e.saveListing(t, "hub", "create_issue", "search code", "delete_repo")
	r := &Resolver{Servers: e.servers}
	res := e.find(t, r, "ossa:github/create_issue")
	if res.Found || len(res.Proposals) != 1 {
		t.Fatalf("got %v", uris(res))
	}
	p := res.Proposals[0]
	if p.Source != "mcp:hub" || p.URI != "mcp:hub/create_issue@1.0" || p.Registered || p.Definition == nil || p.Definition.Bindings.MCP.Tool != "create_issue" {
		t.Fatalf("got %+v", p)
	}
	// The sanitised name of "search code" is search_code.
	res = e.find(t, r, "ossa:github/search_code")
	if len(res.Proposals) != 1 || res.Proposals[0].URI != "mcp:hub/search_code@1.0" || res.Proposals[0].Definition.Bindings.MCP.Tool != "search code" {
		t.Fatalf("got %v", uris(res))
	}
	// Partial matches only within the wanted domain (the server's name).
	if res := e.find(t, r, "ossa:github/delete_repos"); len(res.Proposals) != 0 {
		t.Fatalf("partial across domains: %v", uris(res))
	}
	if res := e.find(t, r, "mcp:hub/delete_repos"); len(res.Proposals) != 1 || res.Proposals[0].URI != "mcp:hub/delete_repo@1.0" {
		t.Fatalf("partial in domain: %v", uris(res))
	}
}

func TestOpenAPISpec(t *testing.T) {
	e := newEnv(t)
	spec := filepath.Join("testdata", "tracker.yaml")
	r := &Resolver{OpenAPISpecs: []string{spec, filepath.Join("testdata", "missing.yaml")}}
	res := e.find(t, r, "ossa:tickets/list_tickets")
	if len(res.Proposals) != 1 {
		t.Fatalf("got %v", uris(res))
	}
	p := res.Proposals[0]
	if p.Source != "openapi:"+spec || p.URI != "ossa:tracker/list_tickets@1.0" || p.Definition.Bindings.HTTP == nil {
		t.Fatalf("got %+v", p)
	}
	if len(res.Errors) != 1 {
		t.Fatalf("an unreadable spec is reported, not fatal: %v", res.Errors)
	}
}

func TestAutoRegistersOne(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.saveListing(t, "tracker", "list_tickets")
	r := &Resolver{Servers: e.servers, OpenAPISpecs: []string{filepath.Join("testdata", "tracker.yaml")}, Auto: true}
	res := e.find(t, r, "ossa:tracker/list_tickets")
	if len(res.Proposals) != 2 {
		t.Fatalf("want an MCP and an OpenAPI proposal, got %v", uris(res))
	}
	if len(res.Registered) != 1 || res.Registered[0] != "mcp:tracker/list_tickets@1.0" {
		t.Fatalf("registered %v", res.Registered)
	}
	if _, err := e.reg.Resolve(ctx, "mcp:tracker/list_tickets@1.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Resolve(ctx, "ossa:tracker/list_tickets"); err == nil {
		t.Fatal("the second proposal was registered too")
	}
	// Again: the MCP tool is registered now, so the OpenAPI operation is
	// the top proposal not yet registered.
	res = e.find(t, r, "ossa:tracker/list_tickets")
	if len(res.Registered) != 1 || res.Registered[0] != "ossa:tracker/list_tickets@1.0" {
		t.Fatalf("second run registered %v (%v)", res.Registered, uris(res))
	}
	// Found now: nothing more is registered.
	res = e.find(t, r, "ossa:tracker/list_tickets")
	if !res.Found || len(res.Registered) != 0 {
		t.Fatalf("third run: %+v", res)
	}
}

// Auto never registers over an existing capability, even one whose
// registered version differs from the discovered one.
func TestAutoNeverRebinds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	existing := def("mcp", "hub", "create_issue", "2.0.0")
	e.register(t, existing)
	e.saveListing(t, "hub", "create_issue")
	r := &Resolver{Servers: e.servers, Auto: true}
	res := e.find(t, r, "ossa:github/create_issue")
	if len(res.Registered) != 0 || len(res.Proposals) != 1 || !res.Proposals[0].Registered {
		t.Fatalf("got %+v", res)
	}
	got, err := e.reg.Resolve(ctx, "mcp:hub/create_issue")
	if err != nil || got.Version != "2.0.0" {
		t.Fatalf("resolution changed: %v %v", got.Version, err)
	}
}

// With resolution off only the exact URI is checked.
func TestExactOnly(t *testing.T) {
	e := newEnv(t)
	e.register(t, def("ossa", "github", "list_issues", "1.0.0"))
	e.saveListing(t, "github", "list_issue")
	r := &Resolver{Reg: e.reg, Servers: e.servers, Auto: true}
	res, err := r.Exact(context.Background(), "ossa:github/list_issue")
	if err != nil || res.Found || len(res.Proposals) != 0 || len(res.Registered) != 0 {
		t.Fatalf("got %+v %v", res, err)
	}
	res, err = r.Exact(context.Background(), "ossa:github/list_issues")
	if err != nil || !res.Found || len(res.Proposals) != 1 {
		t.Fatalf("got %+v %v", res, err)
	}
}
