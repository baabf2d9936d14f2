//lint:file-ignore SA1019 the front relays logging, sampling and roots (deprecated from protocol 2026-07-28) through the deprecation window: these tests exercise that relaying.

package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamEnv makes the test binary an MCP server on stdio (see TestMain):
// the stdio upstream of TestStdioUpstream.
const upstreamEnv = "MCPFRONT_TEST_STDIO_UPSTREAM"

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) == "1" {
		u := newUpstream()
		if err := u.server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "stdio upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	testpeers.RemoveBuilt()
	os.Exit(code)
}

// savedServers is an in-memory ServerSource.
type savedServers map[string]mcpconn.Server

func (s savedServers) GetServer(_ context.Context, name string) (*discover.SavedServer, error) {
	srv, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("no MCP server is saved as %q: %w", name, registry.ErrNotFound)
	}
	return &discover.SavedServer{Server: srv}, nil
}

// recorder is a Hooks that records calls and records, and denies when told:
// every call (deny), or the calls of one URI (denyURI).
type recorder struct {
	mu        sync.Mutex
	deny      error
	denyURI   string
	calls     []*invoke.Call
	approvals []string // the approval id each call was retried with
	recs      []invoke.Record
}

func (r *recorder) Authorize(ctx context.Context, call *invoke.Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	r.approvals = append(r.approvals, identity.From(ctx).Approval)
	if r.denyURI != "" && call.URI == r.denyURI {
		return &invoke.Error{Code: invoke.CodeDenied, Message: "no " + call.URI}
	}
	return r.deny
}

func (r *recorder) Emit(_ context.Context, rec invoke.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recorder) records() []invoke.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]invoke.Record(nil), r.recs...)
}

// upstream is an in-process MCP server with a tool per feature the relay
// carries.
type upstream struct {
	server    *mcp.Server
	started   chan struct{} // a "slow" call began
	cancelled chan struct{} // a "slow" call saw its context cancelled
	echoes    chan string   // every "echo" call's text
}

type echoIn struct {
	Text string `json:"text"`
}

type sleepIn struct {
	MS int `json:"ms"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newUpstream() *upstream {
	u := &upstream{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), echoes: make(chan string, 1024)}
	s := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1.2.3"}, &mcp.ServerOptions{
		Instructions:       "upstream instructions",
		PageSize:           3, // lists come in pages
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"one", "two"}}}, nil
		},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		select {
		case u.echoes <- in.Text:
		default:
		}
		return text("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "sleeps"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return text("awake"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "fails"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "the server's process id"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprint(os.Getpid())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "reports progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, nil, err
			}
		}
		time.Sleep(20 * time.Millisecond)
		return text("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "logs"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for _, m := range []string{"first", "second"} {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: m}); err != nil {
				return nil, nil, err
			}
		}
		time.Sleep(20 * time.Millisecond)
		return text("logged"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "waits until cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		u.started <- struct{}{}
		select {
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return text("not cancelled"), nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "samples, elicits and lists roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		msg, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("sampling: %w", err)
		}
		el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: nameSchema})
		if err != nil {
			return nil, nil, fmt.Errorf("elicitation: %w", err)
		}
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("roots: %w", err)
		}
		var uris []string
		for _, r := range roots.Roots {
			uris = append(uris, r.URI)
		}
		sampled, _ := msg.Content.(*mcp.TextContent)
		return text(fmt.Sprintf("sampled=%s model=%s elicited=%s:%v roots=%s", sampled.Text, msg.Model, el.Action, el.Content["name"], strings.Join(uris, ","))), nil, nil
	})
	s.AddResource(&mcp.Resource{Name: "watched", URI: "test://watched", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "watched content"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greets"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	u.server = s
	return u
}

func (u *upstream) sessions() int {
	n := 0
	for range u.server.Sessions() {
		n++
	}
	return n
}

// env is an upstream over streamable HTTP, saved as "up", fronted.
type env struct {
	up       *upstream
	upURL    string
	front    *Front
	hooks    *recorder
	frontURL string // the front's base URL
}

func newEnv(t *testing.T) *env { return newEnvWith(t, Options{}) }

func newEnvWith(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{up: newUpstream(), hooks: &recorder{}}
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.up.server }, nil))
	t.Cleanup(upSrv.Close)
	e.upURL = upSrv.URL
	servers := savedServers{"up": {Name: "up", Transport: mcpconn.TransportHTTP, URL: upSrv.URL}}
	opts.Version, opts.Log = "test", testLog()
	e.front = New(servers, e.hooks, opts)
	e.frontURL = serveFront(t, e.front, nil)
	return e
}

// serveFront mounts front at /mcp/servers/ of a test HTTP server (edited by
// edit, when not nil, before it starts) and returns the server's URL; the
// server and the front are closed with the test.
func serveFront(t testing.TB, front *Front, edit func(*httptest.Server)) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp/servers/", front.Handler())
	srv := httptest.NewUnstartedServer(mux)
	if edit != nil {
		edit(srv)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		_ = front.Close()
		srv.Close()
	})
	return srv.URL
}

// testLog discards logs, unless MCPFRONT_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("MCPFRONT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// client is a downstream SDK client whose handlers record what reaches
// them.
type client struct {
	cs       *mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updated  chan string
}

func (e *env) connect(t *testing.T, path string, sse bool) *client {
	t.Helper()
	c := &client{progress: make(chan *mcp.ProgressNotificationParams, 16), logs: make(chan *mcp.LoggingMessageParams, 16), updated: make(chan string, 16)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "0.1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "hi from the client"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.progress <- req.Params
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			c.logs <- req.Params
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.updated <- req.Params.URI
		},
	})
	cl.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: e.frontURL + path, MaxRetries: -1}
	if sse {
		tr = &mcp.SSEClientTransport{Endpoint: e.frontURL + path}
	}
	if os.Getenv("MCPFRONT_TEST_LOG") != "" {
		tr = &mcp.LoggingTransport{Transport: tr, Writer: os.Stderr}
	}
	// The SSE transport's stream lives as long as the context it was
	// connected with.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	timer := time.AfterFunc(10*time.Second, cancel)
	cs, err := cl.Connect(ctx, tr, nil)
	timer.Stop()
	if err != nil {
		t.Fatalf("connect to %s: %v", path, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

func callText(t *testing.T, cs *mcp.ClientSession, ctx context.Context, params *mcp.CallToolParams) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", params.Name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nameSchema is an elicitation schema asking for a name.
var nameSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string"}},
	"required":   []any{"name"},
}

func TestInitializeMirrorsUpstream(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	init := c.cs.InitializeResult()
	if init.ServerInfo == nil || init.ServerInfo.Name != "test-upstream" || init.ServerInfo.Version != "1.2.3" {
		t.Errorf("server info = %+v, want the upstream's", init.ServerInfo)
	}
	if init.Instructions != "upstream instructions" {
		t.Errorf("instructions = %q", init.Instructions)
	}
	caps := init.Capabilities
	if caps.Tools == nil || caps.Prompts == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil || caps.Logging == nil {
		t.Errorf("capabilities = %+v, want the upstream's tools, prompts, resources (subscribe), completions, logging", caps)
	}
	if init.ProtocolVersion != "2025-11-25" {
		t.Errorf("protocol version = %q, want 2025-11-25", init.ProtocolVersion)
	}
	ctx := timeout(t)
	// Every request kind is relayed, lists page by page.
	page, err := c.cs.ListTools(ctx, nil)
	if err != nil || len(page.Tools) != 3 || page.NextCursor == "" {
		t.Fatalf("tools/list = %+v, %v; want the upstream's first page of 3 and a cursor", page, err)
	}
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) != 8 {
		t.Errorf("tools over every page = %v, want the upstream's 8", names)
	}
	if p, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err != nil || len(p.Messages) != 1 {
		t.Errorf("prompts/get = %v, %v", p, err)
	}
	if r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://watched"}); err != nil || r.Contents[0].Text != "watched content" {
		t.Errorf("resources/read = %v, %v", r, err)
	}
	if r, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "o"}}); err != nil || len(r.Completion.Values) != 2 {
		t.Errorf("completion/complete = %v, %v", r, err)
	}
	if err := c.cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	// An upstream JSON-RPC error comes back as it is.
	_, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"})
	if err == nil || !strings.Contains(err.Error(), "no-such-tool") {
		t.Errorf("unknown tool: err = %v, want the upstream's error naming it", err)
	}
}

func TestCallToolRecorded(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if got != "echo: hello" || isErr {
		t.Fatalf("echo = %q (isError %v), want %q", got, isErr, "echo: hello")
	}
	recs := e.hooks.records()
	if len(recs) != 1 {
		t.Fatalf("records = %+v, want one", recs)
	}
	r := recs[0]
	if r.URI != "mcp:up/echo" || r.Binding != "mcp" || r.Code != "" || r.DurationMS <= 0 || len(r.Attempts) != 1 {
		t.Errorf("record = %+v, want URI mcp:up/echo, binding mcp, no code, a duration and one attempt", r)
	}
	e.hooks.mu.Lock()
	call := e.hooks.calls[0]
	e.hooks.mu.Unlock()
	if call.URI != "mcp:up/echo" || call.Input["text"] != "hello" || call.Definition.Bindings.MCP.Server != "up" || call.Definition.Bindings.MCP.Tool != "echo" {
		t.Errorf("authorized call = %+v (definition %+v)", call, call.Definition)
	}

	// A tool error is relayed as it is and recorded with a code.
	got, isErr = callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "fail"})
	if !isErr || !strings.Contains(got, "it failed") {
		t.Errorf("fail = %q (isError %v), want the upstream's tool error", got, isErr)
	}
	if recs := e.hooks.records(); len(recs) != 2 || recs[1].Code != invoke.CodeUpstreamError || !strings.Contains(recs[1].Message, "it failed") {
		t.Errorf("records = %+v, want the second with UPSTREAM_ERROR", recs)
	}
}

func TestDeniedCall(t *testing.T) {
	e := newEnv(t)
	e.hooks.deny = &invoke.Error{Code: invoke.CodeDenied, Message: "rule no-echo forbids mcp:up/echo"}
	c := e.connect(t, "/mcp/servers/up", false)
	got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if !isErr || got != "DENIED: rule no-echo forbids mcp:up/echo" {
		t.Errorf("denied call = %q (isError %v), want a DENIED tool error", got, isErr)
	}
	select {
	case s := <-e.up.echoes:
		t.Errorf("the upstream ran a denied call (%q)", s)
	default:
	}
	if recs := e.hooks.records(); len(recs) != 1 || recs[0].Code != invoke.CodeDenied || recs[0].URI != "mcp:up/echo" {
		t.Errorf("records = %+v, want one DENIED", recs)
	}
	// A plain error from the policy is a denial too.
	e.hooks.deny = errors.New("not today")
	if got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo"}); !isErr || got != "DENIED: not today" {
		t.Errorf("denied call = %q (isError %v)", got, isErr)
	}
}

func TestProgressAndLogging(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	ctx := timeout(t)
	params := &mcp.CallToolParams{Name: "progress"}
	params.SetProgressToken("tok-1")
	if got, _ := callText(t, c.cs, ctx, params); got != "done" {
		t.Fatalf("progress = %q", got)
	}
	for i := 1; i <= 3; i++ {
		select {
		case p := <-c.progress:
			if p.ProgressToken != "tok-1" || p.Progress != float64(i) || p.Total != 3 {
				t.Errorf("progress %d = %+v", i, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("progress notification %d did not arrive", i)
		}
	}

	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := callText(t, c.cs, ctx, &mcp.CallToolParams{Name: "log"}); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	for _, want := range []string{"first", "second"} {
		select {
		case m := <-c.logs:
			if m.Data != want || m.Level != "info" {
				t.Errorf("log message = %+v, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("log message %q did not arrive", want)
		}
	}
}

func TestCancellationReachesUpstream(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		errc <- err
	}()
	select {
	case <-e.up.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow call did not start upstream")
	}
	cancel()
	select {
	case <-e.up.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream handler's context was not cancelled")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: err = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(e.hooks.records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if recs := e.hooks.records(); len(recs) != 1 || recs[0].Code != invoke.CodeTimeout {
		t.Errorf("records = %+v, want one TIMEOUT (cancelled)", recs)
	}
}

func TestServerToClientRequests(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "ask"})
	want := "sampled=hi from the client model=test-model elicited=accept:Ada roots=file:///work/project"
	if isErr || got != want {
		t.Errorf("ask = %q (isError %v), want %q", got, isErr, want)
	}
}

func TestResourceSubscription(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up", false)
	ctx := timeout(t)
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched"}); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	// The standalone stream of the downstream session may open a moment
	// after initialisation: notify until one arrives.
	deadline := time.After(5 * time.Second)
	for {
		if err := e.up.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://watched"}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-c.updated:
			if uri != "test://watched" {
				t.Errorf("updated %q", uri)
			}
			if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched"}); err != nil {
				t.Errorf("resources/unsubscribe: %v", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notifications/resources/updated arrived")
		}
	}
}

func TestListChangedRelayed(t *testing.T) {
	e := newEnv(t)
	changed := make(chan string, 16)
	cl := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "0.1"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
	})
	cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/up", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitFor(t, "the upstream session", func() bool { return e.up.sessions() == 1 })
	for _, kind := range []string{"tools", "prompts"} {
		deadline := time.After(5 * time.Second)
	wait:
		for i := 0; ; i++ {
			// The standalone stream may open a moment after initialisation:
			// change the list until a notification arrives.
			name := fmt.Sprintf("extra-%s-%d", kind, i)
			if kind == "tools" {
				e.up.server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("x"), nil })
			} else {
				e.up.server.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{}, nil
				})
			}
			select {
			case got := <-changed:
				if got == kind {
					break wait
				}
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("no notifications/%s/list_changed arrived", kind)
			}
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSessionPerSession(t *testing.T) {
	e := newEnv(t)
	a := e.connect(t, "/mcp/servers/up", false)
	b := e.connect(t, "/mcp/servers/up", false)
	waitFor(t, "two upstream sessions", func() bool { return e.up.sessions() == 2 && e.front.Sessions() == 2 })
	for _, c := range []*client{a, b} {
		if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); got != "echo: x" {
			t.Errorf("echo = %q", got)
		}
	}
	if err := a.cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closed session's upstream to close", func() bool { return e.up.sessions() == 1 && e.front.Sessions() == 1 })
	if got, _ := callText(t, b.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); got != "echo: still" {
		t.Errorf("the other session: echo = %q", got)
	}
	if err := e.front.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every upstream session to close", func() bool { return e.up.sessions() == 0 && e.front.Sessions() == 0 })
}

// TestSessionLimits: a session beyond a limit is refused with an error
// that names the limit and the setting; the sessions in use go on, and a
// session ended makes room.
func TestSessionLimits(t *testing.T) {
	e := newEnvWith(t, Options{MaxSessionsPerServer: 2})
	a := e.connect(t, "/mcp/servers/up", false)
	b := e.connect(t, "/mcp/servers/up", false)
	status, body := testpeers.PostInitialize(t, e.frontURL+"/mcp/servers/up")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "at most 2 sessions") || !strings.Contains(body, "--front-max-sessions-per-server") {
		t.Errorf("a third session: %d %s, want 503 naming the limit and its setting", status, body)
	}
	for _, c := range []*client{a, b} {
		if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); got != "echo: x" {
			t.Errorf("a session in use: echo = %q", got)
		}
	}
	if err := a.cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ended session to leave the table", func() bool { return e.front.Sessions() == 1 })
	c := e.connect(t, "/mcp/servers/up", false)
	if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "c"}}); got != "echo: c" {
		t.Errorf("the session made after one ended: echo = %q", got)
	}

	total := newEnvWith(t, Options{MaxSessions: 1})
	total.connect(t, "/mcp/servers/up", false)
	status, body = testpeers.PostInitialize(t, total.frontURL+"/mcp/servers/up")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "--front-max-sessions)") {
		t.Errorf("past the total limit: %d %s, want 503 naming --front-max-sessions", status, body)
	}
}

// TestLongCallsOutliveServerTimeouts checks that the front lifts the HTTP
// server's read and write timeouts (sized for REST) from its streams.
func TestLongCallsOutliveServerTimeouts(t *testing.T) {
	up := newUpstream()
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.server }, nil))
	t.Cleanup(upSrv.Close)
	front := New(savedServers{"up": {Name: "up", URL: upSrv.URL}}, nil, Options{Log: testLog()})
	srvURL := serveFront(t, front, func(srv *httptest.Server) {
		srv.Config.ReadTimeout, srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	})
	for _, sse := range []bool{false, true} {
		e := &env{front: front, frontURL: srvURL}
		path := "/mcp/servers/up"
		if sse {
			path += "/sse"
		}
		c := e.connect(t, path, sse)
		if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1000}}); got != "awake" {
			t.Errorf("a 1s call through a server with 300ms timeouts (sse %v) = %q", sse, got)
		}
	}
}

func TestSSETransport(t *testing.T) {
	e := newEnv(t)
	c := e.connect(t, "/mcp/servers/up/sse", true)
	if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sse"}}); got != "echo: sse" {
		t.Errorf("echo over SSE = %q", got)
	}
	if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "ask"}); !strings.HasPrefix(got, "sampled=hi from the client") {
		t.Errorf("ask over SSE = %q", got)
	}
	_ = c.cs.Close()
	waitFor(t, "the SSE session's upstream to close", func() bool { return e.up.sessions() == 0 })
}

func TestNotSavedAndBadPaths(t *testing.T) {
	e := newEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/mcp/servers/nope", `no MCP server is saved as \"nope\"`, http.StatusNotFound},
		{"/mcp/servers/nope/sse", `no MCP server is saved as \"nope\"`, http.StatusNotFound},
		{"/mcp/servers/Bad_Name", "is not a saved MCP server name", http.StatusNotFound},
		{"/mcp/servers/up/extra", "fronted servers are at", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.frontURL+tc.path, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("POST %s = %d %s, want %d with %q", tc.path, resp.StatusCode, body, tc.status, tc.want)
		}
		var msg struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Error.Message == "" {
			t.Errorf("POST %s: body %s is not a JSON-RPC error", tc.path, body)
		}
	}
	// An SDK client gets the message too.
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	_, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/nope", MaxRetries: -1}, nil)
	if err == nil {
		t.Error("connecting to an unsaved server succeeded")
	}
}

func TestDNSRebindingProtection(t *testing.T) {
	e := newEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	post := func(host, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, e.frontURL+"/mcp/servers/up", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	local := strings.TrimPrefix(e.frontURL, "http://")
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"evil.example.com", "http://evil.example.com", http.StatusForbidden},
		{"evil.example.com", "", http.StatusForbidden},
		{local, "http://evil.example.com", http.StatusForbidden},
		{local, "null", http.StatusForbidden},
		{local, "http://" + local, http.StatusOK},
		{"localhost:1234", "https://localhost:8080", http.StatusOK},
		{local, "", http.StatusOK},
	} {
		if got := post(tc.host, tc.origin); got != tc.want {
			t.Errorf("Host %q Origin %q: %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}
}

func TestStdioUpstreamAndClose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	servers := savedServers{"stdio": {Name: "stdio", Command: exe, Env: map[string]string{upstreamEnv: "1"}}}
	hooks := &recorder{}
	front := New(servers, hooks, Options{Log: testLog()})
	srvURL := serveFront(t, front, nil)

	e := &env{front: front, frontURL: srvURL, hooks: hooks}
	c := e.connect(t, "/mcp/servers/stdio", false)
	ctx := timeout(t)
	got, _ := callText(t, c.cs, ctx, &mcp.CallToolParams{Name: "pid"})
	var pid int
	if _, err := fmt.Sscan(got, &pid); err != nil || pid == os.Getpid() {
		t.Fatalf("pid = %q: want the stdio server's process id", got)
	}
	params := &mcp.CallToolParams{Name: "progress"}
	params.SetProgressToken(7)
	if got, _ := callText(t, c.cs, ctx, params); got != "done" {
		t.Errorf("progress over stdio = %q", got)
	}
	for i := 0; i < 3; i++ {
		select {
		case p := <-c.progress:
			if p.ProgressToken != float64(7) {
				t.Errorf("progress token = %#v", p.ProgressToken)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("progress over stdio did not arrive")
		}
	}
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := callText(t, c.cs, ctx, &mcp.CallToolParams{Name: "log"}); got != "logged" {
		t.Errorf("log over stdio = %q", got)
	}
	for _, want := range []string{"first", "second"} {
		select {
		case m := <-c.logs:
			if m.Data != want {
				t.Errorf("log message over stdio = %+v, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("log message %q over stdio did not arrive", want)
		}
	}
	if got, _ := callText(t, c.cs, ctx, &mcp.CallToolParams{Name: "ask"}); !strings.HasPrefix(got, "sampled=hi from the client") {
		t.Errorf("ask over stdio = %q", got)
	}
	if err := front.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stdio server to exit", func() bool { return syscall.Kill(pid, 0) != nil })
	// After Close the front refuses new sessions.
	resp, err := http.Post(srvURL+"/mcp/servers/stdio", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503", resp.StatusCode)
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		name string
		sse  bool
		ok   bool
	}{
		{"/mcp/servers/github", "github", false, true},
		{"/mcp/servers/github/", "github", false, true},
		{"/mcp/servers/github/sse", "github", true, true},
		{"github/sse", "github", true, true},
		{"/mcp/servers/", "", false, false},
		{"/mcp/servers/github/messages", "", false, false},
	} {
		name, sse, ok := parsePath(tc.path)
		if name != tc.name || sse != tc.sse || ok != tc.ok {
			t.Errorf("parsePath(%q) = %q, %v, %v; want %q, %v, %v", tc.path, name, sse, ok, tc.name, tc.sse, tc.ok)
		}
	}
}

// TestGoroutinesEndWithSessions checks that what the front starts for a
// session ends with it: after many sessions come and go, the number of
// goroutines returns to what it was.
func TestGoroutinesEndWithSessions(t *testing.T) {
	e := newEnv(t)
	cycle := func() {
		c := e.connect(t, "/mcp/servers/up", false)
		params := &mcp.CallToolParams{Name: "progress"}
		params.SetProgressToken("t")
		callText(t, c.cs, timeout(t), params)
		_ = c.cs.Close()
	}
	settle := func() int {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		time.Sleep(50 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	cycle()
	waitFor(t, "the first session to end", func() bool { return e.front.Sessions() == 0 && e.up.sessions() == 0 })
	base := settle()
	for range 10 {
		cycle()
	}
	waitFor(t, "every session to end", func() bool { return e.front.Sessions() == 0 && e.up.sessions() == 0 })
	deadline := time.Now().Add(10 * time.Second)
	n := settle()
	for n > base+5 && time.Now().Before(deadline) {
		n = settle()
	}
	t.Logf("goroutines: %d before, %d after 10 sessions", base, n)
	if n > base+5 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after 10 sessions ended, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}
