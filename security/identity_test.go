package security

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"security-suite","version":"1"}}}`

// mcpSession opens a streamable HTTP MCP session at path with token and
// returns its id.
func (s *site) mcpSession(path, token string) string {
	s.t.Helper()
	code, body, h := s.do(req{method: "POST", path: path, body: initBody, token: token, header: map[string]string{"Accept": "application/json, text/event-stream"}})
	if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		s.t.Fatalf("initialize %s: %d %s", path, code, body)
	}
	sid := h.Get("Mcp-Session-Id")
	s.do(req{method: "POST", path: path, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, token: token,
		header: map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}})
	return sid
}

// mcpCall sends one request in a session and returns the status and body.
func (s *site) mcpCall(path, token, sid, body string) (int, string) {
	s.t.Helper()
	code, out, _ := s.do(req{method: "POST", path: path, body: body, token: token,
		header: map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}})
	return code, out
}

const addCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`

// Break 4: an invoke token acted as any agent through /mcp/agents/{id};
// the caller came from the URL, not the token.
func TestTokenActsOnlyAsItsAgent(t *testing.T) {
	s := newSite(t)
	admin := s.token("admin", "--scope", "admin")
	anyone := s.token("anyone", "--scope", "invoke")
	bossKey := s.token("boss-key", "--scope", "invoke", "--agent", "boss")
	bossPub := s.token("boss-pub", "--scope", "publish", "--agent", "boss")
	s.serve()
	manifest := `{"apiVersion":"ossa/v0.2.9","kind":"Agent","metadata":{"name":"boss","version":"1.0.0"},"spec":{"role":"the boss","capabilities":["ossa:everruns/add@1.0"]}}`
	if code, body, _ := s.do(req{method: "PUT", path: "/v1/agents/boss", body: manifest, token: admin}); code != http.StatusOK {
		t.Fatalf("PUT agent: %d %s", code, body)
	}
	code, body, _ := s.do(req{method: "POST", path: "/mcp/agents/boss", body: initBody, token: anyone, header: map[string]string{"Accept": "application/json, text/event-stream"}})
	if code != http.StatusForbidden || !strings.Contains(body, "--agent boss") {
		t.Errorf("an unbound invoke token on /mcp/agents/boss: %d %s, want 403", code, body)
	}
	code, body, _ = s.do(req{method: "POST", path: "/v1/invoke", body: `{"uri":"ossa:everruns/add@1.0","input":{"a":1,"b":1}}`, token: anyone, header: map[string]string{"X-Caphub-Agent": "boss"}})
	if code != http.StatusForbidden {
		t.Errorf("an unbound invoke token claiming X-Caphub-Agent: boss: %d %s, want 403", code, body)
	}

	// The bound token acts as boss, and the audit names both.
	sid := s.mcpSession("/mcp/agents/boss", bossKey)
	if code, out := s.mcpCall("/mcp/agents/boss", bossKey, sid, addCall); code != http.StatusOK || !strings.Contains(out, `5`) {
		t.Fatalf("tools/call as boss: %d %s", code, out)
	}
	out, errOut, rc := s.caphub("audit", "list", "--kind", "invocation", "--format", "json")
	if rc != 0 || !strings.Contains(out, `"caller": "boss"`) && !strings.Contains(out, `"caller":"boss"`) || !strings.Contains(out, "token:boss-key") {
		t.Errorf("the audit does not name the agent and the token: exit %d\n%s%s", rc, out, errOut)
	}
	// A change made with a token bound to an agent is the token's.
	def := `{"capability":{"uri":"ossa:sec/note@1.0","name":"note","domain":"sec","version":"1.0.0","description":"x","stability":"stable","input":{"type":"object"},"output":{"type":"object"},"bindings":{"http":{"method":"GET","url":"http://127.0.0.1:1/x"}}}}`
	if code, body, _ := s.do(req{method: "POST", path: "/registry/capabilities", body: def, token: bossPub}); code != http.StatusCreated {
		t.Fatalf("register with boss-pub: %d %s", code, body)
	}
	out, errOut, _ = s.caphub("audit", "list", "--kind", "registered", "--capability", "ossa:sec/note", "--format", "json")
	if !strings.Contains(out, "token:boss-pub") {
		t.Errorf("the registration is not recorded as the token's:\n%s%s", out, errOut)
	}
}

// Break 8: a revoked token's /mcp/sse stream stayed open, and another
// token could post into that session.
func TestMCPSessionsBelongToTheirToken(t *testing.T) {
	s := newSite(t)
	alice := s.token("alice", "--scope", "invoke")
	mallory := s.token("mallory", "--scope", "invoke")
	s.serve()

	// Streamable HTTP: a session is used by its own token only.
	sid := s.mcpSession("/mcp", alice)
	if code, out := s.mcpCall("/mcp", mallory, sid, addCall); code != http.StatusForbidden {
		t.Errorf("another token's tools/call in alice's session: %d %s, want 403", code, out)
	}
	if code, out := s.mcpCall("/mcp", alice, sid, addCall); code != http.StatusOK {
		t.Errorf("alice in her session: %d %s", code, out)
	}

	// SSE: open a stream as alice, read the endpoint it announces.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/mcp/sse", nil)
	hr.Header.Set("Authorization", "Bearer "+alice)
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	var endpoint string
	for endpoint == "" && lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "data: "); ok && strings.Contains(v, "sessionid=") {
			endpoint = v
		}
	}
	if endpoint == "" {
		t.Fatalf("no endpoint event on /mcp/sse (status %d)", resp.StatusCode)
	}
	if code, body, _ := s.do(req{method: "POST", path: endpoint, body: initBody, token: mallory}); code != http.StatusForbidden {
		t.Errorf("mallory posting into alice's SSE session: %d %s, want 403", code, body)
	}

	// Revoking alice ends her stream.
	list, _, _ := s.caphub("token", "list", "--format", "json")
	id := tokenID(t, list, "alice")
	if _, errOut, rc := s.caphub("token", "revoke", id); rc != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	ended := make(chan error, 1)
	go func() {
		for lines.Scan() {
		}
		ended <- lines.Err()
	}()
	select {
	case err := <-ended:
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the stream outlived the test's deadline")
		}
	case <-ctx.Done():
		t.Errorf("alice's SSE stream stayed open after her token was revoked")
	}
}

// tokenID finds a token's id in `caphub token list --format json`.
func tokenID(t *testing.T, list, name string) string {
	t.Helper()
	i := strings.Index(list, `"name": "`+name+`"`)
	if i < 0 {
		t.Fatalf("token %s not listed:\n%s", name, list)
	}
	j := strings.LastIndex(list[:i], `"id": "`)
	rest := list[j+len(`"id": "`):]
	return rest[:strings.IndexByte(rest, '"')]
}
