package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names of the search-mode tools.
const (
	ToolFindCapabilities   = "find_capabilities"
	ToolDescribeCapability = "describe_capability"
	ToolInvokeCapability   = "invoke_capability"
)

// searchFlow tells an agent how the search tools go together (the server's
// instructions in the search mode).
const searchFlow = "Call find_capabilities with what you need done: it returns, best first, a compact summary of each matching capability (URI, one-line description, parameters with * marking required ones). Call describe_capability with a URI for its full input and output JSON Schemas and error codes when the summary is not enough, then invoke_capability with the URI and an input object."

// Limits of find_capabilities: each answer is a page of summaries of at
// most capability.MaxSummaryBytes each, so 8 of them stay within 8 KB.
const (
	defaultFindLimit = 8
	maxFindLimit     = 25
)

// findHitBytes is each hit's share of a find_capabilities answer: the
// summaries of 8 hits take at most 3.4 KB of JSON, about twice that on
// the wire (as text, and as structured content), within 8 KB.
const findHitBytes = 425

var findDefaultLimitText, findMaxLimitText = strconv.Itoa(defaultFindLimit), strconv.Itoa(maxFindLimit)

var findInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What the capability should do, in words: matched against names, titles, descriptions, keywords, intents, domains and categories, best matches first. Empty lists capabilities in registry order."},
    "domain": {"type": "string", "description": "Only capabilities of this domain; dotted prefixes match both ways (github matches github.issues)."},
    "category": {"type": "string", "description": "Only capabilities of this category, e.g. crud.read or search."},
    "intent": {"type": "string", "description": "Only capabilities declaring exactly this Agent OS intent, e.g. messaging.send_text."},
    "limit": {"type": "integer", "minimum": 1, "default": ` + findDefaultLimitText + `, "description": "How many capabilities to return, 1 to ` + findMaxLimitText + ` (default ` + findDefaultLimitText + `; more than ` + findMaxLimitText + ` counts as ` + findMaxLimitText + `)."}
  },
  "additionalProperties": false
}`)

var findOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "capabilities": {
      "type": "array",
      "description": "The matching invocable capabilities, best first, each summarised in at most 1 KB.",
      "items": {
        "type": "object",
        "properties": {
          "uri": {"type": "string", "description": "The URI to pass to describe_capability and invoke_capability (@MAJOR.MINOR of the latest version)."},
          "tool_name": {"type": "string", "description": "The capability's tool name where caphub serves one tool per capability."},
          "version": {"type": "string", "description": "The latest version's full version."},
          "title": {"type": "string"},
          "description": {"type": "string", "description": "The first sentence of its description."},
          "params": {"type": "string", "description": "Its input parameters as name: type, * after a required one's name, required ones first; +N more when cut. describe_capability gives the whole input schema."},
          "stability": {"type": "string", "description": "experimental, beta or deprecated; absent when stable."},
          "deprecated_by": {"type": "string", "description": "The capability that replaces a deprecated one."}
        },
        "required": ["uri", "tool_name"]
      }
    },
    "count": {"type": "integer", "description": "How many capabilities are returned."}
  },
  "required": ["capabilities", "count"]
}`)

var describeInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "uri": {"type": "string", "description": "The capability URI, as find_capabilities returns it, e.g. ossa:everruns/get_weather@1.0 (@MAJOR or no version also resolve)."}
  },
  "required": ["uri"],
  "additionalProperties": false
}`)

var describeOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "uri": {"type": "string", "description": "The URI of the version described (@MAJOR.MINOR), to pass to invoke_capability."},
    "version": {"type": "string", "description": "Its full version."},
    "tool_name": {"type": "string"},
    "title": {"type": "string"},
    "description": {"type": "string", "description": "The whole description."},
    "documentation_url": {"type": "string"},
    "stability": {"type": "string"},
    "deprecated_by": {"type": "string"},
    "sunset_date": {"type": "string"},
    "migration_guide": {"type": "string"},
    "input_schema": {"type": "object", "description": "JSON Schema of the input object invoke_capability takes."},
    "output_schema": {"type": "object", "description": "JSON Schema of the output, when declared."},
    "errors": {"type": "array", "description": "The error codes it declares: code, description, retryable."},
    "bindings": {"type": "array", "items": {"type": "string"}, "description": "How caphub runs it: native, mcp, http, grpc, cli, delegation."},
    "invocable": {"type": "boolean", "description": "Whether invoke_capability can run it (a binding caphub can use)."},
    "effects": {"type": "array", "items": {"type": "string"}},
    "permissions": {"type": "array", "items": {"type": "string"}},
    "examples": {"type": "array", "description": "Example inputs and outputs, when declared."},
    "warnings": {"type": "array", "items": {"type": "string"}, "description": "E.g. that the version is deprecated."}
  },
  "required": ["uri", "version", "input_schema"]
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

// searchToolNames are the tools of the search mode.
var searchToolNames = []string{ToolFindCapabilities, ToolDescribeCapability, ToolInvokeCapability}

// addSearchTools serves the search mode's three tools (kept in
// searchTools, for the fast path's tools/list).
func (g *Gateway) addSearchTools() {
	no, yes := false, true
	g.searchTools = nil
	add := func(t *mcp.Tool, h mcp.ToolHandler) {
		g.server.AddTool(t, h)
		g.searchTools = append(g.searchTools, t)
	}
	add(&mcp.Tool{
		Name:  ToolFindCapabilities,
		Title: "Find capabilities",
		Description: "Search caphub's capability registry for capabilities that can do a task. Returns, best first, a compact summary of each (" + findDefaultLimitText + " by default): its URI, title, one-line description and parameters (name: type, * marks required ones). " +
			"Next, call describe_capability with a URI for its full input and output schemas if the summary is not enough, then invoke_capability with the URI and an input object.",
		InputSchema:  findInputSchema,
		OutputSchema: admitErrors(findOutputSchema),
		Annotations:  &mcp.ToolAnnotations{Title: "Find capabilities", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}, g.findCapabilities)
	add(&mcp.Tool{
		Name:  ToolDescribeCapability,
		Title: "Describe a capability",
		Description: "The full definition of one capability of caphub's registry, by the URI find_capabilities gave: its whole description, input and output JSON Schemas, declared error codes, bindings, effects and deprecation. " +
			"Use it before invoke_capability when find_capabilities' parameter summary does not say enough to build the input.",
		InputSchema:  describeInputSchema,
		OutputSchema: admitErrors(describeOutputSchema),
		Annotations:  &mcp.ToolAnnotations{Title: "Describe a capability", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}, g.describeCapability)
	add(&mcp.Tool{
		Name:  ToolInvokeCapability,
		Title: "Invoke a capability",
		Description: "Run a capability of caphub's registry: give its URI (from find_capabilities) and an input object matching its input schema (summarised by find_capabilities, in full by describe_capability). " +
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
	matches := []capability.Summary{}
	var unknown []registry.UnknownWord
	for pages := 0; len(matches) < limit && pages < 100; pages++ {
		page, err := g.reg.Search(ctx, q)
		if err != nil {
			return g.errorResult(ctx, req, ToolFindCapabilities, fmt.Errorf("searching the registry failed: %w", err), true), nil
		}
		if pages == 0 {
			unknown = page.Unknown
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
	fitSummaries(matches, len(matches)*findHitBytes)
	res := map[string]any{"capabilities": matches, "count": len(matches)}
	if len(unknown) > 0 {
		// The words no capability has, and the nearest known ones, so that
		// the agent can ask again in the catalog's words.
		res["unknown_words"] = unknown
	}
	return successResult(&invoke.Result{}, res, true), nil
}

// match summarises one record as find_capabilities returns it, with the
// tool name the tools mode gives it.
func (g *Gateway) match(r registry.Record) (capability.Summary, bool) {
	e, err := g.entryOf(r)
	if err != nil {
		return capability.Summary{}, false
	}
	s := capability.Summarize(&e.def)
	s.URI, s.Version, s.ToolName, s.TrustTier = e.uri, e.version, e.name, r.TrustTier
	return s, true
}

// fitSummaries shortens the largest summaries (see capability.Summary.Fit)
// until their JSON takes at most budget bytes together, or none can be
// shortened further.
func fitSummaries(ss []capability.Summary, budget int) {
	size := func(s *capability.Summary) int {
		b, _ := json.Marshal(s)
		return len(b)
	}
	sizes, total := make([]int, len(ss)), 0
	for i := range ss {
		sizes[i] = size(&ss[i])
		total += sizes[i]
	}
	done := make([]bool, len(ss)) // cannot be shortened further
	for total > budget {
		j := -1
		for i := range ss {
			if !done[i] && (j < 0 || sizes[i] > sizes[j]) {
				j = i
			}
		}
		if j < 0 {
			return
		}
		ss[j].Fit(max(sizes[j]-(total-budget), sizes[j]*3/4))
		n := size(&ss[j])
		done[j] = n == sizes[j]
		total, sizes[j] = total-sizes[j]+n, n
	}
}

// entryOf is the tool table's entry of a record, or one made afresh when
// the table holds another version (registered after the last rebuild).
func (g *Gateway) entryOf(r registry.Record) (*toolEntry, error) {
	base := baseOf(r.Key)
	if e := g.entryByBase(base); e != nil && e.version == r.Key.Version {
		return e, nil
	}
	return newToolEntry(r, capability.ToolName(base))
}

type describeArgs struct {
	URI string `json:"uri"`
}

// describeCapability answers the full definition of the capability a URI
// resolves to: what find_capabilities summarises.
func (g *Gateway) describeCapability(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a describeArgs
	if err := decodeStrict(req.Params.Arguments, &a); err != nil {
		return g.errorResult(ctx, req, ToolDescribeCapability, &invoke.Error{Code: invoke.CodeInvalidInput, Message: "describe_capability: " + err.Error()}, true), nil
	}
	if strings.TrimSpace(a.URI) == "" {
		return g.errorResult(ctx, req, ToolDescribeCapability, &invoke.Error{Code: invoke.CodeInvalidInput,
			Message: `describe_capability: "uri" is missing: give the URI of a capability from find_capabilities, e.g. ossa:everruns/get_weather@1.0`}, true), nil
	}
	res, err := g.reg.Resolve(ctx, a.URI)
	if err != nil {
		var se *registry.SunsetError
		if errors.As(err, &se) || errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrInvalid) {
			err = &invoke.Error{Code: invoke.CodeNotFound, Message: "describe_capability: " + err.Error() + " (find_capabilities lists the capabilities there are)", Cause: err}
		}
		return g.errorResult(ctx, req, a.URI, err, true), nil
	}
	e, err := g.entryOf(res.Record)
	if err != nil {
		return g.errorResult(ctx, req, a.URI, err, true), nil
	}
	d := &e.def
	body := map[string]any{"uri": e.uri, "version": e.version, "tool_name": e.name, "input_schema": e.input,
		"bindings": d.Bindings.Types(), "invocable": invocable(d)}
	if e.output != nil {
		body["output_schema"] = e.output
	}
	for k, v := range map[string]string{"title": d.Title, "description": d.Description, "documentation_url": d.DocumentationURL, "stability": d.Stability,
		"deprecated_by": d.DeprecatedBy, "sunset_date": d.SunsetDate, "migration_guide": d.MigrationGuide} {
		if v != "" {
			body[k] = v
		}
	}
	if len(d.Errors) > 0 {
		body["errors"] = d.Errors
	}
	if len(d.Effects) > 0 {
		body["effects"] = d.Effects
	}
	if len(d.Permissions) > 0 {
		body["permissions"] = d.Permissions
	}
	if len(d.Examples) > 0 {
		body["examples"] = d.Examples
	}
	var warnings []string
	for _, w := range res.Warnings {
		warnings = append(warnings, w.Message)
	}
	if len(warnings) > 0 {
		body["warnings"] = warnings
	}
	return successResult(&invoke.Result{}, body, true), nil
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
	res, err := g.inv.Invoke(withProgress(callContext(ctx, req, "", a.ApprovalID), req), invoke.Request{URI: a.URI, Input: input})
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
