package testpeers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// GoEverythingPkg is the Go SDK's conformance everything-server.
const GoEverythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

var goEverything struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// GoEverything builds the Go SDK's everything-server once per test binary
// (go build caches it) and returns its path, or fails the test. Call
// RemoveBuilt from TestMain to remove the binary.
func GoEverything(t testing.TB) string {
	t.Helper()
	goEverything.once.Do(func() {
		goEverything.dir, goEverything.err = os.MkdirTemp("", "caphub-go-everything")
		if goEverything.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(goEverything.dir, "everything-server"), GoEverythingPkg)
		cmd.Dir = RepoRoot(t)
		goEverything.out, goEverything.err = cmd.CombinedOutput()
	})
	if goEverything.err != nil {
		t.Fatalf("build %s: %v\n%s\nIf go.sum lacks its dependencies, run: GOFLAGS=-mod=mod go get %s", GoEverythingPkg, goEverything.err, goEverything.out, GoEverythingPkg)
	}
	return filepath.Join(goEverything.dir, "everything-server")
}

// RemoveBuilt removes what GoEverything built (for TestMain, after the
// tests ran).
func RemoveBuilt() {
	if goEverything.dir != "" {
		_ = os.RemoveAll(goEverything.dir)
	}
}

// GoEverythingHTTP runs the Go SDK's everything-server over stateful
// streamable HTTP (stateful: its stateless default cannot send
// server-to-client requests) on a free loopback port until the test ends,
// and returns its URL.
func GoEverythingHTTP(t testing.TB) string {
	t.Helper()
	bin := GoEverything(t)
	addr := FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-http", addr, "-stateless=false")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	WaitListening(t, addr, 10*time.Second, logs.String)
	return "http://" + addr + "/mcp"
}
