package mcpgw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A discovered MCP tool called through /mcp: its result comes as the
// upstream sent it, its progress reaches the client under the client's
// token, and the client's cancellation reaches the upstream.

// waitUpstream is a Go SDK MCP server over streamable HTTP whose tool
// "wait" reports one progress notification, when the call carries a
// token, then waits until it is cancelled, which it reports; "hello"
// answers at once. It counts the sessions initialised.
type waitUpstream struct {
	server    *mcpconn.Server
	started   chan struct{}
	cancelled chan struct{}
	sessions  atomic.Int64
}

func newWaitUpstream(t testing.TB, name string) *waitUpstream {
	t.Helper()
	u := &waitUpstream{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8)}
	s := mcp.NewServer(&mcp.Implementation{Name: "wait", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { u.sessions.Add(1) },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "waits until cancelled"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		u.started <- struct{}{}
		if token := req.Params.GetProgressToken(); token != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "waiting"}); err != nil {
				return nil, nil, err
			}
		}
		select {
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(time.Minute):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not cancelled"}}}, nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hello", Description: "says hello"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	u.server = &mcpconn.Server{Name: name, Transport: mcpconn.TransportHTTP, URL: srv.URL}
	return u
}

// await fails unless ch receives within a minute (a bound, not a timing).
func await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("the upstream never reported %s", what)
	}
}

// same reports whether a and b encode to the same JSON value.
func same(t testing.TB, a, b any) bool {
	t.Helper()
	var va, vb any
	for _, x := range []struct {
		v   any
		out *any
	}{{a, &va}, {b, &vb}} {
		data, err := json.Marshal(x.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, x.out); err != nil {
			t.Fatal(err)
		}
	}
	return reflect.DeepEqual(va, vb)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// npm server-everything over stdio, discovered, called through /mcp by the
// Go SDK client: each result has the content blocks and structured content
// of the same call made directly.
func TestDiscoveredResultsAsTheyCame(t *testing.T) {
	ev := serverEverything(t)
	d := newDiscovered(t, ev)
	ctx := context.Background()
	direct, err := mcpconn.Connect(ctx, ev, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: d.mcpURL}, "2025-11-25", nil)

	for _, c := range []struct {
		tool string
		args map[string]any
		// volatile: the upstream stamps the content with the time, so
		// only the blocks' types and resource URIs are compared.
		volatile bool
	}{
		{tool: "get-tiny-image", args: map[string]any{}},
		{tool: "get-annotated-message", args: map[string]any{"messageType": "error", "includeImage": true}},
		{tool: "get-resource-links", args: map[string]any{"count": 4}},
		{tool: "get-resource-reference", args: map[string]any{"resourceType": "Text", "resourceId": 2}, volatile: true},
		{tool: "get-structured-content", args: map[string]any{"location": "Chicago"}},
		{tool: "echo", args: map[string]any{"message": "hello"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			want, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil || want.IsError {
				t.Fatalf("direct %s: %v %s", c.tool, err, jsonText(want))
			}
			got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: d.tool(t, "everything", c.tool), Arguments: c.args})
			if err != nil || got.IsError {
				t.Fatalf("%s through /mcp: %v %s", c.tool, err, jsonText(got))
			}
			if got.Meta[mcpgw.MetaBinding] != "mcp" {
				t.Errorf("%s: _meta %v, want the mcp binding", c.tool, got.Meta)
			}
			if !same(t, got.StructuredContent, want.StructuredContent) {
				t.Errorf("%s: structuredContent %s, want %s", c.tool, jsonText(got.StructuredContent), jsonText(want.StructuredContent))
			}
			if c.volatile {
				if len(got.Content) != len(want.Content) {
					t.Fatalf("%s: content %s, want %s", c.tool, jsonText(got.Content), jsonText(want.Content))
				}
				for i := range got.Content {
					g, w := got.Content[i], want.Content[i]
					if reflect.TypeOf(g) != reflect.TypeOf(w) {
						t.Errorf("%s: block %d is a %T, want a %T", c.tool, i, g, w)
					}
					if ge, ok := g.(*mcp.EmbeddedResource); ok && ge.Resource.URI != w.(*mcp.EmbeddedResource).Resource.URI {
						t.Errorf("%s: embedded resource %s, want %s", c.tool, ge.Resource.URI, w.(*mcp.EmbeddedResource).Resource.URI)
					}
				}
				return
			}
			if !same(t, got.Content, want.Content) {
				t.Errorf("%s: content\n%.1000s\nwant\n%.1000s", c.tool, jsonText(got.Content), jsonText(want.Content))
			}
		})
	}

	// The image in particular: an image block, not base64 in JSON text.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: d.tool(t, "everything", "get-tiny-image"), Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if i, ok := c.(*mcp.ImageContent); ok {
			img = i
		}
	}
	if img == nil || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
		t.Errorf("get-tiny-image through /mcp has no PNG image block: %.300s", jsonText(res.Content))
	}
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	got  []*mcp.ProgressNotificationParams
	each func(*mcp.ProgressNotificationParams)
}

func (p *progressLog) handler(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.got = append(p.got, r.Params)
	each := p.each
	p.mu.Unlock()
	if each != nil {
		each(r.Params)
	}
}

func (p *progressLog) list() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.got...)
}

// server-everything's long-running operation through /mcp: its three
// progress notifications reach the Go SDK client on the call's stream,
// under the client's own token.
func TestDiscoveredProgress(t *testing.T) {
	d := newDiscovered(t, serverEverything(t))
	progress := &progressLog{}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: d.mcpURL, DisableStandaloneSSE: true}, "2025-11-25", &mcp.ClientOptions{ProgressNotificationHandler: progress.handler})
	params := &mcp.CallToolParams{Name: d.tool(t, "everything", "trigger-long-running-operation"), Arguments: map[string]any{"duration": 0.3, "steps": 3}}
	params.SetProgressToken("client-token-7")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || !strings.Contains(text(res), "Long running operation completed") {
		t.Fatalf("trigger-long-running-operation: %v %s", err, jsonText(res))
	}
	eventually(t, func() bool { return len(progress.list()) >= 3 }, func() {
		t.Fatalf("the client received %d progress notifications, want 3: %s", len(progress.list()), jsonText(progress.list()))
	})
	for i, p := range progress.list() {
		if p.ProgressToken != "client-token-7" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress notification %d: %s, want progress %d of 3 with the client's token", i, jsonText(p), i+1)
		}
	}
	// A call without a token gets none.
	n := len(progress.list())
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: params.Name, Arguments: map[string]any{"duration": 0.1, "steps": 2}}); err != nil {
		t.Fatal(err)
	}
	if got := len(progress.list()); got != n {
		t.Errorf("a call without a progress token got %d progress notifications", got-n)
	}
	// A request is counted once its handler returned, after its answer.
	eventually(t, func() bool { return mcpgw.FastServed(d.gw) == 2 }, func() {
		t.Errorf("the fast path answered %d calls, want 2", mcpgw.FastServed(d.gw))
	})
}

// A client that cancels its call through /mcp (at the upstream's first
// progress notification) cancels it upstream, and the pooled upstream
// session serves the next call.
func TestDiscoveredCancellation(t *testing.T) {
	u := newWaitUpstream(t, "waiter")
	d := newDiscovered(t, u.server)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &progressLog{each: func(*mcp.ProgressNotificationParams) { cancel() }}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: d.mcpURL}, "2025-11-25", &mcp.ClientOptions{ProgressNotificationHandler: progress.handler})

	hello := d.tool(t, "waiter", "hello")
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: hello}); err != nil || text(res) != "hello" {
		t.Fatalf("hello: %v %s", err, jsonText(res))
	}
	sessions := u.sessions.Load()

	params := &mcp.CallToolParams{Name: d.tool(t, "waiter", "wait")}
	params.SetProgressToken(42)
	_, err := cs.CallTool(ctx, params)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	await(t, u.started, "the call")
	await(t, u.cancelled, "the cancellation")
	if p := progress.list(); len(p) != 1 || !same(t, p[0].ProgressToken, 42) {
		t.Errorf("progress before the cancellation: %s, want one with the client's token 42", jsonText(p))
	}

	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: hello}); err != nil || text(res) != "hello" {
		t.Fatalf("hello after the cancellation: %v %s", err, jsonText(res))
	}
	if n := u.sessions.Load(); n != sessions {
		t.Errorf("the upstream initialised %d sessions after the cancellation: the pooled session was dropped", n-sessions)
	}
	// The cancelled call's request ends once the upstream answered it.
	eventually(t, func() bool { return mcpgw.FastServed(d.gw) == 4 }, func() {
		t.Errorf("the fast path answered %d requests, want 4 (three calls and the cancellation)", mcpgw.FastServed(d.gw))
	})
}

// The official TypeScript SDK client through /mcp, on server-everything
// (stdio) and a Go SDK upstream (streamable HTTP): the image arrives as an
// image block with the upstream's data and type, structured content passes
// the SDK's check against the output schema, progress reaches the call
// that asked for it, and its cancellation reaches the upstream.
func TestTypeScriptClientDiscovered(t *testing.T) {
	testpeers.Node22(t)
	ev := serverEverything(t)
	u := newWaitUpstream(t, "waiter")
	d := newDiscovered(t, ev, u.server)
	direct, err := mcpconn.Connect(context.Background(), ev, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	want, err := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-tiny-image", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var wantImg *mcp.ImageContent
	for _, c := range want.Content {
		if i, ok := c.(*mcp.ImageContent); ok {
			wantImg = i
		}
	}
	if wantImg == nil {
		t.Fatalf("server-everything's get-tiny-image has no image: %s", jsonText(want.Content))
	}

	run := runTSClient(t, d.mcpURL,
		map[string]any{"name": d.tool(t, "everything", "get-tiny-image"), "arguments": map[string]any{}},
		map[string]any{"name": d.tool(t, "everything", "trigger-long-running-operation"), "arguments": map[string]any{"duration": 0.3, "steps": 3}, "progress": true},
		map[string]any{"name": d.tool(t, "waiter", "wait"), "arguments": map[string]any{}, "cancelOnProgress": true},
		map[string]any{"name": d.tool(t, "everything", "get-structured-content"), "arguments": map[string]any{"location": "Los Angeles"}},
	)
	if len(run.Calls) != 4 {
		t.Fatalf("the TypeScript client made %d calls", len(run.Calls))
	}

	image := run.Calls[0]
	found := false
	for _, c := range image.Content {
		if c.Type == "image" {
			found = true
			if c.MIMEType != wantImg.MIMEType || c.Data != base64.StdEncoding.EncodeToString(wantImg.Data) {
				t.Errorf("the image block: %s, %d base64 bytes; want %s, %d", c.MIMEType, len(c.Data), wantImg.MIMEType, base64.StdEncoding.EncodedLen(len(wantImg.Data)))
			}
		}
	}
	if image.IsError || !found || len(image.Content) != len(want.Content) {
		t.Errorf("get-tiny-image: %+v, want the upstream's %d blocks with an image", image, len(want.Content))
	}

	long := run.Calls[1]
	if long.IsError || len(long.Content) == 0 || !strings.Contains(long.Content[0].Text, "Long running operation completed") {
		t.Errorf("trigger-long-running-operation: %+v", long)
	}
	if len(long.Progress) != 3 {
		t.Errorf("the TypeScript client received %d progress notifications for its call, want 3: %+v", len(long.Progress), long.Progress)
	}
	for i, p := range long.Progress {
		if p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress %d: %+v", i, p)
		}
	}

	wait := run.Calls[2]
	if !wait.Cancelled || len(wait.Progress) != 1 || wait.Progress[0].Message != "waiting" {
		t.Errorf("wait: %+v, want it cancelled after one progress notification", wait)
	}
	await(t, u.started, "the call")
	await(t, u.cancelled, "the TypeScript client's cancellation")

	weather := run.Calls[3]
	if weather.IsError || !same(t, weather.StructuredContent, json.RawMessage(`{"temperature":73,"conditions":"Sunny / Clear","humidity":48}`)) {
		t.Errorf("get-structured-content: %+v", weather)
	}
	// The four calls and the cancellation took the gateway's own path.
	eventually(t, func() bool { return mcpgw.FastServed(d.gw) >= 5 }, func() {
		t.Errorf("the fast path answered %d of the TypeScript client's requests, want the 4 calls and the cancellation", mcpgw.FastServed(d.gw))
	})
}
