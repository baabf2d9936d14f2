package mcpgw_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionLimit: /mcp refuses a session beyond MaxSessions with 503 and
// an error naming the limit and its flag; the open sessions go on, and one
// ended makes room.
func TestSessionLimit(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxSessions: 2})
	a := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	b := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	status, body := testpeers.PostInitialize(t, f.mcpURL)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "at most 2 MCP sessions") || !strings.Contains(body, "--mcp-max-sessions") {
		t.Errorf("a third session: %d %s, want 503 naming the limit and its flag", status, body)
	}
	ctx := context.Background()
	for _, cs := range []*mcp.ClientSession{a, b} {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Errorf("an open session: %v", err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { s, _ := testpeers.PostInitialize(t, f.mcpURL); return s == http.StatusOK }, func() {
		t.Error("no room for a session after one ended")
	})
}

// TestIdleSessionsExpire: a session idle for IdleTimeout is closed (its
// next request is answered 404, session not found), so abandoned sessions
// do not pile up.
func TestIdleSessionsExpire(t *testing.T) {
	f := newFixture(t, mcpgw.Options{IdleTimeout: 200 * time.Millisecond, MaxSessions: 1})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, MaxRetries: -1}, "", nil)
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// At the limit of one session, a new one is refused until the idle one
	// expires.
	eventually(t, func() bool { s, _ := testpeers.PostInitialize(t, f.mcpURL); return s == http.StatusOK }, func() {
		t.Error("the idle session was never closed")
	})
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("the expired session still answers")
	}
}
