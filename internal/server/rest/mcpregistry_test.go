package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/discover/mcpregistry"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// registryFixture serves a caphub whose saved servers are two imported
// from hand-written server.json documents and three saved by hand.
func registryFixture(t *testing.T) (*httptest.Server, map[string]*mcpconn.Server) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st)
	srv := httptest.NewServer(New(svc, nil))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	servers := discover.NewServers(st)
	saved := map[string]*mcpconn.Server{}
	for file, inputs := range map[string]map[string]string{"npm.json": nil, "remote.json": {"region": "eu"}} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "discover", "mcpregistry", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := mcpregistry.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		e := doc.Entries[0]
		p := mcpregistry.Connect(e, mcpregistry.LocalName(e.Server.Name, false), mcpregistry.Options{Inputs: inputs})
		if p.Server == nil {
			t.Fatal(p.Skipped)
		}
		saved[e.Server.Name] = p.Server
	}
	saved["local.caphub/files"] = &mcpconn.Server{Name: "files", Command: "npx -y @modelcontextprotocol/server-filesystem@2025.8.21", Args: []string{"/tmp"}, Env: map[string]string{"FS_TOKEN": "${FS_TOKEN}", "MODE": "ro"}}
	saved["local.caphub/custom"] = &mcpconn.Server{Name: "custom", Command: "node ./server.js"}
	saved["local.caphub/hosted"] = &mcpconn.Server{Name: "hosted", Transport: mcpconn.TransportSSE, URL: "https://mcp.example.net/sse", Headers: map[string]string{"Authorization": "Bearer ${HOSTED_TOKEN}"}}
	for _, s := range saved {
		if err := servers.SaveServer(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return srv, saved
}

// TestMCPRegistryRoundTrip: what caphub serves as a registry, paged,
// caphub reads back into the same connections; a saved command that no
// registry type describes comes back as caphub's front of it.
func TestMCPRegistryRoundTrip(t *testing.T) {
	srv, saved := registryFixture(t)
	got, err := mcpregistry.Fetch(context.Background(), srv.URL+"/v0/servers?limit=2", mcpregistry.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Pages != 3 || len(got.Entries) != 5 || len(got.Invalid) != 0 {
		t.Fatalf("pages %d, entries %d, invalid %v", got.Pages, len(got.Entries), got.Invalid)
	}
	for _, e := range got.Entries {
		want := saved[e.Server.Name]
		if want == nil {
			t.Errorf("served %q, which is not saved", e.Server.Name)
			continue
		}
		p := mcpregistry.Connect(e, want.Name, mcpregistry.Options{Inputs: map[string]string{"region": "eu"}})
		if p.Server == nil {
			t.Errorf("%s: %s", e.Server.Name, p.Skipped)
			continue
		}
		conn := func(s *mcpconn.Server) mcpconn.Server {
			c := *s
			c.Registry, c.Permits = nil, nil
			if argv, err := capability.SplitCommand(c.Command); err == nil && len(argv) > 0 {
				c.Command, c.Args = argv[0], append(argv[1:], c.Args...) // the same argv
			}
			return c
		}
		w := conn(want)
		if want.Name == "custom" {
			w = mcpconn.Server{Name: "custom", Transport: mcpconn.TransportHTTP, URL: srv.URL + "/mcp/servers/custom"}
		}
		_ = w.Validate() // sets the default transport
		if g := conn(p.Server); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", e.Server.Name, g, w)
		}
	}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// TestMCPRegistryAPI: the list's search, version and limit, one server's
// versions and one version, under /v0 and /v0.1, in the official shapes.
func TestMCPRegistryAPI(t *testing.T) {
	srv, _ := registryFixture(t)
	for _, v := range []string{"/v0", "/v0.1"} {
		var page struct {
			Servers []struct {
				Server struct{ Name, Version, Description string } `json:"server"`
				Meta   map[string]json.RawMessage                  `json:"_meta"`
			} `json:"servers"`
			Metadata map[string]any `json:"metadata"`
		}
		if code := getJSON(t, srv.URL+v+"/servers?search=TIDE", &page); code != 200 || len(page.Servers) != 1 || page.Servers[0].Server.Name != "io.github.harbor-labs/tide-tables" || page.Metadata["count"] != 1.0 {
			t.Fatalf("%s search: %d %+v", v, code, page)
		}
		if !strings.Contains(string(page.Servers[0].Meta[mcpregistry.OfficialMetaKey]), `"isLatest":true`) {
			t.Errorf("_meta %s", page.Servers[0].Meta)
		}
		if code := getJSON(t, srv.URL+v+"/servers?search=hourly", &page); code != 200 || len(page.Servers) != 1 {
			t.Errorf("search by description: %+v", page)
		}
		if code := getJSON(t, srv.URL+v+"/servers?version=2.4.1", &page); code != 200 || len(page.Servers) != 1 {
			t.Errorf("version filter: %+v", page)
		}
		name := "io.github.harbor-labs%2Ftide-tables"
		var one struct {
			Server struct {
				Name, Version string
				Remotes       []mcpregistry.Transport
			} `json:"server"`
		}
		for _, ver := range []string{"latest", "2.4.1"} {
			if code := getJSON(t, srv.URL+v+"/servers/"+name+"/versions/"+ver, &one); code != 200 || one.Server.Version != "2.4.1" {
				t.Errorf("%s version %s: %d %+v", v, ver, code, one)
			}
		}
		if n := len(one.Server.Remotes); n != 1 || one.Server.Remotes[0].URL != srv.URL+"/mcp/servers/tide-tables" || len(one.Server.Remotes[0].Headers) != 0 {
			t.Errorf("caphub's front as the remote: %+v", one.Server.Remotes)
		}
		if code := getJSON(t, srv.URL+v+"/servers/"+name+"/versions", &page); code != 200 || len(page.Servers) != 1 {
			t.Errorf("versions: %d %+v", code, page)
		}
		for path, want := range map[string]int{
			"/servers/" + name + "/versions/9.9.9":           404,
			"/servers/io.github.nobody%2Fnone/versions":      404,
			"/servers?limit=0":                               400,
			"/servers?limit=101":                             400,
			"/servers?cursor=bogus":                          400,
			"/servers?updated_since=yesterday":               400,
			"/servers/local.caphub%2Fcustom/versions/latest": 200,
		} {
			if code := getJSON(t, srv.URL+v+path, nil); code != want {
				t.Errorf("%s%s: %d, want %d", v, path, code, want)
			}
		}
	}
	var doc struct{ Paths map[string]any }
	getJSON(t, srv.URL+"/openapi.json", &doc)
	for _, p := range []string{"/v0/servers", "/v0.1/servers/{serverName}/versions/{version}"} {
		if doc.Paths[p] == nil {
			t.Errorf("the OpenAPI document lacks %s", p)
		}
	}
}

// TestMCPRegistryToken: where caphub asks for tokens, the registry API
// needs the read scope, and caphub's front, as a remote, asks for a token.
func TestMCPRegistryToken(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st)
	t.Cleanup(func() { svc.Close() })
	api := New(svc, nil)
	tokens := auth.New(st, nil)
	_, secret, err := tokens.Create(ctx, "reader", []auth.Scope{auth.ScopeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tokens.Middleware(api.ScopeOf, api))
	t.Cleanup(srv.Close)
	if err := discover.NewServers(st).SaveServer(ctx, &mcpconn.Server{Name: "custom", Command: "node server.js"}); err != nil {
		t.Fatal(err)
	}
	if code := getJSON(t, srv.URL+"/v0/servers", nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", code)
	}
	got, err := mcpregistry.Fetch(ctx, srv.URL+"/v0/servers", mcpregistry.FetchOptions{Header: http.Header{"Authorization": {"Bearer " + secret}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 1 {
		t.Fatalf("entries %+v", got.Entries)
	}
	p := mcpregistry.Connect(got.Entries[0], "custom", mcpregistry.Options{})
	if p.Server == nil || p.Server.URL != srv.URL+"/mcp/servers/custom" || p.Server.Headers["Authorization"] != "Bearer ${TOKEN}" || len(p.Needs) != 1 || !p.Needs[0].Secret {
		t.Errorf("the front as a remote: %+v", p)
	}
}
