package httprelay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
)

// TestHeadersAllocs checks what building the upstream request of a call
// and the headers of its answer allocate: the header values that are the
// same on every call (the session ids, the User-Agent) are made once per
// session or relay, not per call; what is left is the request itself.
func TestHeadersAllocs(t *testing.T) {
	rl := New(&relay.Env{Version: "test"})
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	s := &Session{rl: rl, url: u, headers: http.Header{"X-Key": {"k"}}}
	s.setID("down")
	s.setUpID("up")
	down := httptest.NewRequest(http.MethodPost, "/mcp/servers/x", nil)
	down.Header.Set("Content-Type", "application/json")
	down.Header.Set("Accept", "application/json, text/event-stream")
	down.Header.Set(headerProtocolVersion, "2025-06-18")
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	ctx := context.Background()
	req := s.request(ctx, http.MethodPost, down, body)
	if req.Header.Get("User-Agent") != "caphub/test" || req.Header.Get(headerSessionID) != "up" || req.Header.Get("X-Key") != "k" || req.Header.Get(headerProtocolVersion) != "2025-06-18" {
		t.Errorf("upstream request headers = %v", req.Header)
	}
	if n := testing.AllocsPerRun(100, func() { s.request(ctx, http.MethodPost, down, body) }); n > 6 {
		t.Errorf("building an upstream request allocates %v times, want at most 6 (the request, its header map, body and context)", n)
	}
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}, headerSessionID: {"up"}}}
	w := httptest.NewRecorder()
	s.copyHeaders(w, resp)
	if w.Header().Get(headerSessionID) != "down" || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("relayed headers = %v", w.Header())
	}
	if n := testing.AllocsPerRun(100, func() { s.copyHeaders(w, resp) }); n > 0 {
		t.Errorf("copying the response headers allocates %v times, want none", n)
	}
}
