package mcpgw

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keys of the _meta the gateway puts on tools and results, namespaced as MCP
// asks (reverse DNS of caphub.dev).
const (
	MetaURI      = "dev.caphub/uri"      // the capability URI a tool invokes (@MAJOR.MINOR)
	MetaVersion  = "dev.caphub/version"  // the full version listed, or the one that ran
	MetaBinding  = "dev.caphub/binding"  // the binding that ran a call
	MetaWarnings = "dev.caphub/warnings" // warnings of a call (deprecation)
	MetaError    = "dev.caphub/error"    // the ToolError of a failed call whose tool's output schema cannot admit it
	// MetaApproval, in a tools/call request's _meta, retries a call that
	// was answered APPROVAL_REQUIRED with the id of its approval, once a
	// human approved it (as the REST header X-Caphub-Approval does).
	MetaApproval = "dev.caphub/approval"
)

// deviceBindings are the binding kinds (kept in Bindings.Extra) caphub
// keeps but cannot invoke: the Agent OS handlers run on a device, not on a
// server, and rtfs (format/rtfs) is CCOS code caphub does not evaluate.
var deviceBindings = []string{"intent", "service", "broadcast", "deeplink", "rtfs"}

// invocable reports whether caphub can run a definition: it declares at
// least one binding that is neither one of deviceBindings nor an "x-"
// extension, and is not "coming soon" (capability.ComingSoon). That leaves
// out bundles without a binding (everruns capabilities that only list
// tools), bundles that always fail COMING_SOON, Agent OS device
// capabilities and CCOS capabilities implemented in RTFS.
func invocable(d *capability.Definition) bool {
	if d.ComingSoon() {
		return false
	}
	for _, kind := range d.Bindings.Types() {
		if slices.Contains(deviceBindings, kind) || strings.HasPrefix(kind, "x-") {
			continue
		}
		return true
	}
	return false
}

// toolEntry is one capability served as a tool.
type toolEntry struct {
	name    string // the tool name
	uri     string // what a call invokes: scheme:domain/name@MAJOR.MINOR of the listed version
	base    string // scheme:domain/name
	version string // the full version listed
	def     capability.Definition
	tool    *mcp.Tool
	input   json.RawMessage // the tool's input schema (always an object schema)
	output  json.RawMessage // the capability's output schema, nil when it declares none

	// structured: an object output schema is advertised, so successful
	// results carry structuredContent.
	structured bool
	// errStructured: a failed call's ToolError goes in structuredContent (no
	// output schema, or one made to admit it); otherwise in _meta.
	errStructured bool
	// fingerprint changes whenever what the tool shows changes.
	fingerprint string
	// refused: the SDK refused the tool (see addTool), so it is not
	// served, and the fast path must not serve it either.
	refused atomic.Bool
}

// newToolEntry describes rec as the tool named name.
func newToolEntry(rec registry.Record, name string) (*toolEntry, error) {
	d := rec.Definition
	k := rec.Key
	v, err := capability.ParseVersion(k.Version)
	if err != nil {
		return nil, fmt.Errorf("capability %s has an unreadable version %q: %v", k, k.Version, err)
	}
	e := &toolEntry{
		name:    name,
		uri:     capability.NewURI(k.Scheme, k.Domain, k.Name, v).String(),
		base:    baseOf(k),
		version: k.Version,
		def:     d,
	}
	in, err := json.Marshal(toolInputSchema(d.Input))
	if err != nil {
		return nil, fmt.Errorf("capability %s: input schema: %v", rec.Key, err)
	}
	e.input = in
	if len(d.Output) > 0 {
		out, err := json.Marshal(d.Output)
		if err != nil {
			return nil, fmt.Errorf("capability %s: output schema: %v", rec.Key, err)
		}
		e.output = out
	}
	t := &mcp.Tool{
		Name:        name,
		Title:       d.Title,
		Description: toolDescription(&d, e.uri),
		InputSchema: e.input,
		Annotations: annotations(&d),
		Meta:        mcp.Meta{MetaURI: e.uri, MetaVersion: e.version},
	}
	e.errStructured = true
	if isObjectSchema(d.Output) {
		e.structured = true
		if wrapped, ok := outputSchemaWithError(d.Output); ok {
			b, err := json.Marshal(wrapped)
			if err != nil {
				return nil, fmt.Errorf("capability %s: output schema: %v", rec.Key, err)
			}
			t.OutputSchema = json.RawMessage(b)
		} else {
			t.OutputSchema = e.output
			e.errStructured = false
		}
	}
	e.tool = t
	e.fingerprint = fingerprint(rec, name)
	return e, nil
}

// fingerprint identifies what a tool shows: it changes with the name, the
// version, the content digest and the lifecycle fields Deprecate sets.
func fingerprint(rec registry.Record, name string) string {
	d := &rec.Definition
	return strings.Join([]string{name, rec.Key.String(), rec.Digest, d.Stability, d.DeprecatedBy, d.SunsetDate, d.MigrationGuide}, "\x00")
}

// toolDescription is the capability's description (its title or URI when it
// has none: MCP clients expect one), with a deprecation notice when it is
// deprecated.
func toolDescription(d *capability.Definition, uri string) string {
	desc := strings.TrimSpace(d.Description)
	if desc == "" {
		desc = strings.TrimSpace(d.Title)
	}
	if desc == "" {
		desc = "Invokes the caphub capability " + uri + "."
	}
	if d.Stability == capability.StabilityDeprecated {
		note := "Deprecated"
		if d.DeprecatedBy != "" {
			note += ": use " + d.DeprecatedBy + " instead"
		}
		if d.SunsetDate != "" {
			note += "; it stops working after " + d.SunsetDate
		}
		desc += " (" + note + ".)"
	}
	return desc
}

// annotations maps effects to MCP tool hints, or returns nil when the
// definition declares no effects (the MCP defaults then apply): read_only →
// readOnlyHint, destructive → destructiveHint, idempotent → idempotentHint,
// open_world or network_request → openWorldHint. With effects declared, an
// absent hint is false.
func annotations(d *capability.Definition) *mcp.ToolAnnotations {
	if len(d.Effects) == 0 {
		return nil
	}
	has := func(e ...string) bool {
		for _, x := range e {
			if slices.Contains(d.Effects, x) {
				return true
			}
		}
		return false
	}
	destructive := has("destructive")
	openWorld := has("open_world", "network_request")
	return &mcp.ToolAnnotations{
		Title:           d.Title,
		ReadOnlyHint:    has("read_only"),
		DestructiveHint: &destructive,
		IdempotentHint:  has("idempotent"),
		OpenWorldHint:   &openWorld,
	}
}

// isObjectSchema reports whether s declares an object ("type": "object"),
// the only output schemas MCP clients before 2026 accept.
func isObjectSchema(s capability.Schema) bool {
	t, _ := s["type"].(string)
	return t == "object"
}

// errorSchema is the JSON Schema of a ToolError.
func errorSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "On a failed call (isError true): what went wrong.",
		"properties": map[string]any{
			"code":      map[string]any{"type": "string", "description": "The capability's declared error code, or one of caphub's (INVALID_INPUT, NOT_FOUND, TIMEOUT, BINDING_FAILED, ...)."},
			"message":   map[string]any{"type": "string"},
			"retryable": map[string]any{"type": "boolean", "description": "Whether calling again may succeed."},
			"binding":   map[string]any{"type": "string"},
			"attempts":  map[string]any{"type": "array", "description": "Every attempt made: binding, attempt, duration_ms, error."},
			"details":   map[string]any{"type": "object"},
		},
		"required": []any{"code", "message", "retryable"},
	}
}

// outputSchemaWithError returns the output schema a tool advertises for a
// capability's object output schema s: {"type": "object", "anyOf": [s,
// ToolError]}, with s's $schema, $defs, definitions, title and description
// moved to the top. MCP clients built on the TypeScript SDK validate
// structuredContent against outputSchema even on a result with isError
// set, so the schema must admit the ToolError that failed calls carry. ok
// is false when s cannot be moved under anyOf without changing what it
// means: it declares an $id, or a $ref that is not a local #/$defs/ or
// #/definitions/ pointer (or a dynamic or recursive one).
func outputSchemaWithError(s capability.Schema) (map[string]any, bool) {
	if !relocatable(s) {
		return nil, false
	}
	inner, _ := capability.CloneValue(map[string]any(s)).(map[string]any)
	root := map[string]any{"type": "object"}
	for _, k := range []string{"$schema", "$defs", "definitions"} {
		if v, ok := inner[k]; ok {
			root[k] = v
			delete(inner, k)
		}
	}
	for _, k := range []string{"title", "description"} {
		if v, ok := inner[k]; ok {
			root[k] = v
		}
	}
	root["anyOf"] = []any{inner, errorSchema()}
	return root, true
}

// relocatable reports whether a schema keeps its meaning when nested one
// level down with its $defs and definitions hoisted (see
// outputSchemaWithError).
func relocatable(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "$id", "$dynamicRef", "$recursiveRef":
				return false
			case "$ref":
				ref, _ := e.(string)
				if !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
					return false
				}
			}
			if !relocatable(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !relocatable(e) {
				return false
			}
		}
	}
	return true
}

// toolInputSchema returns the input schema as MCP needs it, a JSON Schema
// whose type is "object": a copy of s with "type" set when it is missing or
// lists "object" among others, {"type": "object"} when s is empty, and an
// open object schema when s describes something else (the registry refuses
// such inputs, so only a store written by hand can hold one). The SDK
// refuses x-mcp-header annotations it cannot honour, and caphub does not
// use them, so they are dropped.
func toolInputSchema(s capability.Schema) map[string]any {
	if len(s) == 0 {
		return map[string]any{"type": "object"}
	}
	out, _ := stripHeaderAnnotations(s).(map[string]any)
	switch t := out["type"].(type) {
	case string:
		if t != "object" {
			return map[string]any{"type": "object", "description": fmt.Sprintf("The capability's input schema describes a %s, not an object; pass its fields as named arguments.", t)}
		}
	case []any:
		if !slices.Contains(t, any("object")) {
			return map[string]any{"type": "object"}
		}
		out["type"] = "object"
	case nil:
		out["type"] = "object"
	default:
		return map[string]any{"type": "object"}
	}
	return out
}

// stripHeaderAnnotations returns a deep copy of the schema v without the
// "x-mcp-header" keyword, on it and on the schemas of its properties (where
// the SDK looks for it); property names are kept whatever they are.
func stripHeaderAnnotations(v any) any {
	m, ok := capability.CloneValue(v).(map[string]any)
	if !ok {
		return v
	}
	var strip func(s map[string]any)
	strip = func(s map[string]any) {
		delete(s, "x-mcp-header")
		props, _ := s["properties"].(map[string]any)
		for _, p := range props {
			if ps, ok := p.(map[string]any); ok {
				strip(ps)
			}
		}
	}
	strip(m)
	return m
}
