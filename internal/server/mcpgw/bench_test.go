package mcpgw_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolsCall measures tools/call of everruns_add over streamable
// HTTP on loopback from 32 concurrent sessions, client and server in this
// process (so they share the machine's CPUs):
//
//   - client=http: each session is a plain HTTP client speaking JSON-RPC
//     (initialize, then tools/call POSTs with its Mcp-Session-Id), about as
//     cheap as a load generator gets, so the figures are the gateway's;
//   - client=go-sdk: each session is an MCP Go SDK client, which costs about
//     as much CPU per call as the server.
//
// Reported: calls/s, p50 and p99 latency of one call, and cpu-µs/call, the
// CPU time (user+system) the whole process spent per call, which does not
// depend on what else the machine runs. Run it with
//
//	go test ./server/mcpgw -run '^$' -bench ToolsCall -benchtime 20000x
func BenchmarkToolsCall(b *testing.B) {
	b.Run("client=http", func(b *testing.B) { benchToolsCall(b, 32, newRawSession) })
	b.Run("client=go-sdk/protocol=2025-11-25", func(b *testing.B) { benchToolsCall(b, 32, sdkSession("2025-11-25")) })
	b.Run("client=go-sdk/protocol=latest", func(b *testing.B) { benchToolsCall(b, 32, sdkSession("")) })
}

// BenchmarkDiscoveredCall compares what a tools/call of a discovered
// upstream tool costs through the gateway (/mcp: the pipeline and the mcp
// binding) and through the transparent front (/mcp/servers/{name}), over
// the same upstream: the Go SDK's everything-server (test_simple_text) as
// a stdio server (the front's SDK relay) and as a streamable HTTP server
// (the front's HTTP relay), each a process of its own, so that
// cpu-µs/call is caphub's CPU and the clients', not the upstream's. 4
// sessions call concurrently, with plain HTTP requests (client=http: the
// figures are caphub's) or Go SDK clients (client=go-sdk). Run it with
//
//	go test ./internal/server/mcpgw -run '^$' -bench DiscoveredCall -benchtime 5000x
//
// Measured on 2 shared cores (client=http, medians of 6 interleaved runs
// against the code before; the machine was loaded, so ±15%): /mcp cost
// 699 cpu-µs/call over stdio and 529 over streamable HTTP, 4.7× and 2.2×
// the front's (150 and 236), most of it the MCP SDK decoding each message
// about six times with a fresh 32 KiB buffer (its server for the client's
// request, its client for the upstream's answer) and the garbage
// collection that caused. With the gateway reading a tools/call itself
// (fast.go) and the binding's lean stdio client (mcpconn.StdioSession),
// 189 and 240: 1.2× and 1.14× the front (157 and 210), at three times the
// calls/s over stdio. What remains above the front is the pipeline's own
// work (resolve, input check, policy, audit, output mapping) and decoding
// the upstream's result into content blocks.
func BenchmarkDiscoveredCall(b *testing.B) {
	d := newDiscovered(b, goEverythingStdio(b, "stdio"), goEverythingHTTP(b, "http"))
	const sessions = 4
	want := []byte("This is a simple text response for testing.")
	for _, upstream := range []string{"stdio", "http"} {
		tool := d.tool(b, upstream, "test_simple_text")
		for _, ep := range []struct{ name, url, tool string }{
			{"front", d.frontURL(upstream), "test_simple_text"},
			{"mcp", d.mcpURL, tool},
		} {
			b.Run("client=http/upstream="+upstream+"/endpoint="+ep.name, func(b *testing.B) {
				client := benchClient(sessions)
				calls := make([]caller, sessions)
				for i := range calls {
					calls[i] = rawSession(b, client, ep.url, ep.tool, `{}`, want)
				}
				measureCalls(b, calls)
			})
			b.Run("client=go-sdk/upstream="+upstream+"/endpoint="+ep.name, func(b *testing.B) {
				client := benchClient(sessions)
				calls := make([]caller, sessions)
				for i := range calls {
					calls[i] = sdkCaller(b, client, ep.url, ep.tool, want)
				}
				measureCalls(b, calls)
			})
		}
	}
}

// BenchmarkToolsList measures tools/list over streamable HTTP from 4
// concurrent plain HTTP sessions, answered by the SDK (path=sdk, as before
// the fast path answered it) or on the fast path (path=fast): the built-in
// tools (one page), and GitHub's API with no tool limit (1,247 tools, pages
// of 256 KiB), its first page and a later one. Run it with
//
//	go test ./internal/server/mcpgw -run '^$' -bench ToolsList -benchtime 1000x -count 5
//
// Measured on 2 shared cores (medians of 5 interleaved runs, cpu-µs per
// request, the in-process client's reading included): built-ins 892 → 158
// (5.6×), GitHub's first page 4,639 → 737 (6.3×), its third 4,959 → 627
// (7.9×); ping 190 → 44 (4.4×).
func BenchmarkToolsList(b *testing.B) {
	type catalog struct {
		name  string
		f     func(b *testing.B) *fixture
		pages int // the page listed is the one after this many
	}
	builtins := func(b *testing.B) *fixture { return newFixture(b, mcpgw.Options{}) }
	github := func(b *testing.B) *fixture { return gitHubFixture(b, mcpgw.Options{MaxTools: -1}) }
	for _, c := range []catalog{
		{"builtins/page=first", builtins, 0},
		{"github/page=first", github, 0},
		{"github/page=third", github, 2},
	} {
		for _, path := range []string{"sdk", "fast"} {
			b.Run("catalog="+c.name+"/path="+path, func(b *testing.B) {
				f := c.f(b)
				mcpgw.SetFast(f.gw, path == "fast")
				defer mcpgw.SetFast(f.gw, true)
				params := ""
				if c.pages > 0 {
					params = `{"cursor":"` + pageCursor(b, f, c.pages) + `"}`
				}
				benchRequests(b, f, "tools/list", params, []byte(`"tools":[{`))
			})
		}
	}
}

// pageCursor is the cursor of the page after the first pages of f's
// tools/list, as a client following the cursors gets it.
func pageCursor(b *testing.B, f *fixture, pages int) string {
	cs := connect(b, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, DisableStandaloneSSE: true}, "2025-11-25", nil)
	cursor := ""
	for range pages {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil || res.NextCursor == "" {
			b.Fatalf("tools/list: %v, next cursor %q", err, res.NextCursor)
		}
		cursor = res.NextCursor
	}
	return cursor
}

// BenchmarkPing measures ping as BenchmarkToolsList measures tools/list.
func BenchmarkPing(b *testing.B) {
	for _, path := range []string{"sdk", "fast"} {
		b.Run("path="+path, func(b *testing.B) {
			f := newFixture(b, mcpgw.Options{})
			mcpgw.SetFast(f.gw, path == "fast")
			benchRequests(b, f, "ping", "", []byte(`"result":{}`))
		})
	}
}

// benchRequests measures requests of method with params from 4 plain HTTP
// sessions on f's /mcp.
func benchRequests(b *testing.B, f *fixture, method, params string, want []byte) {
	const sessions = 4
	client := benchClient(sessions)
	calls := make([]caller, sessions)
	for i := range calls {
		calls[i] = rawRequests(b, client, f.mcpURL, method, params, want)
	}
	measureCalls(b, calls)
}

// sdkCaller connects a Go SDK client (protocol 2025-11-25) to the
// streamable HTTP endpoint url and returns a caller that calls tool without
// arguments and checks that its text contains want.
func sdkCaller(b *testing.B, client *http.Client, url, tool string, want []byte) caller {
	cs := connect(b, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, DisableStandaloneSSE: true}, "2025-11-25", nil)
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			return err
		}
		if res.IsError || !strings.Contains(text(res), string(want)) {
			return fmt.Errorf("tools/call %s: %s", tool, text(res))
		}
		return nil
	}
}

// caller makes one tools/call of everruns_add(2, 3) and checks the result.
type caller func(ctx context.Context) error

type sessionMaker func(b *testing.B, f *fixture, client *http.Client) caller

func sdkSession(protocol string) sessionMaker {
	return func(b *testing.B, f *fixture, client *http.Client) caller {
		cs := connect(b, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, HTTPClient: client, DisableStandaloneSSE: true}, protocol, nil)
		args := map[string]any{"a": 2, "b": 3}
		return func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everruns_add", Arguments: args})
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("tool error: %s", text(res))
			}
			return nil
		}
	}
}

// newRawSession opens a 2025-11-25 session with plain HTTP requests.
func newRawSession(b *testing.B, f *fixture, client *http.Client) caller {
	return rawSession(b, client, f.mcpURL, "everruns_add", `{"a":2,"b":3}`, []byte(`"structuredContent":{"result":5}`))
}

// rawSession opens a 2025-11-25 session on the streamable HTTP endpoint url
// with plain HTTP requests, and returns a caller that calls tool with the
// arguments args (a JSON object) and checks that the answer contains want.
func rawSession(b *testing.B, client *http.Client, url, tool, args string, want []byte) caller {
	return rawRequests(b, client, url, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`, want)
}

// rawRequests opens a 2025-11-25 session on the streamable HTTP endpoint
// url with plain HTTP requests, and returns a caller that sends a request
// of method with params (JSON, "" none) and checks that the answer
// contains want.
func rawRequests(b *testing.B, client *http.Client, url, method, params string, want []byte) caller {
	post := func(ctx context.Context, session string, body []byte) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, data, err
	}
	ctx := context.Background()
	resp, data, err := post(ctx, "", []byte(initializeBody))
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("initialize %s: %v %s", url, err, data)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		b.Fatalf("initialize %s: no Mcp-Session-Id", url)
	}
	if resp, data, err := post(ctx, session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || resp.StatusCode != http.StatusAccepted {
		b.Fatalf("initialized %s: %v %s", url, err, data)
	}
	var id atomic.Int64
	return func(ctx context.Context) error {
		body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id.Add(1), 10) + `,"method":"` + method + `"`
		if params != "" {
			body += `,"params":` + params
		}
		resp, data, err := post(ctx, session, []byte(body+"}"))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(data, want) {
			return fmt.Errorf("%s: %s %.300s", method, resp.Status, data)
		}
		return nil
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchToolsCall(b *testing.B, sessions int, newSession sessionMaker) {
	f := newFixture(b, mcpgw.Options{})
	client := benchClient(sessions)
	calls := make([]caller, sessions)
	for i := range calls {
		calls[i] = newSession(b, f, client)
	}
	measureCalls(b, calls)
}

// benchClient is an HTTP client keeping enough connections alive for
// sessions concurrent sessions.
func benchClient(sessions int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * sessions, MaxIdleConnsPerHost: 2 * sessions, IdleConnTimeout: time.Minute}}
}

// measureCalls warms each session up with one call, then makes b.N calls
// spread over them, concurrently, and reports calls/s, the p50 and p99
// latency and cpu-µs/call.
func measureCalls(b *testing.B, calls []caller) {
	sessions := len(calls)
	for _, call := range calls {
		if err := call(context.Background()); err != nil { // warm up
			b.Fatal(err)
		}
	}
	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		firstErr  atomic.Value
	)
	b.SetParallelism((sessions + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		call := calls[int(next.Add(1)-1)%sessions]
		var local []time.Duration
		ctx := context.Background()
		for pb.Next() {
			t0 := time.Now()
			err := call(ctx)
			local = append(local, time.Since(t0))
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}
		mu.Lock()
		latencies = append(latencies, local...)
		mu.Unlock()
	})
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed, the first: %v", n, b.N, firstErr.Load())
	}
	slices.Sort(latencies)
	pct := func(p int) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return float64(latencies[(len(latencies)-1)*p/100].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
}
