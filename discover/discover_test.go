package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newRegistry(t *testing.T) (*registry.Service, *Servers) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return registry.NewService(st), NewServers(st)
}

func everything(t *testing.T) *mcpconn.Server {
	t.Helper()
	node := testpeers.Node(t)
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything")
	return &mcpconn.Server{Name: "everything", Command: node + " " + filepath.Join(pkg, "dist", "index.js"), Args: []string{"stdio"}}
}

// The real server-everything over stdio: every tool registered with the
// schemas it advertises; a second discovery changes nothing.
func TestDiscoverEverythingOverStdio(t *testing.T) {
	srv := everything(t)
	ctx := context.Background()
	reg, servers := newRegistry(t)

	// What the server advertises, straight from the SDK.
	cs, err := mcpconn.Connect(ctx, srv, "test")
	if err != nil {
		t.Fatal(err)
	}
	advertised, err := mcpconn.ListTools(ctx, cs)
	cs.Close()
	if err != nil || len(advertised) < 10 {
		t.Fatalf("listing: %d tools, %v", len(advertised), err)
	}

	rep, err := Run(ctx, reg, servers, srv, Options{Register: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tools != len(advertised) || len(rep.Plan.New) != len(advertised) || len(rep.Failures) != 0 {
		t.Fatalf("report: %d tools, %d new, failures %v", rep.Tools, len(rep.Plan.New), rep.Failures)
	}
	for _, tool := range advertised {
		rec, err := reg.Get(ctx, capability.SchemeMCP, "everything", uriName(tool.Name), "1.0.0")
		if err != nil {
			t.Errorf("%s not registered: %v", tool.Name, err)
			continue
		}
		d := rec.Definition
		want, _ := schemaOf(tool.InputSchema)
		if !reflect.DeepEqual(d.Input, want) {
			t.Errorf("%s: input schema differs from what the server advertises:\n%v\n%v", tool.Name, d.Input, want)
		}
		if tool.OutputSchema != nil {
			wantOut, _ := schemaOf(tool.OutputSchema)
			if !reflect.DeepEqual(d.Output, wantOut) {
				t.Errorf("%s: output schema differs", tool.Name)
			}
		}
		if d.Bindings.MCP == nil || d.Bindings.MCP.Tool != tool.Name || d.Bindings.MCP.Server != "everything" {
			t.Errorf("%s: binding %+v", tool.Name, d.Bindings.MCP)
		}
		if d.Provenance == nil || d.Provenance.Method != introspectionMethod || d.Provenance.CapabilityType != "mcp_tool" || d.Provenance.IntrospectorVersion != "test" {
			t.Errorf("%s: provenance %+v", tool.Name, d.Provenance)
		}
		if !reflect.DeepEqual(d.Effects, toolEffects(tool.Annotations)) || len(d.Domains) == 0 || len(d.Categories) == 0 {
			t.Errorf("%s: effects %v domains %v categories %v", tool.Name, d.Effects, d.Domains, d.Categories)
		}
	}
	saved, err := servers.GetServer(ctx, "everything")
	if err != nil || saved.Listing == nil || len(saved.Listing.Tools) != len(advertised) || saved.Server.Command != srv.Command {
		t.Fatalf("saved server: %+v %v", saved, err)
	}

	again, err := Run(ctx, reg, servers, srv, Options{Register: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p := again.Plan
	if len(p.New)+len(p.Changed)+len(p.Vanished) != 0 || len(p.Unchanged) != len(advertised) {
		t.Errorf("re-discovery is not a no-op: %+v", p)
	}
	page, _ := reg.List(ctx, registry.ListFilter{Scheme: capability.SchemeMCP, AllVersions: true, CountTotal: true})
	if page.Total != len(advertised) {
		t.Errorf("%d versions registered after re-discovery, want %d", page.Total, len(advertised))
	}
}

// upstream is an in-process MCP server whose tools a test can change.
type upstream struct {
	server *mcp.Server
	http   *httptest.Server
}

func newUpstream(t *testing.T, sseOnly bool) *upstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if sseOnly {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	u := &upstream{server: s, http: httptest.NewServer(h)}
	t.Cleanup(u.http.Close)
	return u
}

func (u *upstream) addTool(name string, schema map[string]any, ann *mcp.ToolAnnotations) {
	u.server.AddTool(&mcp.Tool{Name: name, Description: "tool " + name, InputSchema: schema, Annotations: ann},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
}

func object(required []any, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": required, "properties": props}
}

// Re-discovering a changed server: a breaking change becomes a new major,
// an additive one a new minor, and a vanished tool is deprecated.
func TestRediscoveryVersionsAndDeprecates(t *testing.T) {
	ctx := context.Background()
	reg, servers := newRegistry(t)
	up := newUpstream(t, false)
	str := map[string]any{"type": "string"}
	up.addTool("list_issues", object([]any{"repo"}, map[string]any{"repo": str}), &mcp.ToolAnnotations{ReadOnlyHint: true})
	up.addTool("create_issue", object([]any{"repo"}, map[string]any{"repo": str}), nil)
	up.addTool("delete_issue", object([]any{"id"}, map[string]any{"id": str}), nil)
	srv := &mcpconn.Server{Name: "tracker", URL: up.http.URL}

	rep, err := Run(ctx, reg, servers, srv, Options{Register: true, Version: "test"})
	if err != nil || len(rep.Plan.New) != 3 {
		t.Fatalf("first discovery: %+v %v", rep, err)
	}
	rec, _ := reg.Get(ctx, "mcp", "tracker", "list_issues", "1.0.0")
	if !reflect.DeepEqual(rec.Definition.Domains, []string{"tracker", "tracker.issues"}) || !reflect.DeepEqual(rec.Definition.Categories, []string{"crud.read"}) {
		t.Errorf("inferred %v %v", rec.Definition.Domains, rec.Definition.Categories)
	}

	// list_issues gains a required field (major), create_issue an optional one (minor); delete_issue vanishes.
	up.server.RemoveTools("list_issues", "create_issue", "delete_issue")
	up.addTool("list_issues", object([]any{"repo", "state"}, map[string]any{"repo": str, "state": str}), &mcp.ToolAnnotations{ReadOnlyHint: true})
	up.addTool("create_issue", object([]any{"repo"}, map[string]any{"repo": str, "title": str}), nil)

	rep, err = Run(ctx, reg, servers, srv, Options{Register: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Plan
	changed := map[string]Change{}
	for _, c := range p.Changed {
		changed[c.URI] = c
	}
	if c := changed["mcp:tracker/list_issues@2.0"]; c.From != "1.0.0" || c.To != "2.0.0" || c.Bump != "major" {
		t.Errorf("list_issues: %+v (changed: %+v)", c, p.Changed)
	}
	if c := changed["mcp:tracker/create_issue@1.1"]; c.To != "1.1.0" || c.Bump != "minor" {
		t.Errorf("create_issue: %+v", c)
	}
	if !reflect.DeepEqual(p.Vanished, []string{"mcp:tracker/delete_issue@1.0"}) {
		t.Errorf("vanished %v", p.Vanished)
	}
	res, err := reg.Resolve(ctx, "mcp:tracker/delete_issue@1")
	if err != nil || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0].MigrationGuide, "no longer offers") {
		t.Errorf("vanished tool: %+v %v", res, err)
	}
	if res, err := reg.Resolve(ctx, "mcp:tracker/list_issues"); err != nil || res.Version != "2.0.0" {
		t.Errorf("latest list_issues: %+v %v", res, err)
	}
	// Nothing was deleted: the old versions are still there.
	if _, err := reg.Get(ctx, "mcp", "tracker", "list_issues", "1.0.0"); err != nil {
		t.Errorf("old version gone: %v", err)
	}
}

// A URL that only speaks the old SSE transport is reached through the
// fallback.
func TestDiscoverFallsBackToSSE(t *testing.T) {
	ctx := context.Background()
	reg, servers := newRegistry(t)
	up := newUpstream(t, true)
	up.addTool("ping", map[string]any{"type": "object"}, &mcp.ToolAnnotations{ReadOnlyHint: true})
	rep, err := Run(ctx, reg, servers, &mcpconn.Server{Name: "old", URL: up.http.URL}, Options{Register: true})
	if err != nil || len(rep.Plan.New) != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestRunAllInParallelReportsEachServer(t *testing.T) {
	ctx := context.Background()
	reg, servers := newRegistry(t)
	var cfg Config
	for _, name := range []string{"a", "b", "c"} {
		up := newUpstream(t, false)
		up.addTool("get_"+name, map[string]any{"type": "object"}, nil)
		cfg.Servers = append(cfg.Servers, mcpconn.Server{Name: name, URL: up.http.URL})
	}
	cfg.Servers = append(cfg.Servers, mcpconn.Server{Name: "down", URL: "http://127.0.0.1:1/mcp"})
	cfg.MaxParallelDiscoveries = 2
	reports := RunAll(ctx, &cfg, func(ctx context.Context, s *mcpconn.Server) (*Report, error) {
		return Run(ctx, reg, servers, s, Options{Register: true})
	})
	for i, name := range []string{"a", "b", "c"} {
		if reports[i].Server != name || reports[i].Error != "" || len(reports[i].Plan.New) != 1 {
			t.Errorf("report %d: %+v", i, reports[i])
		}
	}
	if reports[3].Error == "" {
		t.Errorf("the unreachable server reported no error")
	}
	all, _ := servers.ListServers(ctx)
	if len(all) != 3 {
		t.Errorf("%d servers saved, want the 3 reachable ones", len(all))
	}
}

func TestEffects(t *testing.T) {
	f, tr := false, true
	cases := []struct {
		ann  *mcp.ToolAnnotations
		want string
	}{
		{nil, "mcp_call writes destructive open_world"},
		{&mcp.ToolAnnotations{ReadOnlyHint: true}, "mcp_call read_only open_world"},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}, "mcp_call read_only"},
		{&mcp.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true}, "mcp_call writes idempotent open_world"},
		{&mcp.ToolAnnotations{DestructiveHint: &tr, OpenWorldHint: &f}, "mcp_call writes destructive"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := strings.Join(toolEffects(c.ann), " "); got != c.want {
				b, _ := json.Marshal(c.ann)
				t.Errorf("toolEffects(%s) = %s, want %s", b, got, c.want)
			}
		})
	}
}

func TestURIName(t *testing.T) {
	for in, want := range map[string]string{"echo": "echo", "get-sum": "get-sum", "printEnv": "printEnv", "a b/c": "a_b_c", "-x": "_-x", "héllo": "h_llo"} {
		t.Run(in, func(t *testing.T) {
			if got := uriName(in); got != want {
				t.Errorf("uriName(%q) = %q, want %q", in, got, want)
			}
		})
	}
}
