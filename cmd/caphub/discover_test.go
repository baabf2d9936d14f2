package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A discovery configuration: several servers in parallel, registered, and
// exported to RTFS; an unreachable server is reported, the others go on.
func TestDiscoverConfigExportsRTFS(t *testing.T) {
	var urls []string
	for _, tool := range []string{"list_issues", "send_message"} {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: tool, Description: "does " + tool, InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		defer hs.Close()
		urls = append(urls, hs.URL)
	}
	dir := t.TempDir()
	export := filepath.Join(dir, "rtfs")
	cfg := writeFile(t, "servers.yaml", `max_parallel_discoveries: 2
export_to_rtfs: `+export+`
servers:
  - name: tracker
    url: `+urls[0]+`
  - name: chat
    url: `+urls[1]+`
  - name: down
    url: http://127.0.0.1:1/mcp
`)
	db := filepath.Join(dir, "caphub.db")
	code, out, errOut := caphub(t, "discover", "mcp", "--config", cfg, "--db", db)
	if code != 1 || !strings.Contains(out, "tracker: 1 tools: 1 new") || !strings.Contains(out, "chat: 1 tools: 1 new") || !strings.Contains(out, "down: failed") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range []string{"discovered/mcp/tracker/list_issues.rtfs", "discovered/mcp/chat/send_message.rtfs"} {
		b, err := os.ReadFile(filepath.Join(export, p))
		if err != nil || !strings.Contains(string(b), "(capability") {
			t.Errorf("%s: %v\n%s", p, err, b)
		}
	}
	// The export re-imports as what is registered.
	code, out, _ = caphub(t, "import", "rtfs", export, "--db", db)
	if code != 0 || !strings.Contains(out, "2 imported, 0 failed") || !strings.Contains(out, "unchanged  mcp:tracker/list_issues@1.0") {
		t.Errorf("re-import: exit %d\n%s", code, out)
	}
}

// --sessions saves the server's session mode, locally and over the REST
// API, and an unknown mode is refused with the modes that exist.
func TestDiscoverServerSessions(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "remember", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "caphub.db")
	if code, out, errOut := caphub(t, "discover", "mcp", "memory", "--url", hs.URL, "--sessions", "shared", "--db", db); code != 0 {
		t.Fatalf("discover --sessions shared: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ := caphub(t, "server", "show", "memory", "--format", "json", "--db", db)
	if code != 0 || !strings.Contains(out, `"sessions": "shared"`) {
		t.Errorf("server show --format json: exit %d\n%s", code, out)
	}
	if code, out, _ := caphub(t, "server", "show", "memory", "--db", db); code != 0 || !strings.Contains(out, "sessions shared") {
		t.Errorf("server show: exit %d\n%s", code, out)
	}
	code, out, errOut := caphub(t, "discover", "mcp", "memory", "--url", hs.URL, "--sessions", "pooled", "--db", db)
	if code != exitUsage || !strings.Contains(errOut, `sessions "pooled" is not a session mode: use per-client`) || !strings.Contains(errOut, "or shared") {
		t.Errorf("--sessions pooled: exit %d, want %d naming the modes\n%s%s", code, exitUsage, out, errOut)
	}

	if testing.Short() {
		return
	}
	p := startServe(t, filepath.Join(dir, "served.db"), "--allow-host", strings.TrimPrefix(hs.URL, "http://"))
	if code, out, errOut := caphub(t, "discover", "mcp", "memory", "--url", hs.URL, "--sessions", "shared", "--server", p.url); code != 0 {
		t.Fatalf("discover --sessions shared --server: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = caphub(t, "server", "show", "memory", "--format", "json", "--server", p.url)
	if code != 0 || !strings.Contains(out, `"sessions": "shared"`) {
		t.Errorf("server show over the API: exit %d\n%s", code, out)
	}
}
