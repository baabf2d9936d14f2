package rtfs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
)

// mcpTool is one entry of paired/github_tools.json: a real MCP tools/list
// entry as CCOS cached it.
type mcpTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
	ServerName  string         `json:"server_name"`
}

// discovered turns a tool into a Definition the way MCP discovery does: the
// input schema verbatim, mcp:<server>/<tool>@1.0, an mcp binding.
func discovered(tool mcpTool) capability.Definition {
	d := capability.Definition{
		URI: "mcp:" + tool.ServerName + "/" + tool.Name + "@1.0", Name: tool.Name, Domain: tool.ServerName, Version: "1.0.0",
		Description: tool.Description, Input: tool.InputSchema, Output: capability.Schema{},
		Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: tool.ServerName, Tool: tool.Name}},
	}
	d.Normalize()
	return d
}

// TestPairedAcceptance checks CCOS's conversion against the MCP tool
// schemas it was made from: for each of the 40 GitHub tools, the input
// schema read from paired/capabilities.rtfs is equivalent (property names,
// types, optionality) to the tool's own inputSchema.
func TestPairedAcceptance(t *testing.T) {
	dir := testpeers.Corpus(t, "ccos/paired")
	raw, err := os.ReadFile(filepath.Join(dir, "github_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []mcpTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "capabilities.rtfs"))
	if err != nil {
		t.Fatal(err)
	}
	defs, failures, err := ReadCapabilities("paired/capabilities.rtfs", src)
	if err != nil || len(failures) > 0 {
		t.Fatalf("reading paired/capabilities.rtfs: %v %v", err, failures)
	}
	byURI := map[string]capability.Definition{}
	for _, d := range defs {
		byURI[d.URI] = d
	}
	if len(tools) != 40 || len(defs) != 40 {
		t.Fatalf("%d tools and %d capabilities, want 40 of each", len(tools), len(defs))
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		want := discovered(tool)
		got, ok := byURI[want.URI]
		if !ok {
			t.Errorf("%s: no capability %s in capabilities.rtfs", tool.Name, want.URI)
			continue
		}
		if diffs := equivalentSchemas(want.Input, got.Input); len(diffs) > 0 {
			t.Errorf("%s: the RTFS input schema is not equivalent to the tool's inputSchema: %v", want.URI, diffs)
		}
		if got.Description != want.Description || !reflect.DeepEqual(got.Bindings, want.Bindings) || got.Name != want.Name {
			t.Errorf("%s: description, name or binding differ:\n%q %+v\n%q %+v", want.URI, got.Description, got.Bindings.MCP, want.Description, want.Bindings.MCP)
		}
		if issues := capability.Validate(&want); capability.HasErrors(issues) {
			t.Errorf("%s: the discovered definition is invalid: %v", want.URI, issues)
		}

		// caphub's own RTFS type for the tool says at least what CCOS's does,
		// and the full MCP schema survives a write and a read.
		typed := typeOf(t, SchemaToType(want.Input))
		if diffs := equivalentSchemas(typed, got.Input); len(diffs) > 0 {
			t.Errorf("%s: SchemaToType of the tool's schema differs from CCOS's type: %v", want.URI, diffs)
		}
		if again, text := roundTrip(t, want); !reflect.DeepEqual(again, want) {
			t.Errorf("%s: the discovered definition changed in a round trip\n%s\nwritten:\n%s", want.URI, diffJSON(want, again), text)
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Log("github_tools.json is not sorted by name (fine; matched by URI)")
	}
}

func TestEquivalentSchemasFindsRealDifferences(t *testing.T) {
	dir := testpeers.Corpus(t, "ccos/paired")
	raw, err := os.ReadFile(filepath.Join(dir, "github_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []mcpTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	// Compare create_branch's schema with add_issue_comment's: nothing alike.
	var a, b capability.Schema
	for _, tool := range tools {
		switch tool.Name {
		case "create_branch":
			a = discovered(tool).Input
		case "add_issue_comment":
			b = discovered(tool).Input
		}
	}
	want := []string{
		"body: property only in the second schema",
		"branch: property only in the first schema",
		"from_branch: property only in the first schema",
		"issue_number: property only in the second schema",
	}
	if got := equivalentSchemas(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("differences %q, want %q", got, want)
	}
}
