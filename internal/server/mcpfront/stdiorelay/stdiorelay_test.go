package stdiorelay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/store/storetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary a Go SDK MCP server on stdio with an
// echo tool: the upstream of the benchmarks.
const serverEnv = "STDIORELAY_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRewrite(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":"client-1","method":"tools/call","params":{"_meta":{"progressToken":{"weird":true}},"name":"echo"}}`)
	id := member(msg, "id")
	tok := progressToken(member(msg, "params"))
	got := rewrite(nil, msg, sorted(span(msg, tok, []byte("7")), span(msg, id, []byte("7")))...)
	if want := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"echo"}}`; string(got) != want {
		t.Errorf("rewrite = %s, want %s", got, want)
	}
	if got := line(nil, []byte("{\n  \"a\": \"x y\",\r\n  \"b\": [1,\n2]\n}")); string(got) != `{"a":"x y","b":[1,2]}`+"\n" {
		t.Errorf("line = %q", got)
	}
	h, ok := readHead([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":12,"progress":1}}`))
	if !ok || string(h.method) != "notifications/progress" || h.id != nil || string(member(h.params, "progressToken")) != "12" {
		t.Errorf("readHead = %+v, %v", h, ok)
	}
	if got := withVersion([]byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`), "2025-03-26"); string(got) != `{"protocolVersion":"2025-03-26","capabilities":{}}` {
		t.Errorf("withVersion = %s", got)
	}
	if got := withVersion([]byte(`{"protocolVersion":"2025-06-18"}`), "1999-01-01"); string(got) != `{"protocolVersion":"2025-06-18"}` {
		t.Errorf("withVersion of an unknown version = %s", got)
	}
	if c := readCapabilities([]byte(`{"capabilities":{"sampling":{},"roots":{"listChanged":true},"elicitation":null}}`)); !c.has("sampling") || !c.has("roots") || c.has("elicitation") {
		t.Errorf("capabilities = %b", c)
	}
}

// FuzzUpstreamLine checks that reading a line from a server never panics,
// and that rewriting its id and progress token keeps valid JSON valid,
// with the new values in place and every other member as it was.
func FuzzUpstreamLine(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`))
	f.Add([]byte(`{"method":"notifications/progress","params":{"progressToken":1.5e3,"progress":1}}`))
	f.Add([]byte(`{"id" : [1,{"a":"\"}"}] , "x":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, ok := readHead(msg)
		_ = upID(h.id)
		_ = progressToken(h.params)
		if !ok || h.id == nil || !json.Valid(msg) {
			return
		}
		var before map[string]json.RawMessage
		if json.Unmarshal(msg, &before) != nil || hasDuplicates(msg) {
			return
		}
		with := []byte(`{"new":1}`)
		edits := []edit{span(msg, h.id, with)}
		if tok := progressToken(h.params); tok != nil {
			edits = sorted(edits[0], span(msg, tok, with))
		}
		out := line(nil, rewrite(nil, msg, edits...))
		if bytes.Count(out, []byte{'\n'}) != 1 || !json.Valid(out) {
			t.Fatalf("rewrite of %s = %q: not one line of valid JSON", msg, out)
		}
		var after map[string]json.RawMessage
		_ = json.Unmarshal(out, &after)
		if string(after["id"]) != string(with) {
			t.Fatalf("rewrite of %s: id %s, want %s", msg, after["id"], with)
		}
		for k, v := range before {
			if k != "id" && k != "params" && !jsonEqual(v, after[k]) {
				t.Fatalf("rewrite of %s changed %s: %s → %s", msg, k, v, after[k])
			}
		}
	})
}

// hasDuplicates reports whether the object msg holds repeats a member.
func hasDuplicates(msg []byte) bool {
	seen := map[string]bool{}
	dup := false
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		return true
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return true
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return true
		}
		key := fmt.Sprint(k)
		dup = dup || seen[key]
		seen[key] = true
	}
	return dup
}

func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// allow is Hooks that allows every call and counts the records.
type allow struct {
	mu   sync.Mutex
	recs int
}

func (a *allow) Authorize(context.Context, *invoke.Call) error { return nil }
func (a *allow) Emit(context.Context, invoke.Record) {
	a.mu.Lock()
	a.recs++
	a.mu.Unlock()
}

// benchRelay serves the test binary's echo server through a stdio relay
// (with the policy hook and the record) and returns the relay's URL.
func benchRelay(b *testing.B, sessions string) string {
	exe, err := os.Executable()
	if err != nil {
		b.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := &relay.Env{
		Ctx: ctx, Servers: servers{"echo": {Name: "echo", Command: exe, Env: map[string]string{serverEnv: "1"}, Sessions: sessions}},
		Hooks: &allow{}, Sessions: relay.NewSessions(relay.Limits{}), Version: "bench",
		Spawner: mcpconn.NewSpawner(4), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	rl := New(env)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := rl.Session(r.Header.Get("Mcp-Session-Id")); s != nil {
			s.Serve(w, r)
			return
		}
		if !rl.Open(w, r, "echo") {
			http.Error(w, "not opened", http.StatusBadRequest)
		}
	}))
	b.Cleanup(func() {
		srv.Close()
		ss, _ := env.Sessions.Close()
		for _, s := range ss {
			s.Close()
		}
		cancel()
		rl.Wait(5 * time.Second)
	})
	return srv.URL
}

// benchSession is a plain HTTP client session.
type benchSession struct {
	b   *testing.B
	url string
	sid string
}

func (s *benchSession) post(body string) []byte {
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.b.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		s.b.Fatalf("POST %.100s: %s %s", body, resp.Status, out)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	return out
}

func (s *benchSession) open() {
	s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}}`

// BenchmarkStdioCall measures a tools/call through the relay (policy hook
// and record included) to a Go SDK server over stdio: one client, and 8
// clients of a shared process. Profile with -cpuprofile; the server's own
// CPU is in its process, not in the profile.
func BenchmarkStdioCall(b *testing.B) {
	b.Run("per-client", func(b *testing.B) {
		s := &benchSession{b: b, url: benchRelay(b, "")}
		s.open()
		b.ResetTimer()
		defer reportCPU(b)()
		for b.Loop() {
			if out := s.post(benchCall); !bytes.Contains(out, []byte(`"ping"`)) {
				b.Fatalf("answer %s", out)
			}
		}
	})
	b.Run("shared-8", func(b *testing.B) {
		url := benchRelay(b, mcpconn.SessionsShared)
		b.SetParallelism(4) // 8 clients on 2 CPUs
		b.ResetTimer()
		defer reportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			s := &benchSession{b: b, url: url}
			s.open()
			for pb.Next() {
				if out := s.post(benchCall); !bytes.Contains(out, []byte(`"ping"`)) {
					b.Fatalf("answer %s", out)
				}
			}
		})
	})
}

// reportCPU starts measuring the process's CPU time (the relay's and the
// HTTP client's; the server's is in its own process); the function it
// returns reports it per op, as cpu-µs/op, less inflated by a loaded
// machine than wall time.
func reportCPU(b *testing.B) func() {
	c0, ok := storetest.CPUTime()
	return func() {
		if c1, _ := storetest.CPUTime(); ok && b.N > 0 {
			b.ReportMetric(float64((c1-c0).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
}

// servers is an in-memory relay.Servers.
type servers map[string]mcpconn.Server

func (s servers) GetServer(_ context.Context, name string) (*discover.SavedServer, error) {
	return &discover.SavedServer{Server: s[name]}, nil
}
