package mcpbind

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func savedServers(t *testing.T, servers ...*mcpconn.Server) *discover.Servers {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := discover.NewServers(st)
	for _, srv := range servers {
		if err := s.SaveServer(context.Background(), srv); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func everything(t *testing.T) *mcpconn.Server {
	t.Helper()
	node := testpeers.Node(t)
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything")
	return &mcpconn.Server{Name: "everything", Command: node + " " + filepath.Join(pkg, "dist", "index.js"), Args: []string{"stdio"}}
}

func call(server, tool string, mapping map[string]string, input map[string]any) *invoke.Call {
	return &invoke.Call{URI: "mcp:" + server + "/" + tool + "@1.0", Input: input, Definition: &capability.Definition{
		Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: server, Tool: tool, Mapping: mapping}},
	}}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// server-everything over stdio: echo and get-sum through one pooled
// session; a killed server is restarted; Close kills the process group.
func TestEverythingPooledSupervisedKilled(t *testing.T) {
	b := New(savedServers(t, everything(t)), Options{ClientVersion: "test", MinBackoff: 50 * time.Millisecond})
	ctx := context.Background()

	out, err := b.Invoke(ctx, call("everything", "echo", map[string]string{"text": "message"}, map[string]any{"text": "hello; $(id)"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Output.(map[string]any)["text"]; got != "Echo: hello; $(id)" {
		t.Errorf("echo output %v", out.Output)
	}
	out, err = b.Invoke(ctx, call("everything", "get-sum", nil, map[string]any{"a": 2, "b": 3}))
	if err != nil || !strings.Contains(out.Output.(map[string]any)["text"].(string), "5") {
		t.Fatalf("get-sum: %v %v", out, err)
	}
	st := b.Status()["everything"]
	if st["starts"] != 1 || st["up"] != true {
		t.Fatalf("not one pooled session: %v", st)
	}
	pid := st["pid"].(int)

	// A crash: the next calls fail retryably until the supervisor restarts it.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		_, lastErr = b.Invoke(ctx, call("everything", "echo", nil, map[string]any{"message": "again"}))
		if lastErr == nil {
			break
		}
		var e *invoke.Error
		if !errors.As(lastErr, &e) || !e.Retryable {
			t.Fatalf("a crashed upstream must give a retryable error, got %v", lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("not restarted: %v", lastErr)
	}
	st = b.Status()["everything"]
	if st["starts"].(int) < 2 || st["pid"] == pid {
		t.Errorf("after the crash: %v", st)
	}
	newPID := st["pid"].(int)

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && alive(newPID); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(newPID) {
		t.Errorf("server process %d survived Close", newPID)
	}
}

// isError results map through error_mapping; structured content is the
// output when there is some.
func TestToolErrorsAndStructuredOutput(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "find", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "NOT_FOUND: no such target"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "coded", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"code": "QUOTA"}, Content: []mcp.Content{&mcp.TextContent{Text: "over quota"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "stats", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"findings": 3}, Content: []mcp.Content{&mcp.TextContent{Text: `{"findings":3}`}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	b := New(savedServers(t, &mcpconn.Server{Name: "t", URL: hs.URL}), Options{})
	defer b.Close()
	ctx := context.Background()

	c := call("t", "find", nil, nil)
	c.Definition.Bindings.MCP.ErrorMapping = map[string]string{"NOT_FOUND": "TARGET_NOT_FOUND"}
	_, err := b.Invoke(ctx, c)
	var e *invoke.Error
	if !errors.As(err, &e) || e.Code != "NOT_FOUND" || !strings.Contains(e.Message, "no such target") {
		t.Errorf("find: %v", err)
	}
	_, err = b.Invoke(ctx, call("t", "coded", nil, nil))
	if !errors.As(err, &e) || e.Code != "QUOTA" {
		t.Errorf("coded: %v", err)
	}
	out, err := b.Invoke(ctx, call("t", "stats", nil, nil))
	if err != nil || out.Output.(map[string]any)["findings"] != int64(3) {
		t.Errorf("stats: %v %v", out, err)
	}
	_, err = b.Invoke(ctx, call("t", "missing-tool", nil, nil))
	if !errors.As(err, &e) || e.Retryable {
		t.Errorf("unknown tool: %v", err)
	}
	_, err = b.Invoke(ctx, call("nowhere", "x", nil, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "no MCP server is saved") {
		t.Errorf("unsaved server: %v", err)
	}
}

// server-everything over stdio and over streamable HTTP: a result's
// content blocks come as they came (the image an image), progress reaches
// the caller's function before Invoke returns, and a cancelled call leaves
// the pooled session up.
func TestEverythingContentProgressCancellation(t *testing.T) {
	t.Run("stdio", func(t *testing.T) { contentProgressCancellation(t, everything(t), "stdio") })
	t.Run("http", func(t *testing.T) {
		contentProgressCancellation(t, &mcpconn.Server{Name: "everything", URL: testpeers.EverythingHTTP(t, "streamableHttp")}, "http")
	})
	// An SSE-only server saved as streamable HTTP: the HTTP session fails
	// to start, and the SDK's client falls back to SSE.
	t.Run("sse-only", func(t *testing.T) {
		contentProgressCancellation(t, &mcpconn.Server{Name: "everything", URL: testpeers.EverythingHTTP(t, "sse")}, "sdk")
	})
}

// contentProgressCancellation runs the calls of
// TestEverythingContentProgressCancellation on srv, through a session of
// the client given (Status's "client").
func contentProgressCancellation(t *testing.T, srv *mcpconn.Server, client string) {
	b := New(savedServers(t, srv), Options{ClientVersion: "test"})
	defer b.Close()
	ctx := context.Background()

	out, err := b.Invoke(ctx, call("everything", "get-tiny-image", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := out.Tool.Content.([]mcp.Content)
	var img *mcp.ImageContent
	for _, c := range blocks {
		if i, ok := c.(*mcp.ImageContent); ok {
			img = i
		}
	}
	if len(blocks) != 3 || img == nil || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Data), "\x89PNG") {
		t.Errorf("get-tiny-image content %#v", out.Tool.Content)
	}
	if out.Tool.Structured != nil {
		t.Errorf("get-tiny-image structured content %v", out.Tool.Structured)
	}

	out, err = b.Invoke(ctx, call("everything", "get-structured-content", nil, map[string]any{"location": "Chicago"}))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := out.Output.(map[string]any); !ok || m["temperature"] != int64(36) || out.Tool.Structured == nil {
		t.Errorf("get-structured-content: output %v, structured %v", out.Output, out.Tool.Structured)
	}

	type report struct {
		progress, total float64
	}
	var reports []report
	pctx := invoke.WithProgress(ctx, func(progress, total float64, _ string) { reports = append(reports, report{progress, total}) })
	if _, err := b.Invoke(pctx, call("everything", "trigger-long-running-operation", nil, map[string]any{"duration": 0.3, "steps": 3})); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 3 || reports[2] != (report{3, 3}) {
		t.Errorf("progress reported by the time Invoke returned: %v, want 1, 2 and 3 of 3", reports)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancelled := invoke.WithProgress(cctx, func(float64, float64, string) { cancel() })
	_, err = b.Invoke(cancelled, call("everything", "trigger-long-running-operation", nil, map[string]any{"duration": 30, "steps": 30}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call returned %v", err)
	}
	if st := b.Status()["everything"]; st["up"] != true || st["starts"] != 1 || st["client"] != client {
		t.Errorf("after a cancelled call the pool is %v, want the one session up, of the %s client", st, client)
	}
	if _, err := b.Invoke(ctx, call("everything", "echo", nil, map[string]any{"message": "still here"})); err != nil {
		t.Errorf("a call after the cancelled one: %v", err)
	}
}

// contentJSON reads content blocks as normalize's JSON round trip does.
func TestContentJSON(t *testing.T) {
	for _, content := range [][]mcp.Content{
		nil,
		{},
		{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "<b> & \u2028"}},
		{&mcp.TextContent{Text: "bad \xff utf-8"}},
		{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": 1}}},
		{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 0.5}}},
		{&mcp.TextContent{Text: "a"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2}}},
	} {
		if got, want := contentJSON(content), normalize(content); !reflect.DeepEqual(got, want) {
			t.Errorf("contentJSON(%v) = %#v, want %#v", content, got, want)
		}
	}
}

// TestTraceContextUpstream: the trace context of a call (here one a
// client brought, tracing off) reaches the MCP server in the tools/call's
// params._meta, over streamable HTTP (pooled HTTPSession, also in the
// traceparent header) and over SSE (the Go SDK's client); a call without
// one sends none.
func TestTraceContextUpstream(t *testing.T) {
	type seen struct{ meta, header string }
	got := make(chan seen, 4)
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var sn seen
		sn.meta, _ = r.Params.Meta["traceparent"].(string)
		if r.Extra != nil {
			sn.header = r.Extra.Header.Get("traceparent")
		}
		got <- sn
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	streamable := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer streamable.Close()
	sse := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer sse.Close()
	b := New(savedServers(t,
		&mcpconn.Server{Name: "http", URL: streamable.URL, Transport: mcpconn.TransportHTTP},
		&mcpconn.Server{Name: "sse", URL: sse.URL, Transport: mcpconn.TransportSSE}), Options{})
	defer b.Close()

	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := tracing.Extract(context.Background(), http.Header{"Traceparent": {tp}})
	for _, c := range []struct {
		server     string
		ctx        context.Context
		meta, hdr  string
		headerSent bool
	}{
		{"http", traced, tp, tp, true},
		{"http", context.Background(), "", "", true},
		{"sse", traced, tp, "", false},
		{"sse", context.Background(), "", "", false},
	} {
		if _, err := b.Invoke(c.ctx, call(c.server, "look", nil, nil)); err != nil {
			t.Fatalf("%s: %v", c.server, err)
		}
		sn := <-got
		if sn.meta != c.meta || (c.headerSent && sn.header != c.hdr) {
			t.Errorf("%s: the server saw _meta traceparent %q and header %q; want %q and %q", c.server, sn.meta, sn.header, c.meta, c.hdr)
		}
	}
}
