package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
)

// TestServeSIGTERMLeavesNoProcess: caphub serve with live fronted sessions
// of stdio servers (npm server-memory and server-everything, one of them
// with a server-to-client request its client never answers) stops within
// 5 s of SIGTERM, and no process it started is left alive.
func TestServeSIGTERMLeavesNoProcess(t *testing.T) {
	node := testpeers.Node22(t)
	memory := filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	everything := filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	db := filepath.Join(t.TempDir(), "caphub.db")
	for _, s := range [][]string{{"memory", node + " " + memory}, {"everything", node + " " + everything + " stdio"}} {
		out, err := exec.Command(caphubBinary(t), "discover", "mcp", s[0], "--command", s[1], "--db", db).CombinedOutput()
		if err != nil {
			t.Fatalf("discover %s: %v\n%s", s[0], err, out)
		}
	}
	p := startServe(t, db)
	for range 2 {
		s := testpeers.RawSession{T: t, URL: p.url + "/mcp/servers/memory"}
		s.Initialize(nil)
		if got := s.Call("tools/call", map[string]any{"name": "read_graph", "arguments": map[string]any{}}); !strings.Contains(got, "entities") {
			t.Fatalf("read_graph: %s", got)
		}
	}
	mute := testpeers.RawSession{T: t, URL: p.url + "/mcp/servers/everything"}
	mute.Initialize(map[string]any{"roots": map[string]any{"listChanged": true}})
	asked := make(chan struct{})
	go mute.Listen(asked, "roots/list")
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the server's roots/list did not arrive")
	}
	started := testpeers.Descendants(t, p.cmd.Process.Pid)
	if len(started) < 3 {
		t.Fatalf("caphub serve runs %d processes (%v), want at least the 3 stdio servers", len(started), started)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("caphub serve exited with %v after SIGTERM\n%s", err, p.logs)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("caphub serve did not stop within 5 s of SIGTERM\n%s", p.logs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, proc := range started {
		for testpeers.Alive(proc.PID) {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s), started by caphub serve, is still alive after it stopped", proc.PID, proc.Cmdline)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Killed outright (SIGKILL, the OOM killer, a crash), caphub serve cannot
// stop what it started: the kernel does (each stdio server it starts is
// killed when caphub dies). npm server-everything outlived it before,
// orphaned (server-memory exits when its stdin closes; it does not).
func TestServeSIGKILLLeavesNoStdioServer(t *testing.T) {
	node := testpeers.Node22(t)
	memory := filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	everything := filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	db := filepath.Join(t.TempDir(), "caphub.db")
	// A server run by a wrapper that outlives it (sh waits, then sleeps):
	// its stdin closing when caphub dies does not end the wrapper.
	wrapped := fmt.Sprintf(`/bin/sh -c '%s %s stdio; sleep 600'`, node, everything)
	for _, s := range [][]string{{"memory", node + " " + memory}, {"everything", wrapped}} {
		if out, err := exec.Command(caphubBinary(t), "discover", "mcp", s[0], "--command", s[1], "--db", db).CombinedOutput(); err != nil {
			t.Fatalf("discover %s: %v\n%s", s[0], err, out)
		}
	}
	p := startServe(t, db)
	// Through the front (the stdio relay) and through /mcp (the discovered
	// tools' bindings).
	echo := map[string]any{"message": "hi"}
	for _, c := range []struct{ path, tool string }{
		{"/mcp/servers/memory", "read_graph"}, {"/mcp/servers/everything", "echo"},
		{"/mcp", "mcp_memory_read_graph"}, {"/mcp", "mcp_everything_echo"},
	} {
		s := testpeers.RawSession{T: t, URL: p.url + c.path}
		s.Initialize(nil)
		args := map[string]any{}
		if strings.HasSuffix(c.tool, "echo") {
			args = echo
		}
		if got := s.Call("tools/call", map[string]any{"name": c.tool, "arguments": args}); strings.Contains(got, `"isError":true`) || strings.Contains(got, `"error"`) {
			t.Fatalf("%s %s: %s", c.path, c.tool, got)
		}
	}
	started := testpeers.Descendants(t, p.cmd.Process.Pid)
	if len(started) < 4 {
		t.Fatalf("caphub serve runs %d processes (%v), want the 4 stdio servers", len(started), started)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, proc := range started {
		for testpeers.Alive(proc.PID) {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s), started by caphub serve, is still alive after it was killed", proc.PID, proc.Cmdline)
				_ = syscall.Kill(proc.PID, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
