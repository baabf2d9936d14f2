package mcpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func dialBoth(t *testing.T, url string) (*HTTPSession, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	hs, err := DialHTTP(ctx, &Server{Name: "up", URL: url}, &HTTPOptions{ClientVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.Close() })
	cs, err := Connect(ctx, &Server{Name: "up", URL: url}, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return hs, cs
}

// sameResult calls tool with args through the HTTPSession and through the
// Go SDK's client and fails unless both give the same result.
func sameResult(t *testing.T, hs *HTTPSession, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx := context.Background()
	if args == nil {
		args = map[string]any{} // as the mcp binding sends it: the SDK sends a nil map as null
	}
	got, err := hs.CallTool(ctx, tool, args, "", nil)
	if err != nil {
		t.Fatalf("%s through the HTTPSession: %v", tool, err)
	}
	want, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s through the SDK: %v", tool, err)
	}
	if !reflect.DeepEqual(untimed(got.Content), untimed(want.Content)) || !reflect.DeepEqual(got.StructuredContent, want.StructuredContent) || got.IsError != want.IsError {
		t.Errorf("%s: the HTTPSession read\n%s\nthe SDK\n%s", tool, dump(got), dump(want))
	}
	return got
}

// createdAt is the clock time npm server-everything writes into a dynamic
// resource ("… created at 12:00:01 AM"): two calls a second apart differ
// there and nowhere else.
var createdAt = regexp.MustCompile(`created at [^\n]*`)

// untimed is content with the creation times of embedded text resources
// masked (copies; content itself is left as it is).
func untimed(content []mcp.Content) []mcp.Content {
	out := make([]mcp.Content, len(content))
	for i, c := range content {
		out[i] = c
		if e, ok := c.(*mcp.EmbeddedResource); ok && e.Resource != nil && e.Resource.Text != "" {
			r := *e.Resource
			r.Text = createdAt.ReplaceAllString(r.Text, "created at (time)")
			e2 := *e
			e2.Resource = &r
			out[i] = &e2
		}
	}
	return out
}

func dump(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		fmt.Fprintf(&b, "  %T %+v\n", c, c)
	}
	fmt.Fprintf(&b, "  structured %#v, isError %v", r.StructuredContent, r.IsError)
	return b.String()
}

// progressOf calls tool with a progress token and returns the progress
// values reported, in order, by the time CallTool returned.
func progressOf(t *testing.T, hs *HTTPSession, tool string, args map[string]any) []float64 {
	t.Helper()
	var got []float64
	_, err := hs.CallTool(context.Background(), tool, args, "tok-1", func(n Notification) {
		if n.Method != "notifications/progress" {
			return
		}
		p, err := DecodeProgress(n.Params)
		if err != nil || p.ProgressToken != "tok-1" {
			t.Errorf("progress %s: %v", n.Params, err)
			return
		}
		got = append(got, p.Progress)
	})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return got
}

// forget ends the session on the server (a DELETE with its id, as another
// client or an idle expiry would), so that its next request is answered
// as for an unknown session.
func forget(t *testing.T, url, sid string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE the session: %s", resp.Status)
	}
}

// The Go SDK's everything-server over stateful streamable HTTP: results
// read as the SDK reads them (text, image, audio, embedded resources, a
// tool error), progress in order before the answer, a session the server
// ended initialised anew.
func TestHTTPSessionGoEverything(t *testing.T) {
	url := testpeers.GoEverythingHTTP(t)
	hs, cs := dialBoth(t, url)
	if hs.ProtocolVersion() != HTTPProtocolVersion || hs.ServerInfo().Name != "mcp-conformance-test-server" {
		t.Errorf("initialised %q with %+v", hs.ProtocolVersion(), hs.ServerInfo())
	}
	for _, tool := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource", "test_multiple_content_types", "test_error_handling"} {
		res := sameResult(t, hs, cs, tool, nil)
		if len(res.Content) == 0 {
			t.Errorf("%s: no content", tool)
		}
		if tool == "test_error_handling" && !res.IsError {
			t.Errorf("%s: isError not set", tool)
		}
	}
	if got := progressOf(t, hs, "test_tool_with_progress", nil); !reflect.DeepEqual(got, []float64{0, 50, 100}) {
		t.Errorf("progress %v, want 0, 50, 100", got)
	}

	_, err := hs.CallTool(context.Background(), "no_such_tool", nil, "", nil)
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		t.Errorf("an unknown tool: %v, want a JSON-RPC error", err)
	}

	old := hs.SessionID()
	forget(t, url, old)
	sameResult(t, hs, cs, "test_simple_text", nil)
	if hs.SessionID() == old || hs.SessionID() == "" {
		t.Errorf("session %q after the server ended %q", hs.SessionID(), old)
	}
}

// npm server-everything over streamable HTTP (the TypeScript SDK's
// server): results read as the SDK reads them (structured content, image,
// resource links, annotations), progress in order, a session the server
// ended (it answers 400 "No valid session ID") initialised anew.
func TestHTTPSessionNPMEverything(t *testing.T) {
	url := testpeers.EverythingHTTP(t, "streamableHttp")
	hs, cs := dialBoth(t, url)
	sameResult(t, hs, cs, "echo", map[string]any{"message": "hello"})
	res := sameResult(t, hs, cs, "get-structured-content", map[string]any{"location": "Chicago"})
	if m, ok := res.StructuredContent.(map[string]any); !ok || m["temperature"] != float64(36) {
		t.Errorf("structured content %#v", res.StructuredContent)
	}
	sameResult(t, hs, cs, "get-tiny-image", nil)
	sameResult(t, hs, cs, "get-resource-links", map[string]any{"count": 3})
	sameResult(t, hs, cs, "get-annotated-message", map[string]any{"messageType": "error", "includeImage": true})
	sameResult(t, hs, cs, "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2})

	got := progressOf(t, hs, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3})
	if !reflect.DeepEqual(got, []float64{1, 2, 3}) {
		t.Errorf("progress %v, want 1, 2, 3", got)
	}

	old := hs.SessionID()
	forget(t, url, old)
	sameResult(t, hs, cs, "echo", map[string]any{"message": "again"})
	if hs.SessionID() == old || hs.SessionID() == "" {
		t.Errorf("session %q after the server ended %q", hs.SessionID(), old)
	}
}

// goServer serves a Go SDK server over streamable HTTP in this process:
// "stats" returns structured content, "steps" reports three steps of
// progress, "block" waits until the call is cancelled (sending its
// request id on blocked, then its context's error on cancelled), and
// "cut" (with an event store) ends the answer's stream before answering.
type goServer struct {
	url       string
	blocked   chan any
	cancelled chan error
	handler   *mcp.StreamableHTTPHandler
}

func newGoServer(t *testing.T, opts *mcp.StreamableHTTPOptions) *goServer {
	t.Helper()
	g := &goServer{blocked: make(chan any, 1), cancelled: make(chan error, 1)}
	s := mcp.NewServer(&mcp.Implementation{Name: "go-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "stats", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"findings": 3, "args": r.Params.Arguments}, Content: []mcp.Content{&mcp.TextContent{Text: `{"findings":3}`}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "steps", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.blocked <- struct{}{}
		select {
		case <-ctx.Done():
			g.cancelled <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			g.cancelled <- nil
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not cancelled"}}}, nil
		}
	})
	s.AddTool(&mcp.Tool{Name: "cut", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: 1})
		r.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		time.Sleep(50 * time.Millisecond)
		_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: 2})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the cut"}}}, nil
	})
	g.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)
	hs := httptest.NewServer(g.handler)
	t.Cleanup(hs.Close)
	g.url = hs.URL
	return g
}

// A Go SDK server answering with application/json and with SSE streams:
// the same results; progress on SSE; a cancelled call reaches the server
// (its handler's context ends) and leaves the session usable; a stream the
// server ends early is resumed from its last event.
func TestHTTPSessionJSONAndSSE(t *testing.T) {
	for _, mode := range []string{"json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			opts := &mcp.StreamableHTTPOptions{JSONResponse: mode == "json"}
			if mode == "sse" {
				opts.EventStore = mcp.NewMemoryEventStore(nil)
			}
			g := newGoServer(t, opts)
			hs, cs := dialBoth(t, g.url)
			res := sameResult(t, hs, cs, "stats", map[string]any{"n": 1.5, "s": "x"})
			if m, _ := res.StructuredContent.(map[string]any); m["findings"] != float64(3) {
				t.Errorf("structured content %#v", res.StructuredContent)
			}
			if mode == "sse" {
				if got := progressOf(t, hs, "steps", nil); !reflect.DeepEqual(got, []float64{1, 2, 3}) {
					t.Errorf("progress %v, want 1, 2, 3", got)
				}
				var got []float64
				res, err := hs.CallTool(context.Background(), "cut", nil, "cut-1", func(n Notification) {
					if p, err := DecodeProgress(n.Params); err == nil {
						got = append(got, p.Progress)
					}
				})
				if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "after the cut" || !reflect.DeepEqual(got, []float64{1, 2}) {
					t.Errorf("a stream cut and resumed: %v %v, progress %v", res, err, got)
				}
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := hs.CallTool(ctx, "block", nil, "", nil)
				done <- err
			}()
			<-g.blocked
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled call returned %v", err)
			}
			select {
			case err := <-g.cancelled:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the server's handler ended with %v, want its context cancelled", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("the cancellation did not reach the server")
			}
			sameResult(t, hs, cs, "stats", nil)
		})
	}
}

// A session the server expired (404) is initialised again, once for
// concurrent calls; Close ends it on the server (DELETE); the saved
// headers are sent and a host the permits do not list is refused.
func TestHTTPSessionExpiryCloseHeaders(t *testing.T) {
	g := newGoServer(t, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var mu sync.Mutex
	var inits, deletes int
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		if r.Method == http.MethodDelete {
			deletes++
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			inits++
		}
		mu.Unlock()
		g.handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("CAPHUB_TEST_MCP_TOKEN", "s3cret")
	saved := &Server{Name: "up", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${CAPHUB_TEST_MCP_TOKEN}"}}
	hs, err := DialHTTP(context.Background(), saved, nil)
	if err != nil {
		t.Fatal(err)
	}
	forget(t, srv.URL, hs.SessionID())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := hs.CallTool(context.Background(), "stats", nil, "", nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call after the session expired: %v", err)
		}
	}
	if err := hs.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.CallTool(context.Background(), "stats", nil, "", nil); err == nil {
		t.Error("a call on a closed session succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if inits != 2 || deletes != 2 { // one DELETE is forget's
		t.Errorf("%d initialisations and %d DELETEs, want 2 and 2", inits, deletes)
	}
	for _, a := range auth {
		if a != "Bearer s3cret" && a != "" {
			t.Errorf("Authorization %q", a)
		}
	}
	if auth[0] != "Bearer s3cret" {
		t.Errorf("the saved header was not sent: %q", auth[0])
	}

	saved.Permits = &permit.Permits{Hosts: []string{"mcp.example.com"}}
	if _, err := DialHTTP(context.Background(), saved, nil); err == nil || !strings.Contains(err.Error(), permit.HostFlag) {
		t.Errorf("a host outside the allow-list: %v", err)
	}
}

// readAnswer reads JSON and SSE answers: events split over CRLF, LF and CR
// line ends, multi-line data, other event types and comments skipped, the
// last event id and retry kept, and oversized messages refused.
func TestReadAnswer(t *testing.T) {
	read := func(ct, body string, limit int) ([]string, string, time.Duration, error) {
		var got []string
		id, retry, err := readAnswer(strings.NewReader(body), ct, limit, func(m *message) (bool, error) {
			got = append(got, m.Method+string(m.ID)+string(m.Result))
			return m.Method == "" && len(m.ID) > 0, nil
		})
		return got, id, retry, err
	}
	got, _, _, err := read("application/json; charset=utf-8", `{"jsonrpc":"2.0","id":3,"result":{}}`, 100)
	if err != nil || !reflect.DeepEqual(got, []string{"3{}"}) {
		t.Errorf("json: %v %v", got, err)
	}
	stream := ": comment\r\nid: e1\r\nretry: 250\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\r\n" +
		"event: other\ndata: {\"method\":\"skipped\"}\n\n" +
		"id: e2\rdata: {\"jsonrpc\":\"2.0\",\rdata: \"method\":\"b\"}\r\r" +
		"data: {\"id\":7,\"result\":1}\n\ndata: {\"method\":\"after\"}\n\n"
	got, id, retry, err := read("text/event-stream", stream, 100)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b", "71"}) || id != "e2" || retry != 250*time.Millisecond {
		t.Errorf("sse: %v %q %v %v", got, id, retry, err)
	}
	if _, _, _, err := read("text/event-stream", "data: {\"method\":\""+strings.Repeat("x", 200)+"\"}\n\n", 100); err == nil {
		t.Error("an event over the limit was read")
	}
	if _, _, _, err := read("application/json", `{"method":"`+strings.Repeat("x", 200)+`"}`, 100); err == nil {
		t.Error("a JSON answer over the limit was read")
	}
	if _, _, _, err := read("text/html", "<html>", 100); err == nil || !strings.Contains(err.Error(), "text/html") {
		t.Errorf("an HTML answer: %v", err)
	}
	if _, _, _, err := read("application/json", strings.Repeat("[", 2000)+strings.Repeat("]", 2000), 1<<20); err == nil {
		t.Error("JSON nested 2000 deep was read")
	}
}

// FuzzReadAnswer: whatever a server sends, reading its answer ends with
// messages or an error, never a panic, and no message is longer than the
// limit.
func FuzzReadAnswer(f *testing.F) {
	f.Add(true, []byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n"))
	f.Add(true, []byte("data: {\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\r\n\r\nretry: 5\r\n"))
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`))
	f.Add(false, []byte(`{"id":1,"result":{"content":[{"type":"image","data":"AAEC","mimeType":"image/png"}],"structuredContent":{"a":[1,2]},"isError":true}}`))
	f.Fuzz(func(t *testing.T, sse bool, body []byte) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		const limit = 512
		_, _, _ = readAnswer(bytes.NewReader(body), ct, limit, func(m *message) (bool, error) {
			if len(m.Params) > limit || len(m.Result) > limit {
				t.Fatalf("a message over the limit: %d %d", len(m.Params), len(m.Result))
			}
			if m.Result != nil {
				_, _ = DecodeToolResult(m.Result)
			}
			if m.Params != nil {
				_, _ = DecodeProgress(m.Params)
			}
			return false, nil
		})
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	testpeers.RemoveBuilt()
	os.Exit(code)
}
