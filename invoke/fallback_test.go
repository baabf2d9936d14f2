package invoke_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/httpbind"
	"github.com/caphub/caphub/invoke/binding/mcpbind"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// The MCP upstream is down; the http binding answers. The result names the
// binding used and lists every attempt.
func TestFallbackFromDeadMCPToHTTP(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := registry.NewService(st)
	servers := discover.NewServers(st)
	// A saved server whose program exits at once: it never speaks MCP.
	if err := servers.SaveServer(ctx, &mcpconn.Server{Name: "scanner", Command: "true"}); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"findings": []any{}, "target": body["target"]})
	}))
	defer api.Close()
	d := capability.Definition{
		URI: "ossa:security/scan@1.0", Name: "scan", Domain: "security", Version: "1.0.0", Description: "scan",
		Input:  capability.Schema{"type": "object", "required": []any{"target"}, "properties": map[string]any{"target": map[string]any{"type": "string"}}},
		Output: capability.Schema{"type": "object", "required": []any{"findings"}},
		Bindings: capability.Bindings{
			MCP:  &capability.MCPBinding{Server: "scanner", Tool: "scan", Mapping: map[string]string{"target": "path"}},
			HTTP: &capability.HTTPBinding{Method: "POST", URL: api.URL + "/scan", BodyTemplate: `{"target": "{target}"}`},
		},
	}
	if _, err := svc.Register(ctx, d); err != nil {
		t.Fatal(err)
	}
	mcpB := mcpbind.New(servers, mcpbind.Options{MinBackoff: time.Millisecond})
	defer mcpB.Close()
	p := invoke.New(svc, []invoke.Binding{mcpB, httpbind.New(httpbind.Options{})}, invoke.Options{MaxAttempts: 2, BaseBackoff: time.Millisecond})
	res, err := p.Invoke(ctx, invoke.Request{URI: "ossa:security/scan@1.0", Input: map[string]any{"target": "/src"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Binding != "http" || res.Output.(map[string]any)["target"] != "/src" {
		t.Errorf("result %+v", res)
	}
	// Two failed mcp attempts (the failure is retryable), then the http one.
	if len(res.Attempts) != 3 || res.Attempts[0].Binding != "mcp" || res.Attempts[0].Error == nil ||
		res.Attempts[1].Binding != "mcp" || res.Attempts[2].Binding != "http" || res.Attempts[2].Error != nil {
		b, _ := json.MarshalIndent(res.Attempts, "", " ")
		t.Errorf("attempts:\n%s", b)
	}
}
