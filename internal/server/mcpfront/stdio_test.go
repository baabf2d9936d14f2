//lint:file-ignore SA1019 the front relays sampling (deprecated from protocol 2026-07-28) through the deprecation window: these tests exercise that relaying.

package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio relay, with the test binary as a stdio server (TestMain), in
// both session modes.

// stdioEnv fronts the test binary as the stdio server "stdio", saved with
// the session mode given.
func stdioEnv(t *testing.T, sessions string, opts Options) *env {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	servers := savedServers{"stdio": {Name: "stdio", Command: exe, Env: map[string]string{upstreamEnv: "1"}, Sessions: sessions}}
	hooks := &recorder{}
	opts.Version, opts.Log = "test", testLog()
	front := New(servers, hooks, opts)
	front.stdio.Grace = 200 * time.Millisecond
	return &env{front: front, frontURL: serveFront(t, front, nil), hooks: hooks}
}

// connectAs connects a Go SDK client named name whose sampling handler
// answers with its name (no sampling capability when sampling is false).
func (e *env) connectAs(t *testing.T, name string, sampling bool) *client {
	t.Helper()
	c := &client{progress: make(chan *mcp.ProgressNotificationParams, 16), logs: make(chan *mcp.LoggingMessageParams, 16), updated: make(chan string, 16)}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { c.progress <- req.Params },
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
	}
	if sampling {
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "from " + name}}, nil
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	cl.AddRoots(&mcp.Root{URI: "file:///" + name})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/stdio", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

// TestStdioSharedClients: two clients of a shared stdio server use one
// process; each gets its own progress (both use the token 7, which the
// relay makes unique upstream) and answers its own sampling requests; a
// client without the sampling capability has its causing call passed over
// for one that can answer; a cancelled call ends alone; the process ends a
// grace after the last session, and starts again for a new one.
func TestStdioSharedClients(t *testing.T) {
	e := stdioEnv(t, mcpconn.SessionsShared, Options{})
	a, b := e.connectAs(t, "ada", true), e.connectAs(t, "bob", true)
	pid := upstreamPID(t, a.cs)
	if got := upstreamPID(t, b.cs); got != pid {
		t.Fatalf("two processes (%d, %d) for a shared server", pid, got)
	}

	var wg sync.WaitGroup
	for _, c := range []*client{a, b} {
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: "progress"}
			params.SetProgressToken(7)
			if got, _ := callText(t, c.cs, timeout(t), params); got != "done" {
				t.Errorf("progress = %q", got)
			}
		})
	}
	wg.Wait()
	for name, c := range map[string]*client{"ada": a, "bob": b} {
		if n := len(c.progress); n != 3 {
			t.Errorf("%s got %d progress notifications, want its own 3", name, n)
		}
		for range len(c.progress) {
			if p := <-c.progress; p.ProgressToken != float64(7) {
				t.Errorf("%s: progress token %v, want its own 7", name, p.ProgressToken)
			}
		}
	}

	for name, c := range map[string]*client{"ada": a, "bob": b} {
		got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "ask"})
		if isErr || !strings.HasPrefix(got, "sampled=from "+name+" ") || !strings.Contains(got, "elicited=accept:"+name) || !strings.Contains(got, "roots=file:///"+name) {
			t.Errorf("%s: ask = %q, want its own answers", name, got)
		}
	}

	// A client that cannot sample has the oldest call in flight: the
	// server's sampling request goes to the call of one that can.
	mute := e.connectAs(t, "mute", false)
	slowCtx, stopSlow := context.WithCancel(context.Background())
	slowDone := make(chan error, 1)
	go func() {
		_, err := mute.cs.CallTool(slowCtx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 3000}})
		slowDone <- err
	}()
	waitFor(t, "the mute client's call in flight", func() bool { return e.front.Sessions() == 3 })
	time.Sleep(50 * time.Millisecond)
	if got, _ := callText(t, a.cs, timeout(t), &mcp.CallToolParams{Name: "ask"}); !strings.HasPrefix(got, "sampled=from ada ") {
		t.Errorf("ask beside a mute client's older call = %q", got)
	}
	// Cancelling the mute client's call ends it, and only it.
	stopSlow()
	if err := <-slowDone; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	waitFor(t, "the cancelled call's record", func() bool {
		for _, r := range e.hooks.records() {
			if r.URI == "mcp:stdio/sleep" && r.Code == invoke.CodeTimeout {
				return true
			}
		}
		return false
	})
	if got, _ := callText(t, b.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); got != "echo: still" {
		t.Errorf("after a cancellation: echo = %q", got)
	}

	// The process dies: the next request starts it again.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shared process to die", func() bool { return syscall.Kill(pid, 0) != nil })
	restarted := upstreamPID(t, b.cs)
	if restarted == pid {
		t.Fatal("the dead process answered")
	}
	if got := upstreamPID(t, a.cs); got != restarted {
		t.Errorf("after the restart: %d and %d, want one process", got, restarted)
	}

	// The last session ends: the process ends after the grace.
	for _, c := range []*client{a, b, mute} {
		_ = c.cs.Close()
	}
	waitFor(t, "every session to end", func() bool { return e.front.Sessions() == 0 })
	waitFor(t, "the shared process to end after the grace", func() bool { return syscall.Kill(restarted, 0) != nil })
	c := e.connectAs(t, "late", true)
	if got := upstreamPID(t, c.cs); got == restarted {
		t.Error("a session after the grace found the ended process")
	}
}

// TestStdioBothRelays: the stdio relay and the SDK relay (which it
// replaces for stdio servers, kept for SSE) serve the same calls alike,
// per client: a process per session, each ended with it.
func TestStdioBothRelays(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		t.Run(fmt.Sprintf("sdk=%v", sdk), func(t *testing.T) {
			e := stdioEnv(t, "", Options{})
			e.front.sdkStdio = sdk
			a, b := e.connectAs(t, "ada", true), e.connectAs(t, "bob", true)
			pa, pb := upstreamPID(t, a.cs), upstreamPID(t, b.cs)
			if pa == pb {
				t.Fatal("two per-client sessions share a process")
			}
			if got, _ := callText(t, b.cs, timeout(t), &mcp.CallToolParams{Name: "ask"}); !strings.HasPrefix(got, "sampled=from bob ") {
				t.Errorf("ask = %q", got)
			}
			if got, isErr := callText(t, a.cs, timeout(t), &mcp.CallToolParams{Name: "fail"}); !isErr || !strings.Contains(got, "it failed") {
				t.Errorf("fail = %q, %v", got, isErr)
			}
			_ = a.cs.Close()
			waitFor(t, "the ended session's process to exit", func() bool { return syscall.Kill(pa, 0) != nil })
			if syscall.Kill(pb, 0) != nil {
				t.Error("the other session's process ended too")
			}
			var codes []string
			for _, r := range e.hooks.records() {
				codes = append(codes, r.URI+"="+r.Code)
			}
			if want := "mcp:stdio/fail=UPSTREAM_ERROR"; !strings.Contains(strings.Join(codes, " "), want) {
				t.Errorf("records %v, want %s", codes, want)
			}
		})
	}
}

// TestStdioTransport: the streamable HTTP transport as the stdio relay
// writes it out: refusals with the status the spec gives, JSON for a
// client that accepts only JSON, batches, policy refusals answered by the
// front, ids of any type, unknown sessions, DELETE.
func TestStdioTransport(t *testing.T) {
	for _, mode := range []string{mcpconn.SessionsPerClient, mcpconn.SessionsShared} {
		t.Run(mode, func(t *testing.T) {
			e := stdioEnv(t, mode, Options{})
			e.hooks.denyURI = "mcp:stdio/fail"
			c := &raw{t: t, url: e.frontURL + "/mcp/servers/stdio"}
			c.initialize("2025-06-18")

			status := func(method, body string, header http.Header) int {
				t.Helper()
				c.header = header
				defer func() { c.header = nil }()
				resp, _ := c.do(method, body)
				return resp.StatusCode
			}
			call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
			for _, tc := range []struct {
				what   string
				method string
				body   string
				header http.Header
				want   int
			}{
				{"not JSON", http.MethodPost, `{"jsonrpc":`, nil, http.StatusBadRequest},
				{"wrong content type", http.MethodPost, call, http.Header{"Content-Type": {"text/plain"}}, http.StatusUnsupportedMediaType},
				{"accepts neither", http.MethodPost, call, http.Header{"Accept": {"text/html"}}, http.StatusNotAcceptable},
				{"unknown protocol version", http.MethodPost, call, http.Header{"Mcp-Protocol-Version": {"1999-01-01"}}, http.StatusBadRequest},
				{"too large", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("a", 5<<20) + `"}}}`, nil, http.StatusRequestEntityTooLarge},
				{"PUT", http.MethodPut, call, nil, http.StatusMethodNotAllowed},
				{"GET accepting JSON only", http.MethodGet, "", http.Header{"Accept": {"application/json"}}, http.StatusNotAcceptable},
				{"notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, nil, http.StatusAccepted},
			} {
				if got := status(tc.method, tc.body, tc.header); got != tc.want {
					t.Errorf("%s: %d, want %d", tc.what, got, tc.want)
				}
			}

			c.header = http.Header{"Accept": {"application/json"}}
			resp, body := c.do(http.MethodPost, `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"in a batch"}}},{"jsonrpc":"2.0","id":{"odd":1},"method":"tools/call","params":{"name":"fail"}},{"jsonrpc":"2.0","id":4.5,"method":"ping"}]`)
			c.header = nil
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
				t.Fatalf("batch, JSON only: %d %s %s", resp.StatusCode, ct, body)
			}
			got := messages(t, resp, body)
			if m := got[`"a"`]; m.text() != "echo: in a batch" {
				t.Errorf("batch: echo = %+v in %s", m, body)
			}
			if m := got[`{"odd":1}`]; m.Result == nil || !m.Result.IsError || !strings.HasPrefix(m.text(), "DENIED: ") {
				t.Errorf("batch: refused call = %+v in %s", m, body)
			}
			if m, ok := got[`4.5`]; !ok || m.Error != nil {
				t.Errorf("batch: ping = %+v in %s", m, body)
			}
			for _, r := range e.hooks.records() {
				if r.URI == "mcp:stdio/fail" && len(r.Attempts) > 0 {
					t.Errorf("the refused call reached the server: %+v", r)
				}
			}

			resp, body = c.do(http.MethodPost, call)
			if resp.Header.Get("Content-Type") != "text/event-stream" || messages(t, resp, body)["2"].text() != "echo: x" {
				t.Errorf("call over SSE: %s %s", resp.Header.Get("Content-Type"), body)
			}

			if resp, _ := c.do(http.MethodDelete, ""); resp.StatusCode != http.StatusNoContent {
				t.Errorf("DELETE: %d", resp.StatusCode)
			}
			if resp, body := c.do(http.MethodPost, call); resp.StatusCode != http.StatusNotFound {
				t.Errorf("after DELETE: %d %s, want 404", resp.StatusCode, body)
			}
			c.sid = "no-such-session"
			if resp, _ := c.do(http.MethodPost, call); resp.StatusCode != http.StatusNotFound {
				t.Errorf("unknown session: %d, want 404", resp.StatusCode)
			}
		})
	}
}

// TestStdioIdleAndLimits: a stdio session idle past IdleTimeout ends with
// its process; a session beyond the per-server limit is refused with 503
// naming it, before any process starts.
func TestStdioIdleAndLimits(t *testing.T) {
	e := stdioEnv(t, "", Options{IdleTimeout: 300 * time.Millisecond, MaxSessionsPerServer: 1})
	c := e.connectAs(t, "ada", true)
	pid := upstreamPID(t, c.cs)
	status, body := testpeers.PostInitialize(t, e.frontURL+"/mcp/servers/stdio")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "at most 1 sessions") {
		t.Errorf("a second session: %d %s, want 503 naming the limit", status, body)
	}
	waitFor(t, "the idle session to end", func() bool { return e.front.Sessions() == 0 })
	waitFor(t, "its process to exit", func() bool { return syscall.Kill(pid, 0) != nil })
}
