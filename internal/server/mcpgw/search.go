package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names of the search-mode tools.
const (
	ToolFindCapabilities = "find_capabilities"
	ToolInvokeCapability = "invoke_capability"
)

// Limits of find_capabilities.
const (
	defaultFindLimit = 10
	maxFindLimit     = 50
)

var findInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What the capability should do, in words: matched against names, titles, descriptions, keywords, intents, domains and categories, best matches first. Empty lists capabilities in registry order."},
    "domain": {"type": "string", "description": "Only capabilities of this domain; dotted prefixes match both ways (github matches github.issues)."},
    "category": {"type": "string", "description": "Only capabilities of this category, e.g. crud.read or search."},
    "intent": {"type": "string", "description": "Only capabilities declaring exactly this Agent OS intent, e.g. messaging.send_text."},
    "limit": {"type": "integer", "minimum": 1, "default": 10, "description": "How many capabilities to return, 1 to 50 (default 10; more than 50 counts as 50)."}
  },
  "additionalProperties": false
}`)

var findOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "capabilities": {
      "type": "array",
      "description": "The matching invocable capabilities, best first.",
      "items": {
        "type": "object",
        "properties": {
          "uri": {"type": "string", "description": "The URI to pass to invoke_capability (@MAJOR.MINOR of the latest version)."},
          "version": {"type": "string", "description": "The latest version's full version."},
          "tool_name": {"type": "string", "description": "The capability's tool name when caphub serves one tool per capability."},
          "title": {"type": "string"},
          "description": {"type": "string"},
          "stability": {"type": "string"},
          "input_schema": {"type": "object", "description": "JSON Schema of the input object."},
          "output_schema": {"type": "object", "description": "JSON Schema of the output, when declared."}
        },
        "required": ["uri", "input_schema"]
      }
    },
    "count": {"type": "integer", "description": "How many capabilities are returned."}
  },
  "required": ["capabilities", "count"]
}`)

var invokeInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "uri": {"type": "string", "description": "The capability URI, as find_capabilities returns it, e.g. ossa:everruns/get_weather@1.0 (@MAJOR or no version also resolve)."},
    "input": {"type": "object", "description": "The input object, matching the capability's input_schema."},
    "approval_id": {"type": "string", "description": "Only when retrying a call that was answered APPROVAL_REQUIRED: the approval id it gave, once a human approved it."}
  },
  "required": ["uri"],
  "additionalProperties": false
}`)

var invokeOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "uri": {"type": "string", "description": "The URI of the version that ran (@MAJOR.MINOR)."},
    "version": {"type": "string", "description": "Its full version."},
    "output": {"description": "The capability's output."},
    "binding": {"type": "string", "description": "The binding that ran it (native, mcp, http, grpc, cli, delegation)."},
    "attempts": {"type": "array", "description": "Every attempt made."},
    "duration_ms": {"type": "number"},
    "warnings": {"type": "array", "items": {"type": "string"}, "description": "E.g. that the version is deprecated."}
  },
  "required": ["uri", "version", "output", "binding"]
}`)

// addSearchTools serves the search mode's two tools.
func (g *Gateway) addSearchTools() {
	no, yes := false, true
	g.server.AddTool(&mcp.Tool{
		Name:  ToolFindCapabilities,
		Title: "Find capabilities",
		Description: "Search caphub's capability registry for capabilities that can do a task. Returns, best first, each capability's URI, title, description and input (and output) JSON Schema. " +
			"Call invoke_capability with a URI and an input object matching its input_schema to run one.",
		InputSchema:  findInputSchema,
		OutputSchema: admitErrors(findOutputSchema),
		Annotations:  &mcp.ToolAnnotations{Title: "Find capabilities", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}, g.findCapabilities)
	g.server.AddTool(&mcp.Tool{
		Name:  ToolInvokeCapability,
		Title: "Invoke a capability",
		Description: "Run a capability of caphub's registry: give its URI (from find_capabilities) and an input object matching its input_schema. " +
			"Returns the output, the version and binding that ran; a failure is a tool error with the capability's error code.",
		InputSchema:  invokeInputSchema,
		OutputSchema: admitErrors(invokeOutputSchema),
		Annotations:  &mcp.ToolAnnotations{Title: "Invoke a capability", OpenWorldHint: &yes},
	}, g.invokeCapability)
}

// admitErrors is a search tool's output schema made to admit the ToolError
// of a failed call (see outputSchemaWithError).
func admitErrors(raw json.RawMessage) any {
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return raw
	}
	if w, ok := outputSchemaWithError(s); ok {
		return w
	}
	return raw
}

// capabilityMatch is one find_capabilities result.
type capabilityMatch struct {
	URI          string          `json:"uri"`
	Version      string          `json:"version,omitempty"`
	ToolName     string          `json:"tool_name,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	Stability    string          `json:"stability,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

type findArgs struct {
	Query    string `json:"query"`
	Domain   string `json:"domain"`
	Category string `json:"category"`
	Intent   string `json:"intent"`
	Limit    *int   `json:"limit"`
}

// findCapabilities ranks the invocable capabilities (latest versions) by
// the registry's full-text search, filtered by domain, category and intent.
func (g *Gateway) findCapabilities(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a findArgs
	if err := decodeStrict(req.Params.Arguments, &a); err != nil {
		return g.errorResult(ctx, req, ToolFindCapabilities, &invoke.Error{Code: invoke.CodeInvalidInput, Message: "find_capabilities: " + err.Error()}, true), nil
	}
	limit := defaultFindLimit
	if a.Limit != nil {
		if *a.Limit < 1 {
			return g.errorResult(ctx, req, ToolFindCapabilities, &invoke.Error{Code: invoke.CodeInvalidInput,
				Message: fmt.Sprintf("find_capabilities: limit %d is less than 1: ask for 1 to %d capabilities", *a.Limit, maxFindLimit)}, true), nil
		}
		limit = min(*a.Limit, maxFindLimit)
	}
	q := registry.SearchQuery{Text: strings.TrimSpace(a.Query), Filter: registry.ListFilter{
		Domain: a.Domain, Category: a.Category, Intent: a.Intent, Limit: max(2*limit, 20)}}
	matches := []capabilityMatch{}
	for pages := 0; len(matches) < limit && pages < 100; pages++ {
		page, err := g.reg.Search(ctx, q)
		if err != nil {
			return g.errorResult(ctx, req, ToolFindCapabilities, fmt.Errorf("searching the registry failed: %w", err), true), nil
		}
		for _, r := range page.Items {
			if len(matches) == limit {
				break
			}
			if !invocable(&r.Definition) {
				continue
			}
			if m, ok := g.match(r); ok {
				matches = append(matches, m)
			}
		}
		if page.NextCursor == "" || len(page.Items) == 0 {
			break
		}
		q.Filter.Cursor = page.NextCursor
	}
	res := map[string]any{"capabilities": matches, "count": len(matches)}
	return successResult(&invoke.Result{}, res, true), nil
}

// match describes one record as find_capabilities returns it, with the
// schemas the tools mode would advertise for it.
func (g *Gateway) match(r registry.Record) (capabilityMatch, bool) {
	base := baseOf(r.Key)
	name := ""
	e := g.entryByBase(base)
	if e != nil && e.version == r.Key.Version {
		name = e.name
	} else {
		// Registered after the last rebuild: describe it afresh.
		var err error
		if e, err = newToolEntry(r, capability.ToolName(base)); err != nil {
			return capabilityMatch{}, false
		}
		name = e.name
	}
	return capabilityMatch{URI: e.uri, Version: e.version, ToolName: name, Title: e.def.Title, Description: e.tool.Description,
		Stability: e.def.Stability, InputSchema: e.input, OutputSchema: e.output}, true
}

type invokeArgs struct {
	URI        string         `json:"uri"`
	Input      map[string]any `json:"input"`
	ApprovalID string         `json:"approval_id"`
}

// invokeCapability runs any registered capability by URI.
func (g *Gateway) invokeCapability(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a invokeArgs
	if err := decodeStrict(req.Params.Arguments, &a); err != nil {
		return g.errorResult(ctx, req, ToolInvokeCapability, &invoke.Error{Code: invoke.CodeInvalidInput, Message: "invoke_capability: " + err.Error()}, true), nil
	}
	if strings.TrimSpace(a.URI) == "" {
		return g.errorResult(ctx, req, ToolInvokeCapability, &invoke.Error{Code: invoke.CodeInvalidInput,
			Message: `invoke_capability: "uri" is missing: give the URI of a capability from find_capabilities, e.g. ossa:everruns/get_weather@1.0`}, true), nil
	}
	input := a.Input
	if input == nil {
		input = map[string]any{}
	}
	res, err := g.inv.Invoke(callContext(ctx, req, "", a.ApprovalID), invoke.Request{URI: a.URI, Input: input})
	if err != nil {
		return g.errorResult(ctx, req, a.URI, err, true), nil
	}
	body := map[string]any{"uri": res.URI, "version": res.Version, "output": res.Output, "binding": res.Binding,
		"attempts": res.Attempts, "duration_ms": res.DurationMS}
	if len(res.Warnings) > 0 {
		body["warnings"] = res.Warnings
	}
	return successResult(res, body, true), nil
}

// decodeStrict decodes tools/call arguments into v, refusing unknown fields
// and keeping numbers exact.
func decodeStrict(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the arguments do not match the input schema: %v", err)
	}
	return nil
}
