package mcpgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gitHub is caphub with GitHub's REST API registered beside the
// built-ins (1,247 invocable capabilities), set up once per test binary
// and shared read-only by the tests that need a large catalog; TestMain
// removes it.
var gitHub struct {
	once sync.Once
	dir  string
	f    *fixture // store, svc, pipe, bindings and inv only
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gitHub.f != nil {
		gitHub.f.store.Close()
	}
	if gitHub.dir != "" {
		os.RemoveAll(gitHub.dir)
	}
	testpeers.RemoveBuilt()
	os.Exit(code)
}

// gitHubDefinitions returns GitHub's REST API (npm @octokit/openapi) as
// definitions, 1,223 capabilities with http bindings, or skips the test.
func gitHubDefinitions(t testing.TB) []capability.Definition {
	t.Helper()
	p := filepath.Join(testpeers.NPMPackage(t, "@octokit/openapi"), "generated", "api.github.com.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Import(context.Background(), p, data, openapi.Options{Domain: "github"})
	if err != nil {
		t.Fatalf("importing GitHub's API from %s: %v", p, err)
	}
	return res.Definitions
}

// gitHubFixture serves a gateway with opts over the shared caphub holding
// GitHub's API (see gitHub), or skips the test.
func gitHubFixture(t testing.TB, opts mcpgw.Options) *fixture {
	t.Helper()
	testpeers.NPMPackage(t, "@octokit/openapi")
	gitHub.once.Do(func() {
		defs := gitHubDefinitions(t)
		if gitHub.dir, gitHub.err = os.MkdirTemp("", "mcpgw-github-"); gitHub.err != nil {
			return
		}
		st, svc, bindings, pipe, inv := newCaphubIn(t, gitHub.dir)
		if _, err := svc.RegisterBatch(context.Background(), defs); err != nil {
			gitHub.err = fmt.Errorf("registering GitHub's API: %w", err)
			st.Close()
			return
		}
		gitHub.f = &fixture{store: st, svc: svc, pipe: pipe, bindings: bindings, inv: inv}
	})
	if gitHub.f == nil {
		t.Fatalf("the shared GitHub registry could not be set up (see the first test that tried): %v", gitHub.err)
	}
	base := *gitHub.f
	return serveGateway(t, &base, opts)
}

// rpcSession speaks JSON-RPC to a streamable HTTP endpoint with plain HTTP
// requests (protocol 2025-11-25), so that a test sees every answer's bytes.
type rpcSession struct {
	t       testing.TB
	url     string
	session string
	id      int
	init    map[string]any // the initialize result
}

// rpcAnswer is one JSON-RPC answer and its size on the wire.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	size int
}

func newRPCSession(t testing.TB, url string) *rpcSession {
	t.Helper()
	s := &rpcSession{t: t, url: url}
	a, hdr := s.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "rpc-test", "version": "1"}})
	if a.Error != nil {
		t.Fatalf("initialize: %s", a.Error.Message)
	}
	s.session = hdr.Get("Mcp-Session-Id")
	if err := json.Unmarshal(a.Result, &s.init); err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// instructions are the server's instructions at initialize.
func (s *rpcSession) instructions() string {
	v, _ := s.init["instructions"].(string)
	return v
}

func (s *rpcSession) send(body string) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url, bytes.NewReader([]byte(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp, data
}

// post sends a request and decodes its answer.
func (s *rpcSession) post(method string, params any) (rpcAnswer, http.Header) {
	s.t.Helper()
	s.id++
	p, err := json.Marshal(params)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, data := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.id, method, p))
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s: HTTP %s: %.500s", method, resp.Status, data)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = lastEvent(data)
	}
	var a rpcAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		s.t.Fatalf("%s: the answer is not JSON-RPC: %v: %.500s", method, err, data)
	}
	a.size = len(data)
	return a, resp.Header
}

// lastEvent returns the data of the last event of an SSE stream (a request's
// stream ends with its answer).
func lastEvent(stream []byte) []byte {
	var last []byte
	for _, event := range bytes.Split(bytes.ReplaceAll(stream, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		var data [][]byte
		for _, line := range bytes.Split(event, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" ")))
			}
		}
		if len(data) > 0 {
			last = bytes.Join(data, []byte("\n"))
		}
	}
	return last
}

// callTool calls a tool and decodes its structured content into out.
func (s *rpcSession) callTool(name string, args map[string]any, out any) rpcAnswer {
	s.t.Helper()
	a, _ := s.post("tools/call", map[string]any{"name": name, "arguments": args})
	if a.Error != nil {
		s.t.Fatalf("tools/call %s: %s", name, a.Error.Message)
	}
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(a.Result, &res); err != nil {
		s.t.Fatal(err)
	}
	if res.IsError {
		s.t.Fatalf("tools/call %s failed: %s", name, res.StructuredContent)
	}
	if out != nil {
		if err := json.Unmarshal(res.StructuredContent, out); err != nil {
			s.t.Fatalf("tools/call %s: structured content %.300s: %v", name, res.StructuredContent, err)
		}
	}
	return a
}

// listAll pages through tools/list and returns every tool with the size
// of each page's answer.
func (s *rpcSession) listAll() (tools []map[string]any, pages []int) {
	s.t.Helper()
	cursor := ""
	for range 10000 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		a, _ := s.post("tools/list", params)
		if a.Error != nil {
			s.t.Fatalf("tools/list (cursor %q): %d %s", cursor, a.Error.Code, a.Error.Message)
		}
		var page struct {
			Tools      []map[string]any `json:"tools"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(a.Result, &page); err != nil {
			s.t.Fatal(err)
		}
		tools = append(tools, page.Tools...)
		pages = append(pages, a.size)
		if page.NextCursor == "" {
			return tools, pages
		}
		cursor = page.NextCursor
	}
	s.t.Fatal("tools/list did not end in 10,000 pages")
	return nil, nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestGitHubFindAnswerSize measures find_capabilities with 8 hits over
// GitHub's API: the answer, text and structured content together, stays
// within 8 KB (it was 47 to 196 KB with the hits' whole schemas).
func TestGitHubFindAnswerSize(t *testing.T) {
	f := gitHubFixture(t, mcpgw.Options{Mode: mcpgw.ModeSearch})
	s := newRPCSession(t, f.mcpURL)
	for _, q := range []string{"create an issue", "list pull requests", "repository webhooks", "list repositories", "create a repository", "update a repository"} {
		var found struct {
			Count        int                  `json:"count"`
			Capabilities []capability.Summary `json:"capabilities"`
		}
		a := s.callTool(mcpgw.ToolFindCapabilities, map[string]any{"query": q}, &found)
		t.Logf("find_capabilities(%q): %d hits in %d bytes", q, found.Count, a.size)
		if found.Count != 8 || len(found.Capabilities) != 8 {
			t.Errorf("find_capabilities(%q): %d hits, want 8 (the default)", q, found.Count)
		}
		if a.size > 8<<10 {
			t.Errorf("find_capabilities(%q): the answer is %d bytes, over 8 KB", q, a.size)
		}
		for _, c := range found.Capabilities {
			if c.URI == "" || c.ToolName == "" || c.Description == "" {
				t.Errorf("find_capabilities(%q): incomplete summary %+v", q, c)
			}
		}
	}
	// The ranking finds what an agent means, and says which words no
	// capability has, with the nearest known ones.
	var found struct {
		Capabilities []capability.Summary   `json:"capabilities"`
		Unknown      []registry.UnknownWord `json:"unknown_words"`
	}
	s.callTool(mcpgw.ToolFindCapabilities, map[string]any{"query": "open a new bug report in a repositry", "limit": 3}, &found)
	if len(found.Capabilities) == 0 || found.Capabilities[0].ToolName != "github_issues_create" ||
		len(found.Unknown) != 1 || found.Unknown[0].Word != "repositry" || len(found.Unknown[0].DidYouMean) == 0 {
		t.Errorf("find_capabilities of a phrase with a misspelt word: %+v", found)
	}
	// The whole definition is one call away.
	var d struct {
		URI         string         `json:"uri"`
		InputSchema map[string]any `json:"input_schema"`
		Output      map[string]any `json:"output_schema"`
		Bindings    []string       `json:"bindings"`
	}
	a := s.callTool(mcpgw.ToolDescribeCapability, map[string]any{"uri": "ossa:github/issues_create@23.0"}, &d)
	props, _ := d.InputSchema["properties"].(map[string]any)
	if d.URI != "ossa:github/issues_create@23.0" || props["title"] == nil || d.Output == nil || len(d.Bindings) != 1 || d.Bindings[0] != "http" {
		t.Errorf("describe_capability(issues_create): uri %s, input %v, bindings %v", d.URI, d.InputSchema, d.Bindings)
	}
	t.Logf("describe_capability(issues_create): %d bytes", a.size)
}

// registerSums registers n copies of the built-in add, in domains
// prefix-0 … prefix-(n-1).
func registerSums(t testing.TB, f *fixture, prefix string, n int) {
	t.Helper()
	var defs []capability.Definition
	for i := range n {
		defs = append(defs, doubleDef(fmt.Sprintf("%s-%d", prefix, i)))
	}
	if _, err := f.svc.RegisterBatch(context.Background(), defs); err != nil {
		t.Fatal(err)
	}
}

// listChanged returns client options that count notifications/tools/list_changed.
func listChanged() (*mcp.ClientOptions, chan struct{}) {
	changed := make(chan struct{}, 64)
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, changed
}

// TestLargeCatalogServesSearch: past MaxTools, the tools mode serves the
// search tools instead, says so in its instructions, and follows
// registrations made while it runs (list_changed).
func TestLargeCatalogServesSearch(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxTools: 30})
	opts, changed := listChanged()
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", opts)
	if n := len(listTools(t, cs)); n != len(f.gw.Tools()) || n < 20 {
		t.Fatalf("within the limit: %d tools listed, want the %d built-ins", n, len(f.gw.Tools()))
	}
	if ins := cs.InitializeResult().Instructions; strings.Contains(ins, "find_capabilities") || f.gw.Serving() != mcpgw.ModeTools {
		t.Errorf("within the limit the gateway serves %s, instructions %q", f.gw.Serving(), ins)
	}

	registerSums(t, f, "sum", 10) // 34 invocable capabilities: past 30
	var tools map[string]*mcp.Tool
	eventually(t, func() bool {
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
		tools = listTools(t, cs)
		return len(tools) == 3
	}, func() { t.Fatalf("past the limit: still %d tools listed, want the 3 search tools", len(tools)) })
	for _, name := range []string{mcpgw.ToolFindCapabilities, mcpgw.ToolDescribeCapability, mcpgw.ToolInvokeCapability} {
		if tools[name] == nil {
			t.Errorf("past the limit: no %s", name)
		}
	}
	if f.gw.Serving() != mcpgw.ModeSearch || f.gw.Mode() != mcpgw.ModeTools {
		t.Errorf("Serving %s, Mode %s; want search served in the tools mode", f.gw.Serving(), f.gw.Mode())
	}
	// A new session is told why, at initialize.
	cs2 := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "2025-11-25", nil)
	if ins := cs2.InitializeResult().Instructions; !strings.Contains(ins, "more than the 30") || !strings.Contains(ins, "describe_capability") {
		t.Errorf("past the limit, instructions %q do not say why the search tools are served", ins)
	}
	res := call(t, cs2, mcpgw.ToolFindCapabilities, map[string]any{"query": "sum", "domain": "sum-3"})
	if caps, _ := structured(t, res)["capabilities"].([]any); res.IsError || len(caps) != 1 {
		t.Errorf("find_capabilities(sum-3): %s", text(res))
	}
	res = call(t, cs2, mcpgw.ToolInvokeCapability, map[string]any{"uri": "ossa:sum-3/sum@1.0", "input": map[string]any{"a": 1, "b": 2}})
	if res.IsError || structured(t, res)["output"].(map[string]any)["result"] != 3.0 {
		t.Errorf("invoke_capability(sum-3): %s", text(res))
	}
}

// TestLargeCatalogRefuse: past MaxTools with LargeCatalogRefuse, tools/list
// is refused with an error that says what to do; calls still run.
func TestLargeCatalogRefuse(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxTools: 30, LargeCatalog: mcpgw.LargeCatalogRefuse})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	if len(listTools(t, cs)) == 0 {
		t.Fatal("within the limit: no tools listed")
	}
	registerSums(t, f, "sum", 10)
	var err error
	eventually(t, func() bool {
		_, err = cs.ListTools(context.Background(), nil)
		return err != nil
	}, func() { t.Fatal("past the limit: tools/list still answers") })
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcpgw.CodeCatalogTooLarge {
		t.Fatalf("refused tools/list: %v, want JSON-RPC error %d", err, mcpgw.CodeCatalogTooLarge)
	}
	for _, want := range []string{"more than the 30", "/mcp/agents/{id}", "search tools", "raise the tool limit"} {
		if !strings.Contains(werr.Message, want) {
			t.Errorf("refusal %q does not say %q", werr.Message, want)
		}
	}
	var data map[string]int
	if json.Unmarshal(werr.Data, &data) != nil || data["max_tools"] != 30 || data["tools"] != len(f.gw.Tools()) {
		t.Errorf("refusal data %s", werr.Data)
	}
	res := call(t, cs, "everruns_add", map[string]any{"a": 2, "b": 3})
	if res.IsError || structured(t, res)["result"] != 5.0 {
		t.Errorf("a call past the limit: %s", text(res))
	}
	cs2 := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
	if ins := cs2.InitializeResult().Instructions; !strings.Contains(ins, "tools/list is refused") {
		t.Errorf("instructions past the limit %q do not say tools/list is refused", ins)
	}
}

// hidingRegistry is a real registry whose List leaves out one domain
// while hide is set: capabilities disappear without a way to delete them.
type hidingRegistry struct {
	registry.API
	domain string
	hide   atomic.Bool
}

func (h *hidingRegistry) List(ctx context.Context, f registry.ListFilter) (registry.Page, error) {
	p, err := h.API.List(ctx, f)
	if err != nil || !h.hide.Load() {
		return p, err
	}
	kept := p.Items[:0:0]
	for _, r := range p.Items {
		if !strings.HasPrefix(r.Key.Domain, h.domain) {
			kept = append(kept, r)
		}
	}
	p.Items = kept
	return p, nil
}

// TestLargeCatalogBackToTools: a catalog that falls back within MaxTools is
// served one tool per capability again.
func TestLargeCatalogBackToTools(t *testing.T) {
	st, svc, _, _, inv := newCaphub(t)
	t.Cleanup(func() { st.Close() })
	f := &fixture{store: st, svc: svc, inv: inv}
	registerSums(t, f, "extra", 10)
	reg := &hidingRegistry{API: svc, domain: "extra-"}
	gw := mcpgw.New(reg, nil, inv, mcpgw.Options{MaxTools: 30, Log: quietLog()})
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	opts, changed := listChanged()
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: srv.URL}, "", opts)
	if tools := listTools(t, cs); len(tools) != 3 || gw.Serving() != mcpgw.ModeSearch {
		t.Fatalf("past the limit: %d tools, serving %s", len(tools), gw.Serving())
	}
	reg.hide.Store(true)
	if err := gw.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed when the catalog fell back within the limit")
	}
	tools := listTools(t, cs)
	if tools["everruns_add"] == nil || tools[mcpgw.ToolFindCapabilities] != nil || gw.Serving() != mcpgw.ModeTools {
		t.Errorf("back within the limit: serving %s, %d tools", gw.Serving(), len(tools))
	}
	if res := call(t, cs, "everruns_add", map[string]any{"a": 1, "b": 1}); res.IsError {
		t.Errorf("everruns_add back within the limit: %s", text(res))
	}
}

// TestToolsListBoundedBytes lists GitHub's whole API in the tools mode (no
// tool limit): every tools/list answer stays within MaxListBytes, the
// cursors reach every tool once, and the Go SDK's client follows them.
// One answer held all 1,247 tools before (7.9 MB).
func TestToolsListBoundedBytes(t *testing.T) {
	for _, bound := range []int{0, 64 << 10} {
		t.Run(fmt.Sprint("max=", bound), func(t *testing.T) {
			f := gitHubFixture(t, mcpgw.Options{MaxTools: -1, MaxListBytes: bound})
			if bound == 0 {
				bound = mcpgw.DefaultMaxListBytes
			}
			s := newRPCSession(t, f.mcpURL)
			tools, pages := s.listAll()
			t.Logf("tools/list: %d tools in %d pages, %d bytes, the largest page %d bytes", len(tools), len(pages), sum(pages), slices.Max(pages))
			for i, n := range pages {
				if n > bound {
					t.Errorf("page %d is %d bytes, over %d", i, n, bound)
				}
			}
			names := map[string]bool{}
			byName := map[string]map[string]any{}
			for _, tool := range tools {
				name, _ := tool["name"].(string)
				if names[name] {
					t.Errorf("%s listed twice", name)
				}
				names[name] = true
				byName[name] = tool
			}
			// The 433 KB output schema of the timeline's events is left out
			// of its listing; small ones stay.
			if tl := byName["github_issues_list_events_for_timeline"]; tl == nil || tl["outputSchema"] != nil {
				t.Errorf("github_issues_list_events_for_timeline listed as %.300v, want it without its output schema", tl)
			}
			if add := byName["everruns_add"]; add == nil || add["outputSchema"] == nil {
				t.Errorf("everruns_add listed as %v, want it with its output schema", add)
			}
			if want := len(f.gw.Tools()); len(names) != want || want < 1200 {
				t.Errorf("the pages list %d tools, want all %d", len(names), want)
			}
			if a, _ := s.post("tools/list", map[string]any{"cursor": "bm90IG91cnM"}); a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("tools/list with a foreign cursor: %+v, want invalid params", a.Error)
			}
			cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL}, "", nil)
			if n := len(listTools(t, cs)); n != len(names) {
				t.Errorf("the Go SDK's client lists %d tools, want %d", n, len(names))
			}
		})
	}
}

// TestGitHubDefaultServesSearch: with the defaults, GitHub's API (past
// DefaultMaxTools) is served through the search tools: tools/list is three
// tools, a few KB.
func TestGitHubDefaultServesSearch(t *testing.T) {
	f := gitHubFixture(t, mcpgw.Options{})
	s := newRPCSession(t, f.mcpURL)
	tools, pages := s.listAll()
	t.Logf("tools/list: %d tools, %d bytes", len(tools), sum(pages))
	if len(tools) != 3 || sum(pages) > 16<<10 {
		t.Errorf("tools/list: %d tools in %d bytes, want the 3 search tools", len(tools), sum(pages))
	}
	if ins := s.instructions(); !strings.Contains(ins, fmt.Sprintf("more than the %d", mcpgw.DefaultMaxTools)) {
		t.Errorf("instructions %q", ins)
	}
}

// TestAgentEndpointKeepsItsTools: an agent's endpoint lists the agent's own
// tools whatever their number (150 GitHub capabilities, past MaxTools), a
// page of at most MaxListBytes at a time.
func TestAgentEndpointKeepsItsTools(t *testing.T) {
	f := gitHubFixture(t, mcpgw.Options{})
	ctx := context.Background()
	agents := agent.NewAgents(f.store, f.svc)
	m, issues, err := agent.ReadManifest("agent.yaml", []byte(strings.ReplaceAll(agentManifest, "calculator", "octo")))
	if err != nil || len(issues) > 0 {
		t.Fatalf("read manifest: %v %v", err, issues)
	}
	if _, _, err := agents.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, d := range gitHubDefinitions(t)[:150] {
		uris = append(uris, d.URI)
	}
	if _, err := agents.SetCapabilities(ctx, "octo", uris); err != nil {
		t.Fatal(err)
	}
	const bound = 64 << 10
	ag := mcpgw.NewAgentGateways(agents, f.inv, f.store, mcpgw.Options{Version: "test", Log: quietLog(), MaxTools: 10, MaxListBytes: bound})
	srv := httptest.NewServer(ag.Handler())
	t.Cleanup(func() { srv.CloseClientConnections(); ag.Close(); srv.Close() })
	url := srv.URL + "/mcp/agents/octo"

	tools, pages := newRPCSession(t, url).listAll()
	t.Logf("agent tools/list: %d tools in %d pages, the largest %d bytes", len(tools), len(pages), slices.Max(pages))
	if len(tools) != 150 || len(pages) < 2 {
		t.Errorf("agent tools/list: %d tools in %d pages, want its 150 tools in pages", len(tools), len(pages))
	}
	if slices.Max(pages) > bound {
		t.Errorf("an agent tools/list page is %d bytes, over %d", slices.Max(pages), bound)
	}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: url}, "", nil)
	if n := len(listTools(t, cs)); n != 150 {
		t.Errorf("the Go SDK's client lists %d of the agent's tools, want 150", n)
	}
}

// TestToolLargerThanAPage: a tool whose output schema alone makes it
// larger than a tools/list page is listed without it; one whose input
// schema does is left out of the list, and can still be called.
func TestToolLargerThanAPage(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxListBytes: mcpgw.MinMaxListBytes})
	big := map[string]any{}
	for i := range 400 {
		big[fmt.Sprintf("field_%03d", i)] = map[string]any{"type": "number", "description": "one of many fields"}
	}
	wideOut := doubleDef("wide-output")
	wideOut.Output = capability.Schema{"type": "object", "properties": big}
	wideIn := doubleDef("wide-input")
	wideIn.Input["properties"].(map[string]any)["extra"] = map[string]any{"type": "object", "properties": big}
	if _, err := f.svc.RegisterBatch(context.Background(), []capability.Definition{wideOut, wideIn}); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newRPCSession(t, f.mcpURL)
	tools, pages := s.listAll()
	byName := map[string]map[string]any{}
	for _, tool := range tools {
		byName[tool["name"].(string)] = tool
	}
	if slices.Max(pages) > mcpgw.MinMaxListBytes || len(pages) < 2 {
		t.Errorf("pages of %v bytes, want several within %d", pages, mcpgw.MinMaxListBytes)
	}
	if w := byName["wide-output_sum"]; w == nil || w["outputSchema"] != nil || w["inputSchema"] == nil {
		t.Errorf("wide-output_sum listed as %.200v, want it without its output schema", w)
	}
	if byName["wide-input_sum"] != nil {
		t.Error("wide-input_sum is listed though it is larger than a page")
	}
	if len(byName) != len(f.gw.Tools())-1 {
		t.Errorf("%d tools listed, want all %d but wide-input_sum", len(byName), len(f.gw.Tools()))
	}
	var out map[string]any
	s.callTool("wide-input_sum", map[string]any{"a": 1, "b": 2}, &out)
	if out["result"] != 3.0 {
		t.Errorf("wide-input_sum(1, 2) = %v", out)
	}
}
