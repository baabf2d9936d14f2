package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tidesMCP is a real MCP server (the Go SDK's, over streamable HTTP) with
// one tool, for --discover.
func tidesMCP(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tides", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "high_tide", Description: "next high tide of a harbour"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "06:12"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// pagedRegistry serves /v0.1/servers as the official registry does, one
// entry a page, following cursors; it records the queries it was asked.
func pagedRegistry(t *testing.T, entries []string) (string, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RawQuery)
		mu.Unlock()
		if r.URL.Path != "/v0.1/servers" {
			http.NotFound(w, r)
			return
		}
		i := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			fmt.Sscanf(c, "page-%d", &i)
		}
		next := ""
		if i+1 < len(entries) {
			next = fmt.Sprintf("page-%d", i+1)
		}
		fmt.Fprintf(w, `{"servers": [{"server": %s, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": true}}}], "metadata": {"nextCursor": %q, "count": 1}}`, entries[i], next)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, &asked
}

// TestImportMCPRegistryURL: a URL import follows the registry's pages,
// saves what it can (an npm package, a remote it then discovers), lists
// what it cannot and why, and fails the command for those.
func TestImportMCPRegistryURL(t *testing.T) {
	mcpURL := tidesMCP(t)
	entries := []string{
		`{"name": "io.github.harbor-labs/tide-tables", "description": "Tides", "version": "2.4.1", "packages": [{"registryType": "npm", "identifier": "@harbor-labs/tide-tables-mcp", "version": "2.4.1", "transport": {"type": "stdio"}, "environmentVariables": [{"name": "TIDE_API_KEY", "isRequired": true, "isSecret": true}]}]}`,
		`{"name": "io.github.harbor-labs/tides-remote", "description": "Tides, hosted", "version": "1.0.0", "remotes": [{"type": "streamable-http", "url": "` + mcpURL + `"}]}`,
		`{"name": "org.example/almanac", "description": "Almanac", "version": "0.9.0", "packages": [{"registryType": "pypi", "identifier": "almanac", "version": "0.9.0", "transport": {"type": "stdio"}, "packageArguments": [{"type": "named", "name": "--zone", "isRequired": true}]}]}`,
		`{"name": "org.example/broken", "description": "No version"}`,
	}
	base, asked := pagedRegistry(t, entries)
	db := filepath.Join(t.TempDir(), "c.db")
	code, out, errOut := caphub(t, "--db", db, "import", "mcp-registry", base, "--discover", "--allow-command", "npx")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (skipped entries)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"saved    tide-tables (io.github.harbor-labs/tide-tables 2.4.1) from packages[0] (npm @harbor-labs/tide-tables-mcp): npx -y @harbor-labs/tide-tables-mcp@2.4.1",
		"needs    $TIDE_API_KEY for env TIDE_API_KEY (secret, required)",
		"not yet  reads $TIDE_API_KEY, which the allow-list does not allow: add --allow-env TIDE_API_KEY",
		"saved    tides-remote (io.github.harbor-labs/tides-remote 1.0.0) from remotes[0]",
		"discovered 1 tools: 1 new",
		"skipped  org.example/almanac 0.9.0: packages[0] (pypi almanac): packageArguments[0] --zone has no value: set it with --set --zone=VALUE",
		"invalid  servers[0].server (org.example/broken): version: is missing",
		"2 saved, 1 skipped, 1 invalid (4 pages read)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "runs npx, which the allow-list does not allow") {
		t.Errorf("npx is allowed:\n%s", out)
	}
	if got := strings.Join(*asked, " "); got != "version=latest cursor=page-1&version=latest cursor=page-2&version=latest cursor=page-3&version=latest" {
		t.Errorf("queries: %s", got)
	}
	// The saved servers are bounded by the allow-lists, and the tool is registered.
	code, out, _ = caphub(t, "--db", db, "server", "show", "tide-tables", "--format", "json")
	var saved struct {
		ViaAPI bool `json:"via_api"`
		Server struct {
			Registry json.RawMessage `json:"registry"`
		} `json:"server"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &saved) != nil || !saved.ViaAPI || !strings.Contains(string(saved.Server.Registry), `"io.github.harbor-labs/tide-tables"`) {
		t.Errorf("saved server: %d %s", code, out)
	}
	if code, out, _ = caphub(t, "--db", db, "capability", "show", "mcp:tides-remote/high_tide"); code != 0 {
		t.Errorf("the discovered tool is not registered: %s", out)
	}
	// Importing again updates the same servers.
	code, out, _ = caphub(t, "--db", db, "import", "mcp-registry", base, "--set", "--zone=7b")
	if code != 1 || !strings.Contains(out, "updated  tide-tables") || !strings.Contains(out, "saved    almanac") || !strings.Contains(out, "not yet  runs uvx, which the allow-list does not allow: add --allow-command uvx") {
		t.Errorf("second import: exit %d\n%s", code, out)
	}
}

// TestImportMCPRegistryBounds: pages beyond --max-pages and a failing
// registry stop the import with the reason.
func TestImportMCPRegistryBounds(t *testing.T) {
	e := `{"name": "a.b/c", "description": "d", "version": "1.0.0", "remotes": [{"type": "sse", "url": "https://c.example/sse"}]}`
	base, _ := pagedRegistry(t, []string{e, e, e})
	db := filepath.Join(t.TempDir(), "c.db")
	code, _, errOut := caphub(t, "--db", db, "import", "mcp-registry", base, "--max-pages", "2")
	if code == 0 || !strings.Contains(errOut, "more than 2 pages") || !strings.Contains(errOut, "--max-pages") {
		t.Errorf("max pages: exit %d: %s", code, errOut)
	}
	code, _, errOut = caphub(t, "--db", db, "import", "mcp-registry", base+"/nowhere")
	if code == 0 || !strings.Contains(errOut, "404") {
		t.Errorf("a registry answering 404: exit %d: %s", code, errOut)
	}
	code, _, errOut = caphub(t, "--db", db, "import", "mcp-registry", "../../discover/mcpregistry/testdata/invalid/bad-name.json")
	if code == 0 || !strings.Contains(errOut, `name: "no slash here" must be NAMESPACE/NAME`) {
		t.Errorf("an invalid server.json: exit %d: %s", code, errOut)
	}
}

// TestImportMCPRegistryFromCaphub: one caphub serves the registry API for
// the servers it imported; another, over its own API (--server), imports
// that list and saves the same connections.
func TestImportMCPRegistryFromCaphub(t *testing.T) {
	dbA, dbB := filepath.Join(t.TempDir(), "a.db"), filepath.Join(t.TempDir(), "b.db")
	for _, f := range []string{"npm.json", "remote.json"} {
		if code, out, errOut := caphub(t, "--db", dbA, "import", "mcp-registry", "../../discover/mcpregistry/testdata/"+f, "--set", "region=us"); code != 0 {
			t.Fatalf("import %s: %d\n%s%s", f, code, out, errOut)
		}
	}
	a, b := startServe(t, dbA), startServe(t, dbB)
	code, out, errOut := caphub(t, "--server", b.url, "import", "mcp-registry", a.url+"/v0/servers?limit=1", "--set", "region=us")
	if code != 0 || !strings.Contains(out, "2 saved, 0 skipped, 0 invalid (2 pages read)") || !strings.Contains(out, "The caphub at "+b.url+" runs them within its own allow-lists") {
		t.Fatalf("import from caphub: %d\n%s%s", code, out, errOut)
	}
	type conn struct {
		Server struct {
			Command, URL string
			Args         []string
			Env, Headers map[string]string
		} `json:"server"`
	}
	for _, name := range []string{"tide-tables", "forecast"} {
		var fromA, fromB conn
		_, outA, _ := caphub(t, "--server", a.url, "server", "show", name, "--format", "json")
		_, outB, _ := caphub(t, "--server", b.url, "server", "show", name, "--format", "json")
		if json.Unmarshal([]byte(outA), &fromA) != nil || json.Unmarshal([]byte(outB), &fromB) != nil {
			t.Fatalf("%s:\n%s\n%s", name, outA, outB)
		}
		if ja, jb := fmt.Sprint(fromA), fmt.Sprint(fromB); ja != jb || fromA.Server.Command+fromA.Server.URL == "" {
			t.Errorf("%s differs:\n A %s\n B %s", name, ja, jb)
		}
	}
}
