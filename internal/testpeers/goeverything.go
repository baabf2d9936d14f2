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

// CaphubPkg is caphub's command.
const CaphubPkg = "github.com/caphub/caphub/cmd/caphub"

// builds are the binaries Build made in this test binary, by package.
var builds struct {
	mu   sync.Mutex
	dirs map[string]*build
}

type build struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// Build builds the Go package pkg once per test binary (go build caches
// it) into a temporary directory and returns the binary's path, or fails
// the test. Call RemoveBuilt from TestMain to remove what it built.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.dirs == nil {
		builds.dirs = map[string]*build{}
	}
	b := builds.dirs[pkg]
	if b == nil {
		b = &build{}
		builds.dirs[pkg] = b
	}
	builds.mu.Unlock()
	name := filepath.Base(pkg)
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "caphub-build-"+name)
		if b.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(b.dir, name), pkg)
		cmd.Dir = RepoRoot(t)
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("build %s: %v\n%s\nIf go.sum lacks its dependencies, run: GOFLAGS=-mod=mod go get %s", pkg, b.err, b.out, pkg)
	}
	return filepath.Join(b.dir, name)
}

// GoEverything builds the Go SDK's everything-server once per test binary
// and returns its path (see Build).
func GoEverything(t testing.TB) string { return Build(t, GoEverythingPkg) }

// Caphub builds caphub once per test binary and returns its path (see
// Build).
func Caphub(t testing.TB) string { return Build(t, CaphubPkg) }

// RemoveBuilt removes what Build built (for TestMain, after the tests
// ran).
func RemoveBuilt() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	for _, b := range builds.dirs {
		if b.dir != "" {
			_ = os.RemoveAll(b.dir)
		}
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
