package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzServeFast: whatever the body of a POST on a session (a tools/call,
// a cancellation, a ping, a tools/list), the fast path answers it or
// leaves it to the SDK with the body as it came, and never panics; an id
// it echoes is keyed as a cancellation naming it is.
func FuzzServeFast(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"id":1.5}`, `{"id":-0}`, `{`, ``, ` {} `,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"Y2FwaHViLXRvb2xzAHQ"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":null}`,
	} {
		f.Add([]byte(s))
	}
	g := &Gateway{pager: newListPager(MinMaxListBytes, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	g.servedNow.Store(&map[string]*toolEntry{})
	g.listing.Store(&toolListing{tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}, pages: map[string][]byte{}, bounds: map[string]bool{}})
	f.Fuzz(func(t *testing.T, body []byte) {
		s := &fastSession{id: "s", ctx: context.Background(), version: "2025-11-25", inflight: map[string]context.CancelFunc{}}
		s.inflight["n:7"] = func() {}
		s.inflight["s:x"] = func() {}
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		if !g.serveFast(w, r, s) {
			got, err := io.ReadAll(r.Body)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("left to the SDK with the body %q (%v), want %q", got, err, body)
			}
		}
		var m fastMessage
		if json.Unmarshal(body, &m) == nil {
			if key, ok := idKey(m.ID); ok {
				if ck, ok := cancelKey(m.ID); !ok || ck != key {
					t.Fatalf("id %s is keyed %q, a cancellation naming it %q", m.ID, key, ck)
				}
			}
		}
	})
}

// A request's claimed Content-Length sizes the fast path's buffer only up to
// its budget: a client claiming a terabyte makes no terabyte allocation, and
// its body is read as it came.
func TestReadFastBodyDoesNotTrustContentLength(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.ContentLength = 1 << 40
	got, ok := readFastBody(r)
	if !ok || string(got) != body {
		t.Fatalf("readFastBody = %q, %v; want the body", got, ok)
	}
	if cap(got) > maxFastBody+1 {
		t.Fatalf("buffer of %d bytes for a %d-byte body", cap(got), len(body))
	}
}
