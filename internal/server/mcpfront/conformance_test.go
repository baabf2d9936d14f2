package mcpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// The MCP conformance suite's server scenarios, run against two
// everything servers directly over streamable HTTP and through the front
// in both session modes (per-client and shared), each saved in a real
// store as a stdio upstream (the SDK relay) and as a streamable HTTP
// upstream (the HTTP relay per client; the SDK relay when shared): the Go
// SDK's conformance everything-server, and npm server-everything (the MCP
// reference servers', run by Node). Every scenario that passes directly
// against a server must pass through the front in both modes.

const (
	conformancePkg  = "@modelcontextprotocol/conformance"
	scenarioTimeout = 60 * time.Second // one scenario, node start included
)

// conformanceTarget is an MCP endpoint the suite runs against: directly
// (baseline "") or through the front, compared to the direct target named
// baseline.
type conformanceTarget struct {
	name, url, title, baseline string
}

// scenarioResult is one scenario's outcome against one target.
type scenarioResult struct {
	pass                     bool
	passed, failed, warnings int
	note                     string // why it failed, when it did
	duration                 time.Duration
}

// short is the result in a table cell.
func (r scenarioResult) short() string {
	if r.pass {
		return fmt.Sprintf("PASS %d %.1fs", r.passed, r.duration.Seconds())
	}
	return fmt.Sprintf("FAIL %d/%d %.1fs", r.failed, r.passed+r.failed, r.duration.Seconds())
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
		t.Skip("the MCP conformance suite takes minutes (240 scenario runs): skipped in -short mode")
	}
	suite := filepath.Join(testpeers.NPMPackage(t, conformancePkg), "dist", "index.js")
	node := testpeers.Node22(t)
	dir := t.TempDir()

	bin := testpeers.GoEverything(t)
	scenarios := listScenarios(t, node, suite)
	if re := os.Getenv("MCPFRONT_CONFORMANCE_ONLY"); re != "" {
		only := regexp.MustCompile(re)
		scenarios = slices.DeleteFunc(scenarios, func(s string) bool { return !only.MatchString(s) })
	}
	if d := os.Getenv("MCPFRONT_CONFORMANCE_OUT"); d != "" {
		dir = d
	}

	// Direct: the everything-servers over streamable HTTP, the Go one
	// stateful (its default stateless mode cannot send server-to-client
	// requests).
	directURL := testpeers.GoEverythingHTTP(t)
	npmIndex := filepath.Join(testpeers.NPMPackage(t, serverEverything), "dist", "index.js")
	npmDirectURL := testpeers.EverythingHTTP(t, "streamableHttp")

	// Fronted: the same servers saved in a real store as stdio upstreams, and
	// other processes of them as streamable HTTP upstreams (their own, so
	// that the direct runs do not share their sessions), each saved twice:
	// per-client and shared.
	httpUpstreamURL := testpeers.GoEverythingHTTP(t)
	npmUpstreamURL := testpeers.EverythingHTTP(t, "streamableHttp")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	servers := discover.NewServers(st)
	saved := []mcpconn.Server{
		{Name: "everything", Command: bin},
		{Name: "everything-http", URL: httpUpstreamURL},
		{Name: "npm-everything", Command: node, Args: []string{npmIndex, "stdio"}},
		{Name: "npm-everything-http", URL: npmUpstreamURL},
	}
	for _, srv := range saved {
		shared := srv
		shared.Name, shared.Sessions = srv.Name+"-shared", mcpconn.SessionsShared
		for _, s := range []mcpconn.Server{srv, shared} {
			if err := servers.SaveServer(ctx, &s); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs := &recordSink{}
	pipeline := invoke.New(nil, nil, invoke.Options{Recorder: recs})
	frontURL := serveFront(t, New(servers, pipeline, Options{Version: "conformance", Log: testLog()}), nil) + "/mcp/servers/"
	targets := []conformanceTarget{
		{"direct", directURL, "Go everything-server, HTTP, direct", ""},
		{"fronted", frontURL + "everything", "Go, stdio, per-client (stdio relay)", "direct"},
		{"fronted-shared", frontURL + "everything-shared", "Go, stdio, shared (stdio relay)", "direct"},
		{"fronted-http", frontURL + "everything-http", "Go, HTTP, per-client (HTTP relay)", "direct"},
		{"fronted-http-shared", frontURL + "everything-http-shared", "Go, HTTP, shared (SDK relay)", "direct"},
		{"npm-direct", npmDirectURL, "npm server-everything, HTTP, direct", ""},
		{"npm", frontURL + "npm-everything", "npm, stdio, per-client", "npm-direct"},
		{"npm-shared", frontURL + "npm-everything-shared", "npm, stdio, shared", "npm-direct"},
		{"npm-http", frontURL + "npm-everything-http", "npm, HTTP, per-client", "npm-direct"},
		{"npm-http-shared", frontURL + "npm-everything-http-shared", "npm, HTTP, shared", "npm-direct"},
	}
	if re := os.Getenv("MCPFRONT_CONFORMANCE_TARGETS"); re != "" {
		only := regexp.MustCompile(re)
		targets = slices.DeleteFunc(targets, func(tg conformanceTarget) bool {
			return !only.MatchString(tg.name) && !slices.ContainsFunc(targets, func(o conformanceTarget) bool { return only.MatchString(o.name) && o.baseline == tg.name })
		})
	}

	// The direct targets first; then each fronted target runs the scenarios
	// that passed against its direct target (those it must pass too).
	results := map[string]map[string]scenarioResult{}
	for _, tg := range targets {
		results[tg.name] = map[string]scenarioResult{}
	}
	start := time.Now()
	var runs int
	for _, direct := range []bool{true, false} {
		var batch []scenarioJob
		for _, s := range scenarios {
			for _, tg := range targets {
				if (tg.baseline == "") == direct && (direct || results[tg.baseline][s].pass) {
					batch = append(batch, scenarioJob{s, tg.name, tg.url})
				}
			}
		}
		runs += len(batch)
		for j, r := range runScenarios(node, suite, filepath.Join(dir, "results"), batch) {
			results[j.target][j.scenario] = r
		}
	}

	var table strings.Builder
	fmt.Fprintf(&table, "MCP conformance (%s), %d server scenarios against %d targets, %d runs in %s:\n", conformanceVersion(t, suite), len(scenarios), len(targets), runs, time.Since(start).Round(time.Second))
	fmt.Fprintf(&table, "%-30s", "scenario")
	for _, tg := range targets {
		fmt.Fprintf(&table, " %-20s", tg.name)
	}
	table.WriteString("\n")
	var regressions, failures []string
	passed := map[string]int{}
	for _, s := range scenarios {
		fmt.Fprintf(&table, "%-30s", s)
		for _, tg := range targets {
			r, ran := results[tg.name][s]
			switch {
			case !ran:
				fmt.Fprintf(&table, " %-20s", "- (fails directly)")
			case r.pass:
				fmt.Fprintf(&table, " %-20s", r.short())
				passed[tg.name]++
			case tg.baseline == "":
				fmt.Fprintf(&table, " %-20s", r.short())
				failures = append(failures, fmt.Sprintf("%s (%s): %s", s, tg.name, r))
			default:
				fmt.Fprintf(&table, " %-20s", r.short())
				regressions = append(regressions, fmt.Sprintf("%s (%s): %s", s, tg.name, r))
			}
		}
		table.WriteString("\n")
	}
	table.WriteString("passed:\n")
	for _, tg := range targets {
		fmt.Fprintf(&table, "  %-20s %2d/%d  %s\n", tg.name, passed[tg.name], len(scenarios), tg.title)
	}
	if len(failures) > 0 {
		fmt.Fprintf(&table, "failing directly:\n  %s\n", strings.Join(failures, "\n  "))
	}
	t.Log(table.String())
	if len(regressions) > 0 {
		t.Errorf("%d scenarios pass directly but fail through the front (results under %s):\n  %s", len(regressions), dir, strings.Join(regressions, "\n  "))
	}
	for _, tg := range targets {
		if tg.baseline == "" && passed[tg.name] == 0 {
			t.Errorf("no scenario passed directly against %s: the suite or the server is broken", tg.title)
		}
	}
	if n := recs.count(); n == 0 {
		t.Error("the fronted tools/call requests left no invocation record")
	} else {
		t.Logf("the front recorded %d tools/call invocations", n)
	}
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

// scenarioJob is a scenario to run against a target.
type scenarioJob struct {
	scenario, target, url string
}

// runScenarios runs scenarios, as many at once as there are CPUs (2 to 4:
// Node is CPU-hungry at start), writing their results under dir.
func runScenarios(node, suite, dir string, batch []scenarioJob) map[scenarioJob]scenarioResult {
	results := map[scenarioJob]scenarioResult{}
	var mu sync.Mutex
	jobs := make(chan scenarioJob)
	var wg sync.WaitGroup
	for range max(2, min(4, runtime.NumCPU())) {
		wg.Go(func() {
			for j := range jobs {
				r := runScenario(node, suite, j.url, j.scenario, filepath.Join(dir, j.target))
				mu.Lock()
				results[j] = r
				mu.Unlock()
			}
		})
	}
	for _, j := range batch {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	return results
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
