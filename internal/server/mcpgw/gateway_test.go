package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixture is caphub assembled as cmd/caphub does it (SQLite store,
// registry with the built-ins, native binding, pipeline) with a gateway in
// front, served by an httptest server at /mcp and /mcp/sse.
type fixture struct {
	store *sqlite.Store
	svc   *registry.Service
	pipe  *invoke.Pipeline
	// bindings are pipe's, for a test that needs another pipeline (a policy).
	bindings []invoke.Binding
	inv      *recordingInvoker
	gw       *mcpgw.Gateway
	srv      *httptest.Server
	mcpURL   string // streamable HTTP endpoint
	sseURL   string // HTTP+SSE endpoint
	handler  http.Handler
}

// recordingInvoker remembers the caller of every call.
type recordingInvoker struct {
	next    mcpgw.Invoker
	mu      sync.Mutex
	callers []string
}

func (r *recordingInvoker) Invoke(ctx context.Context, req invoke.Request) (*invoke.Result, error) {
	r.mu.Lock()
	r.callers = append(r.callers, identity.From(ctx).Agent)
	r.mu.Unlock()
	return r.next.Invoke(ctx, req)
}

func (r *recordingInvoker) lastCaller() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.callers) == 0 {
		return "<none>"
	}
	return r.callers[len(r.callers)-1]
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newCaphub assembles caphub as cmd/caphub does it: a SQLite store, the
// registry with the built-ins, the native binding and the pipeline, behind
// a recordingInvoker. Its logs are discarded.
func newCaphub(t testing.TB) (*sqlite.Store, *registry.Service, []invoke.Binding, *invoke.Pipeline, *recordingInvoker) {
	t.Helper()
	return newCaphubIn(t, t.TempDir())
}

// newCaphubIn is newCaphub with its database in dir.
func newCaphubIn(t testing.TB, dir string) (*sqlite.Store, *registry.Service, []invoke.Binding, *invoke.Pipeline, *recordingInvoker) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir+"/c.db")
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	svc := registry.NewService(st, registry.WithLogger(log), registry.WithCache(), registry.WithSearchIndex(true))
	if _, err := svc.RegisterBatch(ctx, builtin.Definitions()); err != nil {
		t.Fatalf("register the built-ins: %v", err)
	}
	handlers := map[string]native.Handler{}
	for name, h := range builtin.Handlers(builtin.Env{Registry: svc, Docs: st, Log: log, Now: time.Now}) {
		handlers[name] = native.Handler(h)
	}
	bindings := []invoke.Binding{native.New(handlers)}
	pipe := invoke.New(svc, bindings, invoke.Options{})
	return st, svc, bindings, pipe, &recordingInvoker{next: pipe}
}

func newFixture(t testing.TB, opts mcpgw.Options) *fixture {
	t.Helper()
	st, svc, bindings, pipe, inv := newCaphub(t)
	t.Cleanup(func() { st.Close() })
	return serveGateway(t, &fixture{store: st, svc: svc, pipe: pipe, bindings: bindings, inv: inv}, opts)
}

// serveGateway serves a gateway over f's caphub (store, svc, inv) and
// fills in the rest of f.
func serveGateway(t testing.TB, f *fixture, opts mcpgw.Options) *fixture {
	t.Helper()
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	opts.Version = "test"
	gw := mcpgw.New(f.svc, f.store, f.inv, opts)
	mux := http.NewServeMux()
	h := gw.Handler()
	mux.Handle("/mcp", h)
	mux.Handle("/mcp/sse", h)
	srv := httptest.NewServer(mux)
	f.gw, f.srv, f.mcpURL, f.sseURL, f.handler = gw, srv, srv.URL+"/mcp", srv.URL+"/mcp/sse", h
	t.Cleanup(func() {
		srv.CloseClientConnections()
		gw.Close()
		srv.Close()
	})
	return f
}

// agentTransport adds X-Caphub-Agent to every request.
type agentTransport struct{ agent string }

func (a agentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(identity.Header, a.agent)
	return http.DefaultTransport.RoundTrip(r)
}

func agentClient(agent string) *http.Client { return &http.Client{Transport: agentTransport{agent}} }

// connect opens a client session; protocol "" is the SDK's latest.
func connect(t testing.TB, tr mcp.Transport, protocol string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	// The SSE transport ties its stream to the context of Connect: keep it
	// alive for the whole test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpgw-test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// eventually polls cond until it holds, and calls timedOut instead when
// 10 seconds pass first.
func eventually(t testing.TB, cond func() bool, timedOut func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			timedOut()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listTools(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// structured decodes a result's structured content.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s is not an object: %v", b, err)
	}
	return m
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkBuiltinTools checks the listing of the built-ins.
func checkBuiltinTools(t *testing.T, tools map[string]*mcp.Tool) {
	t.Helper()
	if got, want := len(tools), offeredBuiltins(); got != want {
		t.Errorf("tools/list returned %d tools, want %d (one per built-in that can run)", got, want)
	}
	// The everruns bundles that are "coming soon" always fail: not offered.
	for _, name := range []string{"everruns_research", "everruns_sandbox", "everruns_file_system"} {
		if _, ok := tools[name]; ok {
			t.Errorf("%s is listed, but it is coming soon and always fails COMING_SOON", name)
		}
	}
	for name, tool := range tools {
		if !toolNameRE.MatchString(name) {
			t.Errorf("tool name %q does not match %s", name, toolNameRE)
		}
		uri, _ := tool.Meta[mcpgw.MetaURI].(string)
		if uri == "" {
			t.Errorf("tool %s has no %s in _meta", name, mcpgw.MetaURI)
		} else if want := capability.ToolName(uri); want != name {
			t.Errorf("tool for %s is named %q, ToolName says %q", uri, name, want)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" {
			t.Errorf("tool %s: inputSchema type %v, want object", name, schema["type"])
		}
		if tool.Description == "" {
			t.Errorf("tool %s has no description", name)
		}
	}
	add := tools["everruns_add"]
	if add == nil {
		t.Fatalf("no tool everruns_add among %v", slices.Sorted(func(yield func(string) bool) {
			for n := range tools {
				if !yield(n) {
					return
				}
			}
		}))
	}
	if add.Title != "Add" {
		t.Errorf("everruns_add title %q, want Add", add.Title)
	}
	props, _ := add.InputSchema.(map[string]any)["properties"].(map[string]any)
	if props["a"] == nil || props["b"] == nil {
		t.Errorf("everruns_add input schema %v lacks a and b", add.InputSchema)
	}
	out, _ := add.OutputSchema.(map[string]any)
	if out["type"] != "object" {
		t.Errorf("everruns_add outputSchema %v, want an object schema", add.OutputSchema)
	}
	if a := add.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("everruns_add annotations %+v, want readOnly and idempotent, not destructive", add.Annotations)
	}
	if tools["everruns_get_current_time"] == nil {
		t.Error("no tool everruns_get_current_time")
	}
}

// checkCalls calls add, get_current_time, divide by zero, an invalid input
// and an unknown tool.
func checkCalls(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res := call(t, cs, "everruns_add", map[string]any{"a": 2, "b": 3})
	if res.IsError {
		t.Fatalf("add failed: %s", text(res))
	}
	if got := structured(t, res); got["result"] != 5.0 {
		t.Errorf("add structuredContent %v, want result 5", got)
	}
	if got := text(res); got != `{"result":5}` {
		t.Errorf("add text %q, want {\"result\":5}", got)
	}
	if res.Meta[mcpgw.MetaBinding] != "native" || res.Meta[mcpgw.MetaURI] != "ossa:everruns/add@1.0" {
		t.Errorf("add _meta %v", res.Meta)
	}

	res = call(t, cs, "everruns_get_current_time", map[string]any{"timezone": "UTC"})
	if res.IsError {
		t.Fatalf("get_current_time failed: %s", text(res))
	}
	if got := structured(t, res); got["timezone"] != "UTC" || got["time"] == "" || got["format"] != "iso8601" {
		t.Errorf("get_current_time structuredContent %v", got)
	}

	res = call(t, cs, "everruns_divide", map[string]any{"a": 1, "b": 0})
	if !res.IsError {
		t.Fatalf("divide by zero succeeded: %s", text(res))
	}
	se := structured(t, res)
	if se["code"] != "DIVISION_BY_ZERO" || se["retryable"] != false || se["message"] == "" {
		t.Errorf("divide by zero structuredContent %v, want code DIVISION_BY_ZERO, retryable false", se)
	}
	if attempts, _ := se["attempts"].([]any); len(attempts) != 1 {
		t.Errorf("divide by zero attempts %v, want one", se["attempts"])
	}
	if got := text(res); !strings.HasPrefix(got, "DIVISION_BY_ZERO: ") {
		t.Errorf("divide by zero text %q, want DIVISION_BY_ZERO: message", got)
	}

	res = call(t, cs, "everruns_add", map[string]any{"a": "two", "b": 3})
	if !res.IsError || structured(t, res)["code"] != invoke.CodeInvalidInput {
		t.Errorf("add with a string: %+v, want INVALID_INPUT", res)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "unknown tool") {
		t.Errorf("unknown tool: error %v, want the SDK's invalid-params \"unknown tool\" error", err)
	}
}

// protocols are the protocol versions the client tests speak: the SDK's
// latest (2026-07-28, stateless) and the last session-based one.
var protocols = []string{"", "2025-11-25", "2025-06-18"}

func protoName(p string) string {
	if p == "" {
		return "latest"
	}
	return p
}

func TestStreamable(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	for _, p := range protocols {
		t.Run(protoName(p), func(t *testing.T) {
			cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, HTTPClient: agentClient("agent-7")}, p, nil)
			if cs.InitializeResult().ServerInfo.Name != "caphub" {
				t.Errorf("server info %+v", cs.InitializeResult().ServerInfo)
			}
			checkBuiltinTools(t, listTools(t, cs))
			checkCalls(t, cs)
			if got := f.inv.lastCaller(); got != "agent-7" {
				t.Errorf("caller %q, want agent-7 (from %s)", got, identity.Header)
			}
		})
	}
}

func TestSSE(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	cs := connect(t, &mcp.SSEClientTransport{Endpoint: f.sseURL, HTTPClient: agentClient("agent-sse")}, "", nil)
	checkBuiltinTools(t, listTools(t, cs))
	checkCalls(t, cs)
	if got := f.inv.lastCaller(); got != "agent-sse" {
		t.Errorf("caller %q, want agent-sse (from the GET that opened the session)", got)
	}
}

// TestSSEBehindStripPrefix mounts the gateway under a prefix stripped by
// http.StripPrefix: the message endpoint the SSE stream announces must
// still be reachable.
func TestSSEBehindStripPrefix(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", f.handler))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	cs := connect(t, &mcp.SSEClientTransport{Endpoint: srv.URL + "/api/mcp/sse"}, "", nil)
	if res := call(t, cs, "everruns_add", map[string]any{"a": 1, "b": 1}); res.IsError {
		t.Fatalf("add: %s", text(res))
	}
}

// doubleDef is a new capability run by the built-in add handler.
func doubleDef(domain string) capability.Definition {
	return capability.Definition{
		URI: "ossa:" + domain + "/sum@1.0", Name: "sum", Domain: domain, Version: "1.0.0",
		Title: "Sum", Description: "Adds a and b (the built-in add, registered again for the gateway tests).",
		Input: capability.Schema{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "required": []any{"a", "b"}},
		Output:   capability.Schema{"type": "object", "properties": map[string]any{"result": map[string]any{"type": "number"}}},
		Errors:   []capability.ErrorDef{{Code: "RESULT_OUT_OF_RANGE", Description: "too large"}},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "everruns.add"}},
	}
}

func TestListChanged(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	type transport struct {
		name string
		make func() mcp.Transport
		p    string
	}
	var cases []transport
	for _, p := range protocols {
		cases = append(cases, transport{"streamable-" + protoName(p), func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: f.mcpURL} }, p})
	}
	cases = append(cases, transport{"sse", func() mcp.Transport { return &mcp.SSEClientTransport{Endpoint: f.sseURL} }, ""})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := connect(t, tc.make(), tc.p, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}})
			domain := fmt.Sprintf("gwtest%d", i)
			name := domain + "_sum"
			if _, ok := listTools(t, cs)[name]; ok {
				t.Fatalf("%s listed before it is registered", name)
			}
			if _, err := f.svc.Register(context.Background(), doubleDef(domain)); err != nil {
				t.Fatalf("register: %v", err)
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/tools/list_changed within 10s of registering a capability")
			}
			tool, ok := listTools(t, cs)[name]
			if !ok {
				t.Fatalf("%s not listed after list_changed", name)
			}
			if tool.Meta[mcpgw.MetaURI] != "ossa:"+domain+"/sum@1.0" {
				t.Errorf("%s _meta %v", name, tool.Meta)
			}
			res := call(t, cs, name, map[string]any{"a": 20, "b": 22})
			if res.IsError || structured(t, res)["result"] != 42.0 {
				t.Errorf("%s(20, 22) = %s", name, text(res))
			}
		})
	}
}

func TestDeprecationUpdatesTool(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	ctx := context.Background()
	if _, err := f.svc.Register(ctx, doubleDef("gwdep")); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Deprecate(ctx, "ossa", "gwdep", "sum", "1.0.0", registry.DeprecateRequest{DeprecatedBy: "ossa:everruns/add@1.0"}); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	tool := listTools(t, cs)["gwdep_sum"]
	if tool == nil || !strings.Contains(tool.Description, "Deprecated: use ossa:everruns/add@1.0 instead") {
		t.Fatalf("deprecated tool: %+v", tool)
	}
	res := call(t, cs, "gwdep_sum", map[string]any{"a": 1, "b": 2})
	if w, _ := res.Meta[mcpgw.MetaWarnings].([]any); len(w) == 0 {
		t.Errorf("call of a deprecated capability: _meta %v, want warnings", res.Meta)
	}
}

func TestInvocableOnly(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	ctx := context.Background()
	device := capability.Definition{URI: "ossa:gwdevice/send_text@1.0", Name: "send_text", Domain: "gwdevice", Version: "1.0.0",
		Description: "Agent OS intent.", Input: capability.Schema{"type": "object"}, Output: capability.Schema{},
		Bindings: capability.Bindings{Extra: map[string]any{"intent": map[string]any{"target": "android.intent.action.SEND"}}}}
	ext := capability.Definition{URI: "ossa:gwext/bundle@1.0", Name: "bundle", Domain: "gwext", Version: "1.0.0",
		Description: "Bundle with an extension binding only.", Input: capability.Schema{"type": "object"}, Output: capability.Schema{},
		Tools:    []string{"ossa:everruns/add@1.0"},
		Bindings: capability.Bindings{Extra: map[string]any{"x-ui": map[string]any{"panel": "calc"}}}}
	rtfs := capability.Definition{URI: "ossa:gwrtfs/hello@1.0", Name: "hello", Domain: "gwrtfs", Version: "1.0.0",
		Description: "CCOS capability implemented in RTFS.", Input: capability.Schema{"type": "object"}, Output: capability.Schema{},
		Bindings: capability.Bindings{Extra: map[string]any{"rtfs": map[string]any{"implementation": "metadata.rtfs.implementation"}}}}
	if _, err := f.svc.RegisterBatch(ctx, []capability.Definition{device, ext, rtfs}); err != nil {
		t.Fatal(err)
	}
	// A bundle without any binding cannot be registered through the
	// service; a store filled by other means may hold one.
	bare := capability.Definition{URI: "ossa:gwbare/bundle@1.0", Name: "bundle", Domain: "gwbare", Version: "1.0.0", Stability: "stable",
		Description: "Bundle without bindings.", Input: capability.Schema{"type": "object"}, Output: capability.Schema{}, Tools: []string{"ossa:everruns/add@1.0"}}
	digest, _ := registry.Digest(&bare)
	if _, err := f.store.Put(ctx, []registry.Record{{Key: registry.Key{Scheme: "ossa", Domain: "gwbare", Name: "bundle", Version: "1.0.0"}, Definition: bare, Digest: digest}}); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tools := f.gw.Tools()
	for _, n := range []string{"gwdevice_send_text", "gwext_bundle", "gwbare_bundle", "gwrtfs_hello"} {
		if _, ok := tools[n]; ok {
			t.Errorf("%s is listed, but caphub cannot invoke it", n)
		}
	}
	if len(tools) != offeredBuiltins() {
		t.Errorf("%d tools, want the %d built-ins that can run", len(tools), offeredBuiltins())
	}
}

// offeredBuiltins counts the built-ins offered as tools: all but those
// coming soon.
func offeredBuiltins() int {
	n := 0
	for _, d := range builtin.Definitions() {
		if !d.ComingSoon() {
			n++
		}
	}
	return n
}

// TestToolNameCollision serves two capabilities whose plain tool names are
// equal: both get hashed names, whichever was stored first. Registration
// refuses the second now (registry: tool-name-taken), so they are stored
// as in a registry from before that rule.
func TestToolNameCollision(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	ctx := context.Background()
	a := doubleDef("mcp")
	a.URI, a.Name = "ossa:mcp/x_y@1.0", "x_y"
	b := doubleDef("x")
	b.URI, b.Name = "mcp:x/y@1.0", "y"
	b.Bindings = capability.Bindings{MCP: &capability.MCPBinding{Server: "x", Tool: "y"}}
	if capability.ToolName(a.URI) != "mcp_x_y" || capability.ToolName(b.URI) != "mcp_x_y" {
		t.Fatalf("the test needs colliding names: %s, %s", capability.ToolName(a.URI), capability.ToolName(b.URI))
	}
	store := func(d capability.Definition) {
		t.Helper()
		d.Stability = capability.StabilityStable
		k, _ := registry.KeyOf(&d)
		digest, _ := registry.Digest(&d)
		if _, err := f.store.Put(ctx, []registry.Record{{Key: k, Definition: d, Digest: digest}}); err != nil {
			t.Fatal(err)
		}
	}
	store(a)
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if f.gw.Tools()["mcp_x_y"] != "ossa:mcp/x_y@1.0" {
		t.Fatalf("alone, ossa:mcp/x_y is not mcp_x_y: %v", f.gw.Tools())
	}
	if _, err := f.svc.Register(ctx, b); err == nil || !strings.Contains(err.Error(), "mcp_x_y") {
		t.Fatalf("registering mcp:x/y beside ossa:mcp/x_y: %v; want it refused", err)
	}
	store(b)
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tools := f.gw.Tools()
	want := capability.ToolNames([]string{"ossa:mcp/x_y@1.0", "mcp:x/y@1.0"})
	for uri, name := range want {
		if name == "mcp_x_y" || !strings.HasPrefix(name, "mcp_x_y_") || tools[name] != uri {
			t.Errorf("%s: name %q (tools %v), want a hashed mcp_x_y_<hash> serving it", uri, name, tools)
		}
	}
	if _, ok := tools["mcp_x_y"]; ok {
		t.Error("mcp_x_y still served after the collision")
	}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	res := call(t, cs, want["ossa:mcp/x_y@1.0"], map[string]any{"a": 1, "b": 2})
	if res.IsError || structured(t, res)["result"] != 3.0 {
		t.Errorf("calling the hashed name: %s", text(res))
	}
}

func TestSearchMode(t *testing.T) {
	f := newFixture(t, mcpgw.Options{Mode: mcpgw.ModeSearch})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	tools := listTools(t, cs)
	if len(tools) != 3 || tools[mcpgw.ToolFindCapabilities] == nil || tools[mcpgw.ToolDescribeCapability] == nil || tools[mcpgw.ToolInvokeCapability] == nil {
		t.Fatalf("search mode lists %d tools, want find_capabilities, describe_capability and invoke_capability", len(tools))
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "find_capabilities") || !strings.Contains(ins, "describe_capability") {
		t.Errorf("search mode instructions do not tell the flow: %q", ins)
	}
	res := call(t, cs, mcpgw.ToolFindCapabilities, map[string]any{"query": "weather"})
	if res.IsError {
		t.Fatalf("find_capabilities: %s", text(res))
	}
	found := structured(t, res)
	caps, _ := found["capabilities"].([]any)
	byURI := map[string]map[string]any{}
	for _, c := range caps {
		m := c.(map[string]any)
		byURI[m["uri"].(string)] = m
	}
	for _, uri := range []string{"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0"} {
		m := byURI[uri]
		if m == nil {
			t.Errorf("find_capabilities(weather) lacks %s: %v", uri, caps)
			continue
		}
		// A summary: parameters in a line, no schemas.
		if m["input_schema"] != nil || m["output_schema"] != nil {
			t.Errorf("%s: find_capabilities answers schemas: %v", uri, m)
		}
		if p, _ := m["params"].(string); !strings.Contains(p, "city") {
			t.Errorf("%s params %q, want its city parameter", uri, m["params"])
		}
		if m["tool_name"] != capability.ToolName(uri) {
			t.Errorf("%s tool_name %v", uri, m["tool_name"])
		}
	}

	// describe_capability gives the schemas.
	res = call(t, cs, mcpgw.ToolDescribeCapability, map[string]any{"uri": "ossa:everruns/get_weather@1"})
	if res.IsError {
		t.Fatalf("describe_capability: %s", text(res))
	}
	desc := structured(t, res)
	in, _ := desc["input_schema"].(map[string]any)
	props, _ := in["properties"].(map[string]any)
	if desc["uri"] != "ossa:everruns/get_weather@1.0" || in["type"] != "object" || props["city"] == nil {
		t.Errorf("describe_capability(get_weather): %v", desc)
	}
	if out, _ := desc["output_schema"].(map[string]any); out["type"] != "object" {
		t.Errorf("describe_capability(get_weather) output_schema %v", desc["output_schema"])
	}
	if b, _ := desc["bindings"].([]any); len(b) != 1 || b[0] != "native" || desc["invocable"] != true {
		t.Errorf("describe_capability(get_weather) bindings %v, invocable %v", desc["bindings"], desc["invocable"])
	}
	res = call(t, cs, mcpgw.ToolDescribeCapability, map[string]any{"uri": "ossa:everruns/divide@1.0"})
	if errs, _ := structured(t, res)["errors"].([]any); res.IsError || len(errs) == 0 {
		t.Errorf("describe_capability(divide) lists no error codes: %s", text(res))
	}
	for _, bad := range []map[string]any{{"uri": "ossa:nowhere/nothing@1.0"}, {"uri": "not a uri"}} {
		res = call(t, cs, mcpgw.ToolDescribeCapability, bad)
		if !res.IsError || structured(t, res)["code"] != invoke.CodeNotFound {
			t.Errorf("describe_capability(%v): %s, want NOT_FOUND", bad, text(res))
		}
	}
	res = call(t, cs, mcpgw.ToolDescribeCapability, map[string]any{})
	if !res.IsError || structured(t, res)["code"] != invoke.CodeInvalidInput {
		t.Errorf("describe_capability without uri: %s, want INVALID_INPUT", text(res))
	}

	// 8 hits by default, at most 25.
	var more []capability.Definition
	for i := range 30 {
		more = append(more, doubleDef(fmt.Sprintf("sum-%d", i)))
	}
	if _, err := f.svc.RegisterBatch(context.Background(), more); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ limit, want int }{{0, 8}, {100, 25}, {12, 12}} {
		args := map[string]any{}
		if tc.limit > 0 {
			args["limit"] = tc.limit
		}
		res = call(t, cs, mcpgw.ToolFindCapabilities, args)
		if got := structured(t, res)["count"]; got != float64(tc.want) {
			t.Errorf("find_capabilities(limit %d): %v capabilities, want %d", tc.limit, got, tc.want)
		}
	}

	res = call(t, cs, mcpgw.ToolFindCapabilities, map[string]any{"query": "", "domain": "everruns", "limit": 3})
	if n := found["count"]; res.IsError || structured(t, res)["count"] != 3.0 {
		t.Errorf("find_capabilities(domain everruns, limit 3): %s (count %v)", text(res), n)
	}
	res = call(t, cs, mcpgw.ToolFindCapabilities, map[string]any{"limit": 0})
	if !res.IsError || structured(t, res)["code"] != invoke.CodeInvalidInput {
		t.Errorf("limit 0: %s, want INVALID_INPUT", text(res))
	}
	res = call(t, cs, mcpgw.ToolFindCapabilities, map[string]any{"qeury": "typo"})
	if !res.IsError || !strings.Contains(text(res), "qeury") {
		t.Errorf("unknown field: %s, want INVALID_INPUT naming it", text(res))
	}

	res = call(t, cs, mcpgw.ToolInvokeCapability, map[string]any{"uri": "ossa:everruns/get_weather@1.0", "input": map[string]any{"city": "Paris"}})
	if res.IsError {
		t.Fatalf("invoke_capability get_weather: %s", text(res))
	}
	got := structured(t, res)
	out, _ := got["output"].(map[string]any)
	if got["uri"] != "ossa:everruns/get_weather@1.0" || got["binding"] != "native" || out == nil {
		t.Errorf("invoke_capability result %v", got)
	}
	res = call(t, cs, mcpgw.ToolInvokeCapability, map[string]any{"uri": "ossa:everruns/divide@1.0", "input": map[string]any{"a": 1, "b": 0}})
	if !res.IsError || structured(t, res)["code"] != "DIVISION_BY_ZERO" {
		t.Errorf("invoke_capability divide by zero: %s", text(res))
	}
	res = call(t, cs, mcpgw.ToolInvokeCapability, map[string]any{"uri": "ossa:nowhere/nothing@1.0"})
	if !res.IsError || structured(t, res)["code"] != invoke.CodeNotFound {
		t.Errorf("invoke_capability of an unknown URI: %s", text(res))
	}
}

func TestStdio(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.gw.ServeStdio(ctx, serverR, serverW) }()
	cs := connect(t, &mcp.IOTransport{Reader: clientR, Writer: clientW}, "", nil)
	checkBuiltinTools(t, listTools(t, cs))
	checkCalls(t, cs)
	if got := f.inv.lastCaller(); got != "" {
		t.Errorf("stdio caller %q, want anonymous", got)
	}
	cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio after the client closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("ServeStdio did not return after the client closed")
	}
	cancel()
}

func TestStdioCancel(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	defer clientR.Close()
	defer clientW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.gw.ServeStdio(ctx, serverR, serverW) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after its context ended")
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends an initialize with the given Host and Origin ("" for none).
func post(t *testing.T, url, host, origin string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
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
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHostAndOriginValidation(t *testing.T) {
	f := newFixture(t, mcpgw.Options{AllowedHosts: []string{"caphub.internal"}, AllowedOrigins: []string{"https://app.example", "http://tools.example:*"}})
	port := f.srv.Listener.Addr().String()[strings.LastIndex(f.srv.Listener.Addr().String(), ":"):]
	cases := []struct {
		name, host, origin string
		want               int
	}{
		{"loopback, no origin", "", "", 200},
		{"localhost host and origin", "localhost" + port, "http://localhost" + port, 200},
		{"[::1] host", "[::1]" + port, "", 200},
		{"https loopback origin", "", "https://127.0.0.1:9999", 200},
		{"evil origin", "", "http://evil.example", 403},
		{"evil host", "evil.example", "", 403},
		{"evil host and origin (DNS rebinding)", "evil.example.com" + port, "http://evil.example.com" + port, 403},
		{"null origin", "", "null", 403},
		{"allowed host", "caphub.internal" + port, "", 200},
		{"allowed origin", "", "https://app.example", 200},
		{"allowed origin any port", "", "http://tools.example:8080", 200},
		{"allowed origin other scheme", "", "http://app.example", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, url := range []string{f.mcpURL, f.sseURL} {
				got := post(t, url, tc.host, tc.origin)
				if url == f.sseURL && tc.want == 200 {
					// The SSE endpoint wants a session id on POST: 400, not 403.
					if got == http.StatusForbidden {
						t.Errorf("POST %s (Host %q, Origin %q): 403, want it past the checks", url, tc.host, tc.origin)
					}
					continue
				}
				if got != tc.want {
					t.Errorf("POST %s (Host %q, Origin %q): %d, want %d", url, tc.host, tc.origin, got, tc.want)
				}
			}
		})
	}
	// The SSE GET that opens a session is checked too.
	req, _ := http.NewRequest("GET", f.sseURL, nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("SSE GET from an evil origin: %d, want 403", resp.StatusCode)
	}
}

func TestCheckMode(t *testing.T) {
	for _, m := range []string{"", "tools", "search"} {
		if err := mcpgw.CheckMode(m); err != nil {
			t.Errorf("CheckMode(%q): %v", m, err)
		}
	}
	if err := mcpgw.CheckMode("all"); err == nil || !strings.Contains(err.Error(), "search") {
		t.Errorf("CheckMode(all) = %v, want an error naming the modes", err)
	}
}

func TestLoggingSetLevel(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	//lint:ignore SA1019 the test checks that the gateway still serves session logging (deprecated from protocol 2026-07-28)
	logs := make(chan *mcp.LoggingMessageParams, 4)
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "2025-11-25", &mcp.ClientOptions{
		//lint:ignore SA1019 the test checks that the gateway still serves session logging (deprecated from protocol 2026-07-28)
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//lint:ignore SA1019 the test checks that the gateway still serves session logging (deprecated from protocol 2026-07-28)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	call(t, cs, "everruns_divide", map[string]any{"a": 1, "b": 0})
	select {
	case p := <-logs:
		if p.Level != "warning" || !strings.Contains(fmt.Sprint(p.Data), "DIVISION_BY_ZERO") {
			t.Errorf("log message %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Error("no log message for a failed call after logging/setLevel info")
	}
}

func TestCloseEndsSessions(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	cs := connect(t, &mcp.SSEClientTransport{Endpoint: f.sseURL}, "", nil)
	f.gw.Close()
	done := make(chan struct{})
	go func() { cs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the SSE session is still open after Close")
	}
	if got := post(t, f.mcpURL, "", ""); got != http.StatusServiceUnavailable {
		t.Errorf("POST after Close: %d, want 503", got)
	}
}

// TestErrorInMetaWhenSchemaCannotAdmitIt registers a capability whose output
// schema cannot be nested under anyOf (it has an $id): its tool advertises
// the schema as it is, and a failed call carries the error in _meta.
func TestErrorInMetaWhenSchemaCannotAdmitIt(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	ctx := context.Background()
	d := doubleDef("gwid")
	d.Output = capability.Schema{"$id": "https://caphub.dev/test/out.json", "type": "object", "properties": map[string]any{"result": map[string]any{"type": "number"}}}
	d.Errors = append(d.Errors, capability.ErrorDef{Code: "DIVISION_BY_ZERO", Description: "b is zero"})
	d.Bindings.Native.Handler = "everruns.divide"
	if _, err := f.svc.Register(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	tool := listTools(t, cs)["gwid_sum"]
	if out, _ := tool.OutputSchema.(map[string]any); out["$id"] != "https://caphub.dev/test/out.json" {
		t.Fatalf("outputSchema %v, want the capability's own", tool.OutputSchema)
	}
	res := call(t, cs, "gwid_sum", map[string]any{"a": 1, "b": 0})
	if !res.IsError || res.StructuredContent != nil {
		t.Fatalf("result %+v, want a tool error without structuredContent", res)
	}
	te, _ := res.Meta[mcpgw.MetaError].(map[string]any)
	if te["code"] != "DIVISION_BY_ZERO" || !strings.HasPrefix(text(res), "DIVISION_BY_ZERO: ") {
		t.Errorf("error _meta %v, text %q", res.Meta, text(res))
	}
}

// TestListChangedDebounce registers 30 capabilities one by one: the client
// gets a few notifications, not one per registration, and then sees all.
func TestListChangedDebounce(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	var mu sync.Mutex
	notes := 0
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "2025-11-25", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		mu.Lock()
		notes++
		mu.Unlock()
	}})
	const n = 30
	for i := range n {
		if _, err := f.svc.Register(context.Background(), doubleDef(fmt.Sprintf("gwburst%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	missing := n
	eventually(t, func() bool {
		tools := listTools(t, cs)
		missing = 0
		for i := range n {
			if _, ok := tools[fmt.Sprintf("gwburst%d_sum", i)]; !ok {
				missing++
			}
		}
		return missing == 0
	}, func() {
		t.Fatalf("%d of %d new capabilities still not listed after 10s", missing, n)
	})
	// The notification of the last rebuild may follow the listing.
	eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return notes >= 1
	}, func() {})
	mu.Lock()
	defer mu.Unlock()
	if notes < 1 || notes > n/3 {
		t.Errorf("%d list_changed notifications for %d registrations, want a few (bursts are debounced)", notes, n)
	}
	t.Logf("%d registrations, %d notifications", n, notes)
}
