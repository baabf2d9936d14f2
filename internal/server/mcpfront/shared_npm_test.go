package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEverything is the npm package of the MCP reference servers'
// everything server.
const serverEverything = "@modelcontextprotocol/server-everything"

// TestSharedNPMEverything fronts npm server-everything over stdio as a
// shared server, for two Go SDK clients and the TypeScript SDK's client at
// once: one process serves them all, each client gets its own progress
// with its own token, a cancelled call leaves the others running, and a
// sampling request goes to the client whose call caused it.
func TestSharedNPMEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node: skipped in -short mode")
	}
	node := testpeers.Node22(t)
	pkg := testpeers.NPMPackage(t, serverEverything)
	modules := testpeers.NPMDir(t)
	index := filepath.Join(pkg, "dist", "index.js")
	servers := savedServers{"everything": {Name: "everything", Command: node, Args: []string{index, "stdio"}, Sessions: mcpconn.SessionsShared}}
	hooks := &recorder{}
	front := New(servers, hooks, Options{Log: testLog()})
	url := serveFront(t, front, nil) + "/mcp/servers/everything"

	// Every process running server-everything that the test started, seen
	// by a watcher that samples them until the test ends.
	procs := watchChildren(t, index)

	a, b := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false)
	if got := procs.now(); len(got) != 1 {
		t.Fatalf("server-everything processes for two clients of a shared server: %v, want one", got)
	}

	// The TypeScript client runs its calls while a and b run theirs.
	type tsOut struct {
		Progress [][]float64
		Results  []string
		Aborted  string
		Errors   []string
		// LateProgress counts the progress of the aborted call that reached
		// the client after it aborted (before the front learnt of it).
		LateProgress int
	}
	tsDone := make(chan tsOut, 1)
	go func() {
		var out tsOut
		stdout, stderr, err := runNodeScript(node, 60*time.Second, filepath.Join("testdata", "tsshared.mjs"), modules, url)
		if err != nil {
			t.Errorf("the TypeScript client failed: %v\n%s%s", err, stdout, stderr)
		} else if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Errorf("the TypeScript client's output %q: %v\n%s", stdout, err, stderr)
		}
		tsDone <- out
	}()

	// a and b use the same token, one as a number and one as a string.
	long := func(p *peer, tok any, duration, steps float64) (string, error) {
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": duration, "steps": steps}}
		params.SetProgressToken(tok)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := p.cs.CallTool(ctx, params)
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	var wg sync.WaitGroup
	for p, tok := range map[*peer]any{a: 1, b: "1"} {
		wg.Go(func() {
			got, err := long(p, tok, 1, 3)
			if err != nil || !strings.Contains(got, "Long running operation completed") {
				t.Errorf("%s: long running operation = %q, %v", p.name, got, err)
			}
		})
	}
	wg.Wait()
	for p, want := range map[*peer]any{a: float64(1), b: "1"} {
		for i, pr := range p.progressOf(t, 3) {
			if pr.ProgressToken != want || pr.Progress != float64(i+1) || pr.Total != 3 {
				t.Errorf("%s: progress %d = %+v (token %#v), want token %#v", p.name, i, pr, pr.ProgressToken, want)
			}
		}
	}

	// a cancels its call after its first progress; b's, running meanwhile,
	// runs to its end.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 4, "steps": 4}}
		params.SetProgressToken("cancel-me")
		_, err := a.cs.CallTool(ctx, params)
		cancelled <- err
	}()
	bDone := make(chan string, 1)
	go func() {
		got, err := long(b, "b-runs", 2, 2)
		if err != nil {
			got = "error: " + err.Error()
		}
		bDone <- got
	}()
	if pr := a.progressOf(t, 1)[0]; pr.ProgressToken != "cancel-me" {
		t.Errorf("a: progress of the call to cancel = %+v", pr)
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("a's cancelled call: %v", err)
	}
	if got := <-bDone; !strings.Contains(got, "Long running operation completed. Duration: 2 seconds") {
		t.Errorf("b's call while a cancelled its own = %q, want it to complete", got)
	}

	// Sampling during a's call goes to a, during b's to b.
	for _, p := range []*peer{a, b} {
		got, isErr := callText(t, p.cs, timeout(t), &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "who are you?"}})
		if isErr || !strings.Contains(got, "hi from "+p.name) || !strings.Contains(got, "model-"+p.name) {
			t.Errorf("%s: sampling = %q (isError %v), want the answer of %s", p.name, got, isErr, p.name)
		}
	}

	ts := <-tsDone
	for i, want := range [][]float64{{1, 2, 3}, {1, 2, 3}} {
		if i >= len(ts.Progress) || !slices.Equal(ts.Progress[i], want) {
			t.Errorf("TypeScript client: progress of call %d = %v, want %v", i, ts.Progress, want)
		}
	}
	if len(ts.Results) != 2 || !strings.Contains(ts.Results[0], "Duration: 1 seconds") || !strings.Contains(ts.Results[1], "Duration: 1.5 seconds") {
		t.Errorf("TypeScript client: results %q", ts.Results)
	}
	if !strings.HasPrefix(ts.Aborted, "rejected: ") || !strings.Contains(ts.Aborted, "AbortError") {
		t.Errorf("TypeScript client: the aborted call %q", ts.Aborted)
	}
	// The SDK's server answers a cancelled request (with an error), which the
	// TypeScript client reports as a response to an unknown id; any other
	// error (progress for a token it did not hand out, say) is the front's.
	for _, e := range ts.Errors {
		if !strings.Contains(e, "response for an unknown message ID") {
			t.Errorf("TypeScript client reported an error: %s", e)
		}
	}
	if ts.LateProgress > 0 {
		t.Logf("TypeScript client: %d progress notifications of its aborted call came after the abort", ts.LateProgress)
	}
	if all := procs.all(); len(all) != 1 {
		t.Errorf("server-everything processes started over the test: %v, want one", all)
	}
}

// runNodeScript runs a Node script of the package (a path relative to its
// directory) and returns its output.
func runNodeScript(node string, limit time.Duration, script string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// children samples the test's child processes whose command line holds a
// string, until the test ends.
type childWatch struct {
	t        testing.TB
	procs    func(testing.TB) []testpeers.Process
	contains string
	mu       sync.Mutex
	seen     map[int]bool
	last     []int
}

func watchChildren(t *testing.T, contains string) *childWatch {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("counting processes needs /proc")
	}
	c := &childWatch{t: t, procs: testpeers.Processes, contains: contains, seen: map[int]bool{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	c.sample(contains)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				c.sample(contains)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return c
}

// sample reads the child processes of this one that run contains.
func (c *childWatch) sample(contains string) {
	var pids []int
	for _, p := range c.procs(c.t) {
		if p.PPID == os.Getpid() && strings.Contains(p.Cmdline, contains) {
			pids = append(pids, p.PID)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = pids
	for _, p := range pids {
		c.seen[p] = true
	}
}

// now samples the processes at once.
func (c *childWatch) now() []int {
	c.sample(c.contains)
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.last)
}

// all is every process seen.
func (c *childWatch) all() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for p := range c.seen {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	return pids
}
