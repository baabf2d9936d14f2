package mcpgw_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
)

// TestConformance runs scenarios of the MCP conformance suite (npm
// @modelcontextprotocol/conformance) against the gateway; each must exit 0
// with every check a SUCCESS.
func TestConformance(t *testing.T) {
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/conformance")
	testpeers.Node22(t)
	f := newFixture(t, mcpgw.Options{})
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			results := t.TempDir()
			out, errOut, err := testpeers.RunNode(t, 2*time.Minute, filepath.Join(pkg, "dist", "index.js"), "server", "--url", f.mcpURL, "--scenario", scenario, "-o", results)
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
	testpeers.Node22(t)
	f := newFixture(t, mcpgw.Options{})
	cli := filepath.Join(pkg, "clients", "launcher", "build", "index.js")

	out, errOut, err := testpeers.RunNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL, "--method", "tools/list")
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
	listed := mcpgw.FastServed(f.gw)
	if listed < 1 {
		t.Errorf("the fast path answered none of the inspector's requests, want its tools/list")
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

	out, errOut, err = testpeers.RunNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL,
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
	if n := mcpgw.FastServed(f.gw) - listed; n != 2 {
		t.Errorf("the fast path answered %d of the inspector's requests for the call, want 2: the tools/list it sends first and the tools/call", n)
	}

	out, errOut, err = testpeers.RunNode(t, 2*time.Minute, cli, "--cli", "--transport", "http", "--server-url", f.mcpURL,
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

// tsClientRun is what the TypeScript client (testpeers.TSClient) printed.
type tsClientRun struct {
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	Pages        []int    `json:"pages"`
	Calls        []tsCall `json:"calls"`
}

// tsCall is one call's result as the TypeScript client printed it.
type tsCall struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MIMEType string `json:"mimeType"`
		URI      string `json:"uri"`
	} `json:"content"`
	// Progress lists the progress notifications the call received, when it
	// asked for them.
	Progress []struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	} `json:"progress"`
	// Cancelled says the client cancelled the call (cancelOnProgress), with
	// the error the SDK raised.
	Cancelled bool   `json:"cancelled"`
	Error     string `json:"error"`
}

// runTSClient drives url with the official TypeScript SDK's client
// (testpeers.TSClient), making the calls given as {name, arguments}, and
// reads each call's result.
func runTSClient(t *testing.T, url string, calls ...map[string]any) tsClientRun {
	t.Helper()
	raw := testpeers.TSClient(t, url, calls...)
	run := tsClientRun{Instructions: raw.Instructions, Tools: raw.Tools, Pages: raw.Pages}
	for _, c := range raw.Calls {
		var call tsCall
		if err := json.Unmarshal(c, &call); err != nil {
			t.Fatalf("TypeScript client: a call's result %.500s: %v", c, err)
		}
		run.Calls = append(run.Calls, call)
	}
	return run
}

// TestTypeScriptClientLargeCatalog drives the gateway over GitHub's API
// with the official TypeScript SDK client: by default it sees the three
// search tools, finds, describes and invokes through them (its output
// schema checks pass); with no tool limit it pages through every tool.
func TestTypeScriptClientLargeCatalog(t *testing.T) {
	testpeers.Node22(t)
	f := gitHubFixture(t, mcpgw.Options{})
	run := runTSClient(t, f.mcpURL,
		map[string]any{"name": mcpgw.ToolFindCapabilities, "arguments": map[string]any{"query": "create an issue"}},
		map[string]any{"name": mcpgw.ToolDescribeCapability, "arguments": map[string]any{"uri": "ossa:github/issues_create@23.0"}},
		map[string]any{"name": mcpgw.ToolInvokeCapability, "arguments": map[string]any{"uri": "ossa:everruns/add@1.0", "input": map[string]any{"a": 2, "b": 3}}},
	)
	slices.Sort(run.Tools)
	if want := []string{mcpgw.ToolDescribeCapability, mcpgw.ToolFindCapabilities, mcpgw.ToolInvokeCapability}; !slices.Equal(run.Tools, want) {
		t.Errorf("TypeScript client lists %v, want %v", run.Tools, want)
	}
	if !strings.Contains(run.Instructions, "more than the 100") {
		t.Errorf("TypeScript client instructions %q", run.Instructions)
	}
	if len(run.Calls) != 3 {
		t.Fatalf("TypeScript client made %d calls", len(run.Calls))
	}
	var found struct {
		Count        int `json:"count"`
		Capabilities []struct {
			URI    string `json:"uri"`
			Params string `json:"params"`
		} `json:"capabilities"`
	}
	if c := run.Calls[0]; c.IsError || json.Unmarshal(c.StructuredContent, &found) != nil || found.Count != 8 {
		t.Errorf("find_capabilities: %s", c.StructuredContent)
	}
	hit := false
	for _, c := range found.Capabilities {
		hit = hit || c.URI == "ossa:github/issues_create@23.0" && strings.HasPrefix(c.Params, "owner*: string, repo*: string, title*")
	}
	if !hit {
		t.Errorf("find_capabilities(create an issue) lacks issues_create: %+v", found.Capabilities)
	}
	var described struct {
		InputSchema struct {
			Required []string `json:"required"`
		} `json:"input_schema"`
	}
	if c := run.Calls[1]; c.IsError || json.Unmarshal(c.StructuredContent, &described) != nil || !slices.Contains(described.InputSchema.Required, "title") {
		t.Errorf("describe_capability: %.500s", c.StructuredContent)
	}
	if c := run.Calls[2]; c.IsError || !strings.Contains(string(c.StructuredContent), `"result":5`) {
		t.Errorf("invoke_capability(add 2 3): %s", c.StructuredContent)
	}

	g := gitHubFixture(t, mcpgw.Options{MaxTools: -1})
	all := runTSClient(t, g.mcpURL)
	t.Logf("TypeScript client paged %d tools in %d pages (largest %d bytes)", len(all.Tools), len(all.Pages), slices.Max(all.Pages))
	if len(all.Tools) != len(g.gw.Tools()) || len(all.Pages) < 2 || slices.Max(all.Pages) > mcpgw.DefaultMaxListBytes {
		t.Errorf("TypeScript client: %d tools in pages of %v bytes, want all %d within %d bytes each", len(all.Tools), all.Pages, len(g.gw.Tools()), mcpgw.DefaultMaxListBytes)
	}
}

// TestInspectorLargeCatalog drives the gateway over GitHub's API with the
// MCP Inspector's CLI: tools/list, find_capabilities and
// describe_capability by default; tools/list paged to the end with no tool
// limit; tools/list refused past the limit when the operator chose so.
func TestInspectorLargeCatalog(t *testing.T) {
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/inspector")
	testpeers.Node22(t)
	cli := filepath.Join(pkg, "clients", "launcher", "build", "index.js")
	inspect := func(url string, args ...string) (string, string, error) {
		return testpeers.RunNode(t, 3*time.Minute, append([]string{cli, "--cli", "--transport", "http", "--server-url", url}, args...)...)
	}
	type toolList struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}

	f := gitHubFixture(t, mcpgw.Options{})
	out, errOut, err := inspect(f.mcpURL, "--method", "tools/list")
	var list toolList
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Tools) != 3 {
		t.Fatalf("inspector tools/list: %v, want the 3 search tools\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
	}
	out, errOut, err = inspect(f.mcpURL, "--method", "tools/call", "--tool-name", mcpgw.ToolFindCapabilities, "--tool-arg", "query=list pull requests")
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Count        int                  `json:"count"`
			Capabilities []capability.Summary `json:"capabilities"`
		} `json:"structuredContent"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.IsError || res.StructuredContent.Count != 8 {
		t.Errorf("inspector find_capabilities: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
	}
	out, errOut, err = inspect(f.mcpURL, "--method", "tools/call", "--tool-name", mcpgw.ToolDescribeCapability, "--tool-arg", "uri=ossa:github/pulls_list@23.0")
	if err != nil || !strings.Contains(out, `"input_schema"`) || !strings.Contains(out, `"uri": "ossa:github/pulls_list@23.0"`) {
		t.Errorf("inspector describe_capability: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
	}

	g := gitHubFixture(t, mcpgw.Options{MaxTools: -1})
	out, errOut, err = inspect(g.mcpURL, "--method", "tools/list")
	list = toolList{}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Tools) != len(g.gw.Tools()) {
		t.Errorf("inspector tools/list with no tool limit: %v, %d tools, want all %d\nstderr:\n%.2000s", err, len(list.Tools), len(g.gw.Tools()), errOut)
	}

	r := gitHubFixture(t, mcpgw.Options{LargeCatalog: mcpgw.LargeCatalogRefuse})
	out, errOut, err = inspect(r.mcpURL, "--method", "tools/list")
	if err == nil || !strings.Contains(out+errOut, "tools/list refused") {
		t.Errorf("inspector tools/list past the limit with refuse: %v, want the refusal\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
	}
}
