package main

import (
	"bytes"
	"fmt"
	"os"
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
	started := descendants(t, p.cmd.Process.Pid)
	if len(started) < 3 {
		t.Fatalf("caphub serve runs %d processes (%v), want at least the 3 stdio servers", len(started), started)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("caphub serve exited with %v after SIGTERM\n%s", err, p.logs)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("caphub serve did not stop within 5 s of SIGTERM\n%s", p.logs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range started {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s), started by caphub serve, is still alive after it stopped", pid, cmdline(pid))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// descendants lists the live processes under pid (Linux /proc), or skips
// where /proc is absent.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot list processes here")
	}
	parent := map[int]int{}
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		var ppid int
		if len(f) > 1 && f[0] != "Z" {
			fmt.Sscan(f[1], &ppid)
			parent[p] = ppid
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " ")
}
