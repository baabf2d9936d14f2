package testpeers

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// EverythingHTTP runs npm server-everything over HTTP (node dist/index.js
// TRANSPORT, on PORT) on a free loopback port until the test ends, and
// returns its endpoint's URL: transport is "streamableHttp" (served at
// /mcp) or "sse" (the 2024-11-05 SSE transport, at /sse). It skips the
// test when Node 22 or the package is missing.
func EverythingHTTP(t testing.TB, transport string) string {
	t.Helper()
	node := Node22(t)
	pkg := NPMPackage(t, "@modelcontextprotocol/server-everything")
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(node, filepath.Join(pkg, "dist", "index.js"), transport)
	cmd.Env = append(os.Environ(), "PORT="+port)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	WaitListening(t, addr, 20*time.Second, logs.String)
	if transport == "sse" {
		return "http://" + addr + "/sse"
	}
	return "http://" + addr + "/mcp"
}
