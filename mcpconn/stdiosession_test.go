package mcpconn

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog collects the progress a StdioSession's Notify reports.
type progressLog struct {
	mu   sync.Mutex
	got  []float64
	each func()
}

func (p *progressLog) notify(n Notification) {
	if n.Method != "notifications/progress" {
		return
	}
	pp, err := DecodeProgress(n.Params)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.got = append(p.got, pp.Progress)
	each := p.each
	p.mu.Unlock()
	if each != nil {
		each()
	}
}

func (p *progressLog) list() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]float64(nil), p.got...)
}

// dialStdioBoth starts srv twice: through a StdioSession (its progress
// to log) and through the Go SDK's client.
func dialStdioBoth(t *testing.T, srv *Server, log *progressLog) (*StdioSession, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	ss, err := DialStdio(ctx, srv, &StdioOptions{ClientVersion: "test", Notify: log.notify})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := Connect(ctx, srv, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ss, cs
}

// sameStdioResult calls tool through both and fails unless they read the
// same result.
func sameStdioResult(t *testing.T, ss *StdioSession, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx := context.Background()
	if args == nil {
		args = map[string]any{}
	}
	got, err := ss.CallTool(ctx, tool, args, "")
	if err != nil {
		t.Fatalf("%s through the StdioSession: %v", tool, err)
	}
	want, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s through the SDK: %v", tool, err)
	}
	if !reflect.DeepEqual(untimed(got.Content), untimed(want.Content)) || !reflect.DeepEqual(got.StructuredContent, want.StructuredContent) || got.IsError != want.IsError {
		t.Errorf("%s: the StdioSession read\n%s\nthe SDK\n%s", tool, dump(got), dump(want))
	}
	return got
}

// The Go SDK's everything-server over stdio: results read as the SDK's
// client reads them, progress reported before the call returns, an
// unknown tool a JSON-RPC error, a server-to-client request (sampling,
// which caphub's client does not offer) refused without ending the
// session.
func TestStdioSessionGoEverything(t *testing.T) {
	log := &progressLog{}
	ss, cs := dialStdioBoth(t, &Server{Name: "up", Command: testpeers.GoEverything(t)}, log)
	if ss.ProtocolVersion() != HTTPProtocolVersion || ss.ServerInfo().Name != "mcp-conformance-test-server" {
		t.Errorf("initialised %q with %+v", ss.ProtocolVersion(), ss.ServerInfo())
	}
	for _, tool := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource", "test_multiple_content_types", "test_error_handling"} {
		if res := sameStdioResult(t, ss, cs, tool, nil); len(res.Content) == 0 {
			t.Errorf("%s: no content", tool)
		}
	}
	if _, err := ss.CallTool(context.Background(), "test_tool_with_progress", nil, "tok"); err != nil {
		t.Fatal(err)
	}
	if got := log.list(); !reflect.DeepEqual(got, []float64{0, 50, 100}) {
		t.Errorf("progress reported by the time the call returned: %v, want 0, 50, 100", got)
	}
	var wire *jsonrpc.Error
	if _, err := ss.CallTool(context.Background(), "no_such_tool", nil, ""); !errors.As(err, &wire) {
		t.Errorf("an unknown tool: %v, want a JSON-RPC error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := ss.CallTool(ctx, "test_sampling", map[string]any{"prompt": "hi"}, ""); err == nil && !res.IsError {
		t.Errorf("test_sampling succeeded without a sampling client: %s", dump(res))
	}
	sameStdioResult(t, ss, cs, "test_simple_text", nil)
}

// npm server-everything over stdio (the TypeScript SDK's server): results
// as the SDK reads them (roots/list answered as the SDK answers it),
// progress in order, and a call cancelled at its
// first progress notification ends with the context's error while the
// session goes on.
func TestStdioSessionNPMEverything(t *testing.T) {
	node := testpeers.Node(t)
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything")
	log := &progressLog{}
	ss, cs := dialStdioBoth(t, &Server{Name: "everything", Command: node + " " + filepath.Join(pkg, "dist", "index.js"), Args: []string{"stdio"}}, log)
	sameStdioResult(t, ss, cs, "echo", map[string]any{"message": "hello"})
	res := sameStdioResult(t, ss, cs, "get-structured-content", map[string]any{"location": "Chicago"})
	if m, ok := res.StructuredContent.(map[string]any); !ok || m["temperature"] != float64(36) {
		t.Errorf("structured content %#v", res.StructuredContent)
	}
	sameStdioResult(t, ss, cs, "get-tiny-image", nil)
	sameStdioResult(t, ss, cs, "get-resource-links", map[string]any{"count": 3})
	sameStdioResult(t, ss, cs, "get-annotated-message", map[string]any{"messageType": "error", "includeImage": true})
	sameStdioResult(t, ss, cs, "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2})
	// Offered roots as the SDK's client offers them, the server serves
	// get-roots-list, which asks the client for its roots (none).
	if res := sameStdioResult(t, ss, cs, "get-roots-list", nil); res.IsError {
		t.Errorf("get-roots-list: %s", dump(res))
	}

	if _, err := ss.CallTool(context.Background(), "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, "p1"); err != nil {
		t.Fatal(err)
	}
	if got := log.list(); !reflect.DeepEqual(got, []float64{1, 2, 3}) {
		t.Errorf("progress %v, want 1, 2, 3", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log.mu.Lock()
	log.each = cancel
	log.mu.Unlock()
	if _, err := ss.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 30}, "p2"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call returned %v", err)
	}
	log.mu.Lock()
	log.each = nil
	log.mu.Unlock()
	sameStdioResult(t, ss, cs, "echo", map[string]any{"message": "still here"})
}

// A server that dies ends the session (Done, with the reason), and the
// calls then fail at once; Close kills the process group of a server that
// ignores its closed stdin.
func TestStdioSessionEnds(t *testing.T) {
	ss, err := DialStdio(context.Background(), &Server{Name: "up", Command: testpeers.GoEverything(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(ss.Cmd().Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ss.Done():
	case <-time.After(time.Minute):
		t.Fatal("the session did not end with its server")
	}
	if err := ss.Err(); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("the session ended with %v, want the server's exit", err)
	}
	if _, err := ss.CallTool(context.Background(), "test_simple_text", nil, ""); err == nil {
		t.Error("a call on an ended session succeeded")
	}
	ss.Close()

	// A shell that ignores stdin's end: Close kills it.
	sh := &Server{Name: "stubborn", Command: "sh", Args: []string{"-c", `read line; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"sh","version":"1"},"capabilities":{}}}'; exec sleep 600`}}
	ss, err = DialStdio(context.Background(), sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := ss.Cmd().Process.Pid
	ss.Close()
	if testpeers.Alive(pid) {
		t.Errorf("server process %d survived Close", pid)
	}
}

// FuzzStdioHandle: whatever a server writes on a line, the session
// routes it or ends with an error, and never panics.
func FuzzStdioHandle(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},[]]`,
		`[[[1]]]`, `"x"`, `{`, `{"id":null,"method":""}`, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ss := &StdioSession{name: "fuzz", stdin: nopCloser{io.Discard}, pending: map[int64]chan *message{1: make(chan *message, 1)}, done: make(chan struct{}),
			notify: func(Notification) {}}
		_ = ss.handle(line)
	})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
