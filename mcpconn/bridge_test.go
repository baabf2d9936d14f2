package mcpconn

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBridgeKeepsTheHandshakeInOrder sends what a client that does not
// wait writes at once: initialize, notifications/initialized and
// tools/list in one go. The bridge must post them in that order, the later
// ones with the session initialize opened, so tools/list is answered with
// the tools, never refused as sent during initialization or without a
// session. Run several times: the race needs only one loss to show.
func TestBridgeKeepsTheHandshakeInOrder(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "ordered", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echoes"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"eager","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}` + "\n"
	for i := range 8 {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err := Bridge(ctx, strings.NewReader(input), &out, srv.URL, BridgeOptions{})
		cancel()
		got := out.String()
		if err != nil || strings.Count(got, "\n") != 3 || !strings.Contains(got, `"id":2,"result"`) || !strings.Contains(got, `"name":"echo"`) || !strings.Contains(got, `"text":"hi"`) || strings.Contains(got, `"error"`) {
			t.Fatalf("run %d: %v\n%s\nwant the answers to initialize, tools/list (echo) and the call, no error", i+1, err, got)
		}
	}
}
