package mcpgw

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// compile compiles a schema as caphub does (2020-12 or draft-07).
func compile(t *testing.T, s map[string]any) interface{ Validate(any) error } {
	t.Helper()
	sch, issues := capability.CompileSchema(capability.Normalize(s).(map[string]any))
	if len(issues) > 0 {
		t.Fatalf("schema does not compile: %v\n%v", issues, s)
	}
	return sch
}

// asJSON round-trips v through JSON, as a client sees it.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return capability.Normalize(out)
}

func TestOutputSchemaWithError(t *testing.T) {
	toolErr := ToolError{Code: "DIVISION_BY_ZERO", Message: "no", Attempts: []invoke.Attempt{{Binding: "native", Attempt: 1}}}
	cases := []struct {
		name    string
		schema  map[string]any
		good    any
		bad     any
		wrapped bool
	}{
		{"plain", map[string]any{"type": "object", "properties": map[string]any{"result": map[string]any{"type": "number"}}, "required": []any{"result"}, "additionalProperties": false},
			map[string]any{"result": 5}, map[string]any{"result": "five"}, true},
		{"$defs refs", map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
			"properties": map[string]any{"p": map[string]any{"$ref": "#/$defs/point"}}, "required": []any{"p"},
			"$defs": map[string]any{"point": map[string]any{"type": "object", "required": []any{"x"}, "properties": map[string]any{"x": map[string]any{"type": "number"}}}}},
			map[string]any{"p": map[string]any{"x": 1}}, map[string]any{"p": map[string]any{"y": 1}}, true},
		{"draft-07 definitions", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"properties": map[string]any{"n": map[string]any{"$ref": "#/definitions/n"}}, "required": []any{"n"},
			"definitions": map[string]any{"n": map[string]any{"type": "integer"}}},
			map[string]any{"n": 1}, map[string]any{"n": "x"}, true},
		{"$ref into properties", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"$ref": "#/properties/a"}}},
			nil, nil, false},
		{"$id", map[string]any{"$id": "https://example.com/out", "type": "object"}, nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := outputSchemaWithError(tc.schema)
			if ok != tc.wrapped {
				t.Fatalf("wrapped = %v, want %v", ok, tc.wrapped)
			}
			if !ok {
				return
			}
			if w["type"] != "object" {
				t.Errorf("top-level type %v, want object", w["type"])
			}
			sch := compile(t, asJSON(t, w).(map[string]any))
			if err := sch.Validate(asJSON(t, tc.good)); err != nil {
				t.Errorf("a valid output is refused: %v", err)
			}
			if err := sch.Validate(asJSON(t, toolErr)); err != nil {
				t.Errorf("the ToolError is refused: %v", err)
			}
			if err := sch.Validate(asJSON(t, tc.bad)); err == nil {
				t.Errorf("an invalid output %v is accepted", tc.bad)
			}
		})
	}
}

// TestBuiltinToolSchemas checks every built-in's tool: its advertised
// output schema compiles and accepts the built-in's example outputs and a
// ToolError.
func TestBuiltinToolSchemas(t *testing.T) {
	for _, d := range builtin.Definitions() {
		d.Normalize()
		rec := registry.Record{Key: registry.Key{Scheme: "ossa", Domain: d.Domain, Name: d.Name, Version: d.Version}, Definition: d}
		e, err := newToolEntry(rec, capability.ToolName(d.URI))
		if err != nil {
			t.Fatalf("%s: %v", d.URI, err)
		}
		var in map[string]any
		if err := json.Unmarshal(e.input, &in); err != nil || in["type"] != "object" {
			t.Errorf("%s: input schema %s", d.URI, e.input)
		}
		if e.tool.OutputSchema == nil {
			continue
		}
		if !e.errStructured {
			t.Errorf("%s: the output schema could not be made to admit errors", d.URI)
		}
		var out map[string]any
		if err := json.Unmarshal(e.tool.OutputSchema.(json.RawMessage), &out); err != nil {
			t.Fatal(err)
		}
		sch := compile(t, out)
		for _, ex := range d.Examples {
			if ex.Output == nil {
				continue
			}
			if err := sch.Validate(asJSON(t, ex.Output)); err != nil {
				t.Errorf("%s: example output refused by the advertised schema: %v", d.URI, err)
			}
		}
		if err := sch.Validate(asJSON(t, ToolError{Code: "X", Message: "m", Attempts: []invoke.Attempt{}})); err != nil {
			t.Errorf("%s: ToolError refused by the advertised schema: %v", d.URI, err)
		}
	}
}

func TestToolInputSchema(t *testing.T) {
	cases := []struct {
		in, want map[string]any
	}{
		{nil, map[string]any{"type": "object"}},
		{map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}},
			map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
		{map[string]any{"type": []any{"object", "null"}}, map[string]any{"type": "object"}},
		{map[string]any{"type": "object", "properties": map[string]any{
			"h":            map[string]any{"type": "string", "x-mcp-header": "X-H"},
			"x-mcp-header": map[string]any{"type": "string"}}},
			map[string]any{"type": "object", "properties": map[string]any{"h": map[string]any{"type": "string"}, "x-mcp-header": map[string]any{"type": "string"}}}},
	}
	for _, tc := range cases {
		if got := toolInputSchema(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("toolInputSchema(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := toolInputSchema(map[string]any{"type": "string"}); got["type"] != "object" {
		t.Errorf("a string input schema becomes %v, want an object schema", got)
	}
	// The registry's schema is not modified.
	orig := map[string]any{"properties": map[string]any{}}
	toolInputSchema(orig)
	if _, ok := orig["type"]; ok {
		t.Error("toolInputSchema modified its argument")
	}
}

func TestAnnotations(t *testing.T) {
	if a := annotations(&capability.Definition{}); a != nil {
		t.Errorf("no effects: %+v, want nil (MCP defaults)", a)
	}
	a := annotations(&capability.Definition{Title: "T", Effects: []string{"writes", "destructive", "network_request"}})
	if a.ReadOnlyHint || a.IdempotentHint || !*a.DestructiveHint || !*a.OpenWorldHint || a.Title != "T" {
		t.Errorf("writes+destructive+network_request: %+v", a)
	}
	a = annotations(&capability.Definition{Effects: []string{"read_only", "idempotent"}})
	if !a.ReadOnlyHint || !a.IdempotentHint || *a.DestructiveHint || *a.OpenWorldHint {
		t.Errorf("read_only+idempotent: %+v", a)
	}
}
