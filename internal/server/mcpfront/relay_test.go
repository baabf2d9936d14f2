package mcpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests of the HTTP relay (streamable HTTP upstreams) that the SDK relay's
// tests do not cover: session ids, headers, batches, refusals, bounds and
// failures, seen from both sides of the front.

// spy is an upstream handler that records what reaches the upstream.
type spy struct {
	next http.Handler

	mu      sync.Mutex
	headers []http.Header
	bodies  []string
	ids     map[string]bool // the session ids the upstream handed out
}

func (s *spy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	s.next.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		s.mu.Lock()
		s.ids[id] = true
		s.mu.Unlock()
	}
}

func (s *spy) seen() (headers []http.Header, bodies []string, ids map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids = map[string]bool{}
	for id := range s.ids {
		ids[id] = true
	}
	return slices.Clone(s.headers), slices.Clone(s.bodies), ids
}

// relayEnv is env with a spy before the upstream, the saved servers at
// hand, and the saved server "up" edited by edit.
func relayEnv(t *testing.T, opts Options, upOpts *mcp.StreamableHTTPOptions, edit func(*mcpconn.Server)) (*env, *spy, savedServers) {
	t.Helper()
	e := &env{up: newUpstream(), hooks: &recorder{}}
	sp := &spy{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.up.server }, upOpts), ids: map[string]bool{}}
	upSrv := httptest.NewServer(sp)
	t.Cleanup(upSrv.Close)
	e.upURL = upSrv.URL
	saved := mcpconn.Server{Name: "up", Transport: mcpconn.TransportHTTP, URL: upSrv.URL}
	if edit != nil {
		edit(&saved)
	}
	servers := savedServers{"up": saved}
	opts.Version, opts.Log = "test", testLog()
	e.front = New(servers, e.hooks, opts)
	e.frontURL = serveFront(t, e.front, nil)
	return e, sp, servers
}

// raw is a client of the front that speaks the streamable transport by
// hand.
type raw struct {
	t       *testing.T
	url     string
	sid     string
	version string
	header  http.Header // more headers for every request
}

// do sends a request and returns the response with its body read whole.
func (c *raw) do(method, body string) (*http.Response, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.url, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the body: %v", method, c.url, err)
	}
	return resp, b
}

// initialize opens a session.
func (c *raw) initialize(version string) {
	c.t.Helper()
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		c.t.Fatalf("initialize: %d %s (session %q)", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"))
	}
	c.sid, c.version = resp.Header.Get("Mcp-Session-Id"), version
	if resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %d %s", resp.StatusCode, body)
	}
}

// rpcMsg is a JSON-RPC response as the tests read it.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// messages reads the JSON-RPC messages of a response: SSE events or a
// JSON body (a message or a batch), by id.
func messages(t *testing.T, resp *http.Response, body []byte) map[string]rpcMsg {
	t.Helper()
	var datas [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
				datas = append(datas, []byte(d))
			}
		}
	} else {
		datas = [][]byte{body}
	}
	out := map[string]rpcMsg{}
	for _, d := range datas {
		var batch []rpcMsg
		if bytes.HasPrefix(bytes.TrimSpace(d), []byte("[")) {
			if err := json.Unmarshal(d, &batch); err != nil {
				t.Fatalf("response %s: %v", d, err)
			}
		} else {
			var m rpcMsg
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatalf("response %s: %v", d, err)
			}
			batch = []rpcMsg{m}
		}
		for _, m := range batch {
			if m.Method == "" {
				out[string(m.ID)] = m
			}
		}
	}
	return out
}

func (m rpcMsg) text() string {
	if m.Result == nil || len(m.Result.Content) == 0 {
		return ""
	}
	return m.Result.Content[0].Text
}

func TestRelaySessionIDs(t *testing.T) {
	e, sp, servers := relayEnv(t, Options{}, nil, nil)
	servers["other"] = mcpconn.Server{Name: "other", Transport: mcpconn.TransportHTTP, URL: e.upURL}
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/up"}
	c.initialize("2025-11-25")
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if got := messages(t, resp, body)["2"].text(); resp.StatusCode != http.StatusOK || got != "echo: hi" {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, body)
	}
	if e.front.Sessions() != 1 || e.up.sessions() != 1 {
		t.Errorf("sessions: front %d, upstream %d; want 1 and 1", e.front.Sessions(), e.up.sessions())
	}

	// The client sees the front's id, the upstream its own, and neither
	// sees the other's.
	headers, _, upIDs := sp.seen()
	if len(upIDs) != 1 || upIDs[c.sid] {
		t.Fatalf("upstream session ids %v, downstream %q: want one upstream id, not the downstream's", upIDs, c.sid)
	}
	for _, h := range headers {
		if id := h.Get("Mcp-Session-Id"); id != "" && !upIDs[id] {
			t.Errorf("the upstream received session id %q, not its own", id)
		}
	}
	if resp.Header.Get("Mcp-Session-Id") != c.sid {
		t.Errorf("a response carries session id %q, want the downstream's %q", resp.Header.Get("Mcp-Session-Id"), c.sid)
	}

	// Unknown ids, and ids of another server, are not found.
	for _, tc := range []struct{ url, sid string }{
		{c.url, "no-such-session"},
		{e.frontURL + "/mcp/servers/other", c.sid},
	} {
		o := &raw{t: t, url: tc.url, sid: tc.sid, version: "2025-11-25"}
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			resp, body := o.do(method, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "session not found") {
				t.Errorf("%s %s with session %q: %d %s, want 404 session not found", method, tc.url, tc.sid, resp.StatusCode, body)
			}
		}
	}

	// DELETE ends both sessions; the id is then unknown.
	if resp, body := c.do(http.MethodDelete, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the upstream session to end", func() bool { return e.up.sessions() == 0 })
	if n := e.front.Sessions(); n != 0 {
		t.Errorf("front sessions after DELETE = %d", n)
	}
	if resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d %s, want 404", resp.StatusCode, body)
	}
	if headers, _, _ := sp.seen(); headers[len(headers)-1].Get("Mcp-Session-Id") == "" {
		t.Error("the DELETE that reached the upstream had no session id")
	}
}

// headerAdder adds headers to every request of a client.
type headerAdder struct {
	base http.RoundTripper
	add  http.Header
}

func (h headerAdder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.add {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

func TestRelayHeaders(t *testing.T) {
	t.Setenv("MCPFRONT_TEST_API_KEY", "upstream-secret")
	e, sp, servers := relayEnv(t, Options{}, nil, func(s *mcpconn.Server) {
		s.Headers = map[string]string{"X-Api-Key": "${MCPFRONT_TEST_API_KEY}", "X-Team": "blue"}
	})
	client := &http.Client{Transport: headerAdder{base: http.DefaultTransport, add: http.Header{
		"Authorization":       {"Bearer caphub-token"},
		"Cookie":              {"caphub_session=abc"},
		"Proxy-Authorization": {"Basic eDp5"},
		"Connection":          {"X-Hop"},
		"X-Hop":               {"hop-by-hop"},
		"X-Custom":            {"client only"},
	}}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "1"}, nil)
	cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/up", HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, _ := callText(t, cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "h"}}); got != "echo: h" {
		t.Fatalf("echo = %q", got)
	}
	headers, _, _ := sp.seen()
	if len(headers) < 3 {
		t.Fatalf("the upstream saw %d requests, want initialize, initialized, tools/call at least", len(headers))
	}
	versioned := 0
	for i, h := range headers {
		for _, k := range []string{"Authorization", "Cookie", "Proxy-Authorization", "X-Hop", "X-Custom"} {
			if v := h.Get(k); v != "" {
				t.Errorf("upstream request %d carries %s: %q", i, k, v)
			}
		}
		if h.Get("X-Api-Key") != "upstream-secret" || h.Get("X-Team") != "blue" {
			t.Errorf("upstream request %d: X-Api-Key %q, X-Team %q; want the saved headers, expanded", i, h.Get("X-Api-Key"), h.Get("X-Team"))
		}
		if !strings.HasPrefix(h.Get("User-Agent"), "caphub/") {
			t.Errorf("upstream request %d: User-Agent %q", i, h.Get("User-Agent"))
		}
		if h.Get("Mcp-Protocol-Version") != "" {
			versioned++
		}
	}
	if versioned == 0 {
		t.Error("no upstream request carried the client's Mcp-Protocol-Version")
	}

	// A header that references a variable caphub lacks fails the session's
	// opening with a message naming it.
	servers["up"] = mcpconn.Server{Name: "up", Transport: mcpconn.TransportHTTP, URL: e.upURL, Headers: map[string]string{"X-Api-Key": "${MCPFRONT_TEST_UNSET_VARIABLE}"}}
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/up"}
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "MCPFRONT_TEST_UNSET_VARIABLE") {
		t.Errorf("initialize with an unset header variable: %d %s, want 500 naming the variable", resp.StatusCode, body)
	}
}

func TestRelayBatchAndRefusals(t *testing.T) {
	e, sp, _ := relayEnv(t, Options{}, nil, nil)
	e.hooks.denyURI = "mcp:up/pid"
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/up"}
	c.initialize("2025-03-26") // the last version with batches

	// A batch: the allowed call and the list are forwarded, the refused
	// call is answered by the front; all three answers come back.
	resp, body := c.do(http.MethodPost, `[
		{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"batched"}}},
		{"jsonrpc":"2.0","id":3,"method":"tools/list"},
		{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"pid"}}
	]`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}
	got := messages(t, resp, body)
	if m := got["2"]; m.text() != "echo: batched" || m.Result.IsError {
		t.Errorf("batched echo = %+v", m)
	}
	if m := got["3"]; m.Result == nil || len(m.Result.Tools) == 0 {
		t.Errorf("batched tools/list = %+v", m)
	}
	if m := got["4"]; m.Result == nil || !m.Result.IsError || m.text() != "DENIED: no mcp:up/pid" {
		t.Errorf("batched refused call = %+v, want a DENIED tool error", m)
	}
	// A batch of refused calls alone, and a lone refused call, never reach
	// the upstream.
	resp, body = c.do(http.MethodPost, `[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pid"}}]`)
	if m := messages(t, resp, body)["5"]; resp.StatusCode != http.StatusOK || m.Result == nil || !m.Result.IsError {
		t.Errorf("batch of a refused call: %d %s", resp.StatusCode, body)
	}
	resp, body = c.do(http.MethodPost, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"pid"}}`)
	if m := messages(t, resp, body)["6"]; resp.StatusCode != http.StatusOK || m.Result == nil || !m.Result.IsError || !strings.HasPrefix(m.text(), "DENIED: ") {
		t.Errorf("refused call: %d %s", resp.StatusCode, body)
	}
	_, bodies, _ := sp.seen()
	for _, b := range bodies {
		if strings.Contains(b, `"pid"`) {
			t.Errorf("a refused call reached the upstream: %s", b)
		}
	}
	select {
	case s := <-e.up.echoes:
		if s != "batched" {
			t.Errorf("the upstream echoed %q", s)
		}
	default:
		t.Error("the batched echo did not reach the upstream")
	}
	// One record per call, refused ones included.
	recs := e.hooks.records()
	var codes []string
	for _, r := range recs {
		codes = append(codes, r.URI+" "+r.Code)
	}
	slices.Sort(codes)
	want := []string{"mcp:up/echo ", "mcp:up/pid DENIED", "mcp:up/pid DENIED", "mcp:up/pid DENIED"}
	if !slices.Equal(codes, want) {
		t.Errorf("records %q, want %q", codes, want)
	}
}

func TestRelayRejectsAmbiguousBodies(t *testing.T) {
	e, sp, _ := relayEnv(t, Options{}, nil, nil)
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/up"}
	c.initialize("2025-11-25")
	before := len(e.hooks.records())
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","Method":"ping","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid","name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"`,
		`{"jsonrpc":"2.0","id":2,"method":7}`,
		`[]`,
		`"tools/call"`,
	} {
		resp, got := c.do(http.MethodPost, body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s: %d %s, want 400", body, resp.StatusCode, got)
		}
	}
	_, bodies, _ := sp.seen()
	for _, b := range bodies {
		if strings.Contains(b, `"id":2`) {
			t.Errorf("an ambiguous body reached the upstream: %s", b)
		}
	}
	if n := len(e.hooks.records()); n != before {
		t.Errorf("%d records for refused bodies", n-before)
	}
	// tools/call without a tool name is answered by the front.
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`)
	if m := messages(t, resp, body)["3"]; m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("tools/call without a name: %d %s, want an invalid params error", resp.StatusCode, body)
	}
}

// maxBodyBytes is the bound of the HTTP relay on request bodies (the
// package documentation's 4 MiB).
const maxBodyBytes = 4 << 20

func TestRelayBodyTooLarge(t *testing.T) {
	e, _, _ := relayEnv(t, Options{}, nil, nil)
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", maxBodyBytes) + `"}}}`
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/up"}
	check := func(what string) {
		t.Helper()
		resp, body := c.do(http.MethodPost, big)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "larger than 4 MiB") {
			t.Errorf("%s: %d %.200s, want 413 saying the bound", what, resp.StatusCode, body)
		}
	}
	check("a large initialize")
	c.initialize("2025-11-25")
	check("a large call")
	// Chunked, without a length.
	req, _ := http.NewRequest(http.MethodPost, c.url, io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a large chunked call: %d, want 413", resp.StatusCode)
	}
	if got, _ := callText(t, e.connect(t, "/mcp/servers/up", false).cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "small"}}); got != "echo: small" {
		t.Errorf("a small call after large ones = %q", got)
	}
}

func TestRelayUpstreamDown(t *testing.T) {
	// Nothing listens at the saved URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	e, _, servers := relayEnv(t, Options{}, nil, nil)
	servers["down"] = mcpconn.Server{Name: "down", Transport: mcpconn.TransportHTTP, URL: deadURL}
	c := &raw{t: t, url: e.frontURL + "/mcp/servers/down"}
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `MCP server \"down\"`) || !strings.Contains(string(body), "could not reach") {
		t.Errorf("initialize with the upstream down: %d %s, want 502 naming the server", resp.StatusCode, body)
	}

	// An upstream that goes away during a session.
	up := newUpstream()
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.server }, nil))
	servers["gone"] = mcpconn.Server{Name: "gone", Transport: mcpconn.TransportHTTP, URL: upSrv.URL}
	g := &raw{t: t, url: e.frontURL + "/mcp/servers/gone"}
	g.initialize("2025-11-25")
	upSrv.CloseClientConnections()
	upSrv.Close()
	resp, body = g.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `MCP server \"gone\"`) {
		t.Errorf("a call with the upstream gone: %d %s, want 502 naming the server", resp.StatusCode, body)
	}
	recs := e.hooks.records()
	if len(recs) != 1 || recs[0].Code != invoke.CodeBindingFailed || !strings.Contains(recs[0].Message, "could not reach") {
		t.Errorf("records = %+v, want one BINDING_FAILED", recs)
	}
}

// TestRelayUpstreamModes runs calls through upstreams without sessions
// and upstreams that answer with JSON instead of SSE streams.
func TestRelayUpstreamModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless", &mcp.StreamableHTTPOptions{Stateless: true}},
		{"json", &mcp.StreamableHTTPOptions{JSONResponse: true}},
		{"stateless-json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := relayEnv(t, Options{}, tc.opts, nil)
			c := e.connect(t, "/mcp/servers/up", false)
			if c.cs.ID() == "" {
				t.Error("no session id from the front")
			}
			if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "s"}}); got != "echo: s" {
				t.Errorf("echo = %q", got)
			}
			if got, isErr := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "fail"}); !isErr || !strings.Contains(got, "it failed") {
				t.Errorf("fail = %q (isError %v)", got, isErr)
			}
			recs := e.hooks.records()
			if len(recs) != 2 || recs[0].Code != "" || recs[1].Code != invoke.CodeUpstreamError || !strings.Contains(recs[1].Message, "it failed") {
				t.Errorf("records = %+v, want a success and an UPSTREAM_ERROR", recs)
			}
			if n := e.front.Sessions(); n != 1 {
				t.Errorf("front sessions = %d", n)
			}
			_ = c.cs.Close()
			waitFor(t, "the session to end", func() bool { return e.front.Sessions() == 0 })
		})
	}
}

func TestRelaySSEOnlyUpstreamFallsBack(t *testing.T) {
	up := newUpstream()
	upSrv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return up.server }, nil))
	t.Cleanup(upSrv.Close)
	e, _, servers := relayEnv(t, Options{}, nil, nil)
	servers["sse-only"] = mcpconn.Server{Name: "sse-only", Transport: mcpconn.TransportHTTP, URL: upSrv.URL}
	c := e.connect(t, "/mcp/servers/sse-only", false)
	if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "old"}}); got != "echo: old" {
		t.Errorf("echo through an SSE-only upstream = %q", got)
	}
	if n := e.front.Sessions(); n != 1 {
		t.Errorf("front sessions = %d", n)
	}
}

func TestRelayIdleTimeout(t *testing.T) {
	e, _, _ := relayEnv(t, Options{IdleTimeout: 300 * time.Millisecond}, nil, nil)
	c := e.connect(t, "/mcp/servers/up", false)
	// A call longer than the timeout is not cut: the session is busy.
	if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 700}}); got != "awake" {
		t.Errorf("a call longer than the idle timeout = %q", got)
	}
	waitFor(t, "the idle session to close, upstream too", func() bool { return e.front.Sessions() == 0 && e.up.sessions() == 0 })
	if _, err := c.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "late"}}); err == nil {
		t.Error("a call on the closed idle session succeeded")
	}
}

// TestRelayResumesStreams checks a call whose upstream closes its stream
// mid-call (SEP-1699): the client resumes it with GET and Last-Event-ID
// through the front, gets the result there, and the call is recorded
// from the resumed stream.
func TestRelayResumesStreams(t *testing.T) {
	e, sp, _ := relayEnv(t, Options{}, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, nil)
	e.up.server.AddTool(&mcp.Tool{Name: "reconnect", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		time.Sleep(100 * time.Millisecond)
		return text("resumed"), nil
	})
	cl := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "1"}, nil)
	cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/up"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, isErr := callText(t, cs, timeout(t), &mcp.CallToolParams{Name: "reconnect"}); got != "resumed" || isErr {
		t.Fatalf("reconnect = %q (isError %v)", got, isErr)
	}
	headers, _, _ := sp.seen()
	resumed := false
	for _, h := range headers {
		resumed = resumed || h.Get("Last-Event-ID") != ""
	}
	if !resumed {
		t.Error("no request with Last-Event-ID reached the upstream: the stream was not resumed through the front")
	}
	waitFor(t, "the call's record", func() bool { return len(e.hooks.records()) == 1 })
	if r := e.hooks.records()[0]; r.URI != "mcp:up/reconnect" || r.Code != "" {
		t.Errorf("record = %+v, want a success", r)
	}
}

// TestRelayReusesConnections checks that calls share keep-alive
// connections to the upstream, and that one the upstream closed while it
// was idle is not used.
func TestRelayReusesConnections(t *testing.T) {
	up := newUpstream()
	var mu sync.Mutex
	conns := 0
	upSrv := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.server }, nil))
	upSrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	upSrv.Start()
	t.Cleanup(upSrv.Close)
	e, _, servers := relayEnv(t, Options{}, nil, nil)
	servers["up"] = mcpconn.Server{Name: "up", Transport: mcpconn.TransportHTTP, URL: upSrv.URL}
	c := e.connect(t, "/mcp/servers/up", false)
	for i := range 50 {
		if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint(i)}}); got != fmt.Sprint("echo: ", i) {
			t.Fatalf("echo %d = %q", i, got)
		}
	}
	mu.Lock()
	n := conns
	mu.Unlock()
	if n > 4 {
		t.Errorf("50 calls opened %d upstream connections, want them kept alive and reused", n)
	}
	// The upstream closes its idle connections: the next calls still work.
	upSrv.Config.SetKeepAlivesEnabled(false)
	upSrv.Config.SetKeepAlivesEnabled(true)
	time.Sleep(50 * time.Millisecond)
	for i := range 3 {
		if got, _ := callText(t, c.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}}); got != "echo: again" {
			t.Fatalf("echo %d after the upstream closed idle connections = %q", i, got)
		}
	}
}

// TestCallerAndApproval: both relays hand the policy the calling agent
// (X-Caphub-Agent) and the approval a call is retried with (_meta
// dev.caphub/approval, else the X-Caphub-Approval header), as caphub's own
// /mcp does, and record the caller; neither header reaches the upstream.
func TestCallerAndApproval(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		name := "http-relay"
		if sdk {
			name = "sdk-relay"
		}
		t.Run(name, func(t *testing.T) {
			e, sp, _ := relayEnv(t, Options{}, nil, nil)
			e.front.sdkRelayOnly = sdk
			client := &http.Client{Transport: headerAdder{base: http.DefaultTransport, add: http.Header{
				"X-Caphub-Agent": {"clerk"}, "X-Caphub-Approval": {"apr_from_header"}}}}
			cl := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "1"}, nil)
			cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: e.frontURL + "/mcp/servers/up", HTTPClient: client, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			for _, c := range []struct {
				meta mcp.Meta
				want string
			}{{mcp.Meta{"dev.caphub/approval": "apr_from_meta"}, "apr_from_meta"}, {nil, "apr_from_header"}} {
				if got, _ := callText(t, cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}, Meta: c.meta}); got != "echo: hi" {
					t.Fatalf("echo = %q", got)
				}
				h := e.hooks
				h.mu.Lock()
				call, approval := h.calls[len(h.calls)-1], h.approvals[len(h.approvals)-1]
				h.mu.Unlock()
				if call.Caller != "clerk" || approval != c.want {
					t.Errorf("the policy saw caller %q, approval %q; want clerk, %s", call.Caller, approval, c.want)
				}
			}
			recs := e.hooks.records()
			if len(recs) == 0 || recs[len(recs)-1].Caller != "clerk" {
				t.Errorf("records %+v; want the caller clerk", recs)
			}
			if !sdk {
				headers, _, _ := sp.seen()
				for _, h := range headers {
					if h.Get("X-Caphub-Agent") != "" || h.Get("X-Caphub-Approval") != "" {
						t.Errorf("caphub's own headers reached the upstream: %v", h)
					}
				}
			}
		})
	}
}

// TestRelayOneWritePerCall checks that the answer to a tools/call reaches
// the client in one write to its connection: the event that answers the
// POST's last call is held for the end of the upstream's stream, and sent
// with it (and with the headers), not flushed on its own first. The delay
// that bounds the hold is an hour here, so the count depends on no timing.
func TestRelayOneWritePerCall(t *testing.T) {
	e, _, _ := relayEnv(t, Options{}, nil, nil)
	e.front.http.HeaderDelay = time.Hour
	var writes atomic.Int64
	url := serveFront(t, e.front, func(s *httptest.Server) {
		s.Listener = &countingListener{Listener: s.Listener, writes: &writes}
	})
	c := &raw{t: t, url: url + "/mcp/servers/up"}
	c.initialize("2025-06-18")
	for i := range 3 {
		before := writes.Load()
		resp, body := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, 10+i))
		n := writes.Load() - before
		if got := messages(t, resp, body)[fmt.Sprint(10+i)].text(); got != "echo: x" {
			t.Fatalf("call %d: answer %q (%s), want echo: x", i, got, body)
		}
		if n != 1 {
			t.Errorf("call %d took %d writes to the client's connection, want 1", i, n)
		}
	}
	if recs := e.hooks.records(); len(recs) != 3 {
		t.Errorf("%d calls recorded, want 3", len(recs))
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestRelayHeldAnswerReachesClient checks that the answer to a POST's last
// call reaches the client though the upstream keeps the stream open after
// it: what the relay holds for the stream's end goes out after
// headerDelay all the same.
func TestRelayHeldAnswerReachesClient(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Mcp-Session-Id", "up-1")
		switch m.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"open","version":"1"}}}`, m.ID)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"held\"}]}}\n\n", m.ID)
			w.(http.Flusher).Flush()
			select { // the stream stays open
			case <-release:
			case <-r.Context().Done():
			}
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer up.Close()
	servers := savedServers{"open": {Name: "open", Transport: mcpconn.TransportHTTP, URL: up.URL}}
	hooks := &recorder{}
	front := New(servers, hooks, Options{Version: "test", Log: testLog()})
	c := &raw{t: t, url: serveFront(t, front, nil) + "/mcp/servers/open"}
	c.initialize("2025-06-18")
	req, _ := http.NewRequestWithContext(timeout(t), http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"held"`) {
			if recs := hooks.records(); len(recs) != 1 || recs[0].Code != "" {
				t.Errorf("records = %+v, want the call's success", recs)
			}
			return
		}
	}
	t.Fatalf("the answer never came while the upstream kept its stream open: %v", sc.Err())
}
