package mcpfront

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/store/sqlite"
)

// npmUpstream is an npm reference server saved in the front, with a tool
// call that must succeed through it and a word its answer must hold.
type npmUpstream struct {
	name string
	call map[string]any
	want string
}

// npmFront saves the npm reference servers in a real store — server-memory,
// server-filesystem and server-everything over stdio, and server-everything
// over streamable HTTP; server-everything and server-memory over stdio
// once more with shared sessions — fronts them, and returns the front's
// URL.
func npmFront(t *testing.T, opts Options) (string, *Front, []npmUpstream) {
	t.Helper()
	node := testpeers.Node22(t)
	pkg := func(name string) string {
		return filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/"+name), "dist", "index.js")
	}
	everything := pkg("server-everything")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello-from-the-front.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}

	httpURL := testpeers.EverythingHTTP(t, "streamableHttp")

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	servers := discover.NewServers(st)
	for _, s := range []mcpconn.Server{
		{Name: "memory", Command: node, Args: []string{pkg("server-memory")}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		{Name: "filesystem", Command: node, Args: []string{pkg("server-filesystem"), root}},
		{Name: "everything", Command: node, Args: []string{everything, "stdio"}},
		{Name: "everything-shared", Command: node, Args: []string{everything, "stdio"}, Sessions: mcpconn.SessionsShared},
		{Name: "memory-shared", Command: node, Args: []string{pkg("server-memory")}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}, Sessions: mcpconn.SessionsShared},
		{Name: "everything-http", URL: httpURL},
	} {
		if err := servers.SaveServer(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	opts.Version, opts.Log = "npm-test", testLog()
	front := New(servers, invoke.New(nil, nil, invoke.Options{}), opts)
	front.stdio.Grace = 100 * time.Millisecond // shared processes end soon after their last session
	url := serveFront(t, front, nil)
	echo := map[string]any{"name": "echo", "arguments": map[string]any{"message": "through the front"}}
	return url, front, []npmUpstream{
		{"memory", map[string]any{"name": "read_graph", "arguments": map[string]any{}}, "entities"},
		{"filesystem", map[string]any{"name": "list_directory", "arguments": map[string]any{"path": root}}, "hello-from-the-front.txt"},
		{"everything", echo, "through the front"},
		{"everything-http", echo, "through the front"},
		{"everything-shared", echo, "through the front"},
		{"memory-shared", map[string]any{"name": "read_graph", "arguments": map[string]any{}}, "entities"},
	}
}

// TestNPMServersThroughTheFront: the npm reference servers answer
// tools/list and a tool call through the front, from the official
// TypeScript SDK client, from the MCP Inspector's CLI, and from plain HTTP
// with both spellings of the Accept header (a stdio server once hung here:
// the relay sent "params": null, which the TypeScript SDK drops).
func TestNPMServersThroughTheFront(t *testing.T) {
	url, _, ups := npmFront(t, Options{})
	for _, up := range ups {
		endpoint := url + "/mcp/servers/" + up.name
		t.Run(up.name+"/typescript-sdk", func(t *testing.T) {
			t.Parallel()
			run := testpeers.TSClient(t, endpoint, up.call)
			if !slices.Contains(run.Tools, up.call["name"].(string)) {
				t.Errorf("tools/list = %v, want %s", run.Tools, up.call["name"])
			}
			if len(run.Calls) != 1 || !strings.Contains(string(run.Calls[0]), up.want) || strings.Contains(string(run.Calls[0]), `"isError":true`) {
				t.Errorf("tools/call %s = %s, want a result holding %q", up.call["name"], run.Calls, up.want)
			}
		})
		t.Run(up.name+"/inspector", func(t *testing.T) {
			t.Parallel()
			out, errOut, err := testpeers.Inspector(t, "--transport", "http", "--server-url", endpoint, "--method", "tools/list")
			if err != nil || !strings.Contains(out, `"`+up.call["name"].(string)+`"`) {
				t.Fatalf("inspector tools/list: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
			}
			args := []string{"--transport", "http", "--server-url", endpoint, "--method", "tools/call", "--tool-name", up.call["name"].(string)}
			for k, v := range up.call["arguments"].(map[string]any) {
				args = append(args, "--tool-arg", fmt.Sprintf("%s=%v", k, v))
			}
			out, errOut, err = testpeers.Inspector(t, args...)
			if err != nil || !strings.Contains(out, up.want) {
				t.Errorf("inspector tools/call: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
			}
		})
		for _, accept := range []string{"application/json, text/event-stream", "application/json,text/event-stream", "text/event-stream;q=0.9,application/json;q=1"} {
			t.Run(up.name+"/http/"+accept, func(t *testing.T) {
				t.Parallel()
				s := testpeers.RawSession{T: t, URL: endpoint, Accept: accept}
				s.Initialize(nil)
				list := s.Call("tools/list", nil)
				if !strings.Contains(list, `"`+up.call["name"].(string)+`"`) {
					t.Errorf("tools/list = %.500s, want %s", list, up.call["name"])
				}
				if got := s.Call("tools/call", up.call); !strings.Contains(got, up.want) || strings.Contains(got, `"isError":true`) {
					t.Errorf("tools/call = %.500s, want a result holding %q", got, up.want)
				}
				s.End()
			})
		}
	}
}

// TestManyClientsAtOnce: 32 clients starting a stdio session at once all
// succeed (each starts its own node process; the front bounds the starts
// running together, and each child has a session of its own, so the
// scheduler gives it its own share of the CPU), and 64 clients on one
// streamable HTTP upstream all succeed, and so do 32 clients of one shared
// stdio process. Ended sessions leave no process.
func TestManyClientsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 32 node processes: skipped in -short mode")
	}
	url, front, ups := npmFront(t, Options{})
	for _, tc := range []struct {
		up      npmUpstream
		clients int
	}{{ups[0], 32}, {ups[3], 64}, {ups[5], 32}} {
		t.Run(fmt.Sprintf("%s/%d", tc.up.name, tc.clients), func(t *testing.T) {
			errs := make(chan error, tc.clients)
			start := make(chan struct{})
			for i := range tc.clients {
				go func() {
					errs <- func() (err error) {
						defer func() {
							if r := recover(); r != nil {
								err = fmt.Errorf("client %d: %v", i, r)
							}
						}()
						<-start
						s := testpeers.RawSession{T: testpeers.PanicT{TB: t}, URL: url + "/mcp/servers/" + tc.up.name}
						s.Initialize(nil)
						for range 3 {
							if got := s.Call("tools/call", tc.up.call); !strings.Contains(got, tc.up.want) {
								return fmt.Errorf("client %d: tools/call = %.300s", i, got)
							}
						}
						s.End()
						return nil
					}()
				}()
			}
			close(start)
			for range tc.clients {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			waitFor(t, "every session to end", func() bool { return front.Sessions() == 0 })
		})
	}
	waitFor(t, "every started server to exit", func() bool { return len(testpeers.Descendants(t, os.Getpid())) == 1 }) // the HTTP upstream
}

// TestDeleteWithUnansweredServerRequest: a client that declares roots but
// never answers the server's roots/list (npm server-everything asks for
// them right after initialize) can still end its session, and promptly:
// DELETE once waited for that request until the server gave up a minute
// later, and a shutdown overran with it.
func TestDeleteWithUnansweredServerRequest(t *testing.T) {
	url, front, ups := npmFront(t, Options{})
	for _, up := range []npmUpstream{ups[2], ups[3], ups[4]} { // everything: stdio, HTTP, stdio shared
		t.Run(up.name, func(t *testing.T) {
			s := testpeers.RawSession{T: t, URL: url + "/mcp/servers/" + up.name}
			got := s.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"roots": map[string]any{"listChanged": true}}, "clientInfo": map[string]any{"name": "mute", "version": "1"}})
			if s.SID == "" || !strings.Contains(got, "serverInfo") {
				t.Fatalf("initialize: %s", got)
			}
			// The client listens on the session's stream, where the server's
			// roots/list arrives (350 ms after initialized), and never answers.
			asked := make(chan struct{})
			go s.Listen(asked, "roots/list")
			s.Post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			select {
			case <-asked:
			case <-time.After(15 * time.Second):
				t.Fatal("the server's roots/list did not arrive on the session's stream")
			}
			done := make(chan struct{})
			go func() { defer close(done); s.End() }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("DELETE did not finish within 15 s")
			}
			waitFor(t, "the session to end", func() bool { return front.Sessions() == 0 })
		})
	}
}
