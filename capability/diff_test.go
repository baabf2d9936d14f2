package capability

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// diffBaseJSON is a realistic definition every case starts from: the OSSA
// vulnerability scanner with a nested input, an array of objects in the
// output, errors, two bindings, effects and permissions.
const diffBaseJSON = `{
  "uri": "ossa:security/scan_vulnerabilities@1.0",
  "name": "scan_vulnerabilities",
  "domain": "security",
  "version": "1.0.0",
  "title": "Scan vulnerabilities",
  "description": "Scans a target for known vulnerabilities.",
  "documentation_url": "https://example.com/docs/scan",
  "stability": "stable",
  "input": {
    "type": "object",
    "required": ["target"],
    "properties": {
      "target": {"type": "string", "description": "Path or URL to scan", "minLength": 1},
      "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
      "filters": {
        "type": "object",
        "properties": {
          "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
          "options": {
            "type": "object",
            "required": ["mode"],
            "properties": {
              "mode": {"type": "string"},
              "verbose": {"type": "boolean"}
            }
          }
        }
      },
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20}
    }
  },
  "output": {
    "type": "object",
    "required": ["results", "scanned_at"],
    "properties": {
      "scanned_at": {"type": "string", "format": "date-time"},
      "summary": {"type": "string"},
      "results": {
        "type": "array",
        "items": {
          "type": "object",
          "required": ["id", "severity"],
          "properties": {
            "id": {"type": "string"},
            "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
            "cvss": {"type": "number"}
          }
        }
      }
    }
  },
  "errors": [
    {"code": "TARGET_NOT_FOUND", "description": "The target does not exist.", "retryable": false},
    {"code": "SCAN_FAILED", "description": "The scanner failed.", "retryable": true}
  ],
  "bindings": {
    "mcp": {"server": "scanner", "tool": "scan", "mapping": {"target": "path"}},
    "cli": {"command": "scan --json {target}", "parser": "json"}
  },
  "permissions": ["network.http"],
  "effects": ["network_request"],
  "keywords": ["cve", "security"],
  "domains": ["security"],
  "categories": ["analysis"],
  "intents": ["security.scan"],
  "metadata": {"owner": "secteam"},
  "provenance": {"method": "manual"},
  "attestation": {"key_id": "k1", "algorithm": "ed25519", "signature": "abc"}
}`

// diffBase returns a fresh copy of the base definition (its maps are never
// shared between calls), changed by edit.
func diffBase(t testing.TB, edit func(*Definition)) *Definition {
	t.Helper()
	var d Definition
	if err := json.Unmarshal([]byte(diffBaseJSON), &d); err != nil {
		t.Fatalf("base definition: %v", err)
	}
	if edit != nil {
		edit(&d)
	}
	return &d
}

// diffSchema decodes a JSON Schema for a test case.
func diffSchema(t testing.TB, s string) Schema {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("schema %s: %v", s, err)
	}
	return Normalize(m).(map[string]any)
}

// diffAt returns the schema at a path of property names in s, e.g.
// diffAt(d.Input, "filters", "severity").
func diffAt(t testing.TB, s Schema, names ...string) Schema {
	t.Helper()
	for _, n := range names {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[n].(map[string]any)
		if !ok {
			t.Fatalf("no property %q", n)
		}
		s = next
	}
	return s
}

// diffWant is an expected change: its path, kind and bump.
type diffWant struct {
	path, kind string
	bump       Bump
}

func (w diffWant) String() string { return w.path + " " + w.kind + " " + w.bump.String() }

func diffGot(r *DiffReport) []diffWant {
	out := make([]diffWant, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = diffWant{c.Path, c.Kind, c.Bump}
	}
	return out
}

// diffCheckChanges fails unless the report lists exactly the wanted changes (in
// the report's order, which is sorted by path then kind) and Required is the
// largest of their bumps.
func diffCheckChanges(t *testing.T, r *DiffReport, wants []diffWant) {
	t.Helper()
	got := diffGot(r)
	sorted := slices.Clone(wants)
	slices.SortStableFunc(sorted, func(a, b diffWant) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.kind, b.kind)
	})
	if !slices.Equal(got, sorted) {
		var b strings.Builder
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "\n  %s %s %s: %s", c.Path, c.Kind, c.Bump, c.Description)
		}
		t.Fatalf("changes:\n got %v\nwant %v\nreport:%s", got, sorted, b.String())
	}
	req := BumpNone
	for _, w := range wants {
		req = max(req, w.bump)
	}
	if r.Required != req {
		t.Errorf("Required = %s, want %s", r.Required, req)
	}
	for _, c := range r.Changes {
		if c.Description == "" {
			t.Errorf("change %s %s has no description", c.Path, c.Kind)
		}
	}
}

type diffCase struct {
	name     string
	old, new func(t testing.TB, d *Definition) // nil: the base definition
	want     []diffWant
	// descContains, when set, must appear in the description of the first
	// wanted change.
	descContains string
}

func diffRun(t *testing.T, cases []diffCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := diffBase(t, func(d *Definition) {
				if tc.old != nil {
					tc.old(t, d)
				}
			})
			new := diffBase(t, func(d *Definition) {
				if tc.new != nil {
					tc.new(t, d)
				}
			})
			r := Diff(old, new)
			diffCheckChanges(t, r, tc.want)
			if tc.descContains != "" {
				for _, c := range r.Changes {
					if c.Path == tc.want[0].path && c.Kind == tc.want[0].kind {
						if !strings.Contains(c.Description, tc.descContains) {
							t.Errorf("description %q does not contain %q", c.Description, tc.descContains)
						}
					}
				}
			}
		})
	}
}

// diffSetInput and diffSetOutput replace a schema from JSON.
func diffSetInput(s string) func(testing.TB, *Definition) {
	return func(t testing.TB, d *Definition) { d.Input = diffSchema(t, s) }
}

func diffSetOutput(s string) func(testing.TB, *Definition) {
	return func(t testing.TB, d *Definition) { d.Output = diffSchema(t, s) }
}

// diffEditIn and diffEditOut change the schema at a property path of the input or output.
func diffEditIn(names []string, f func(s Schema)) func(testing.TB, *Definition) {
	return func(t testing.TB, d *Definition) { f(diffAt(t, d.Input, names...)) }
}

func diffEditOut(names []string, f func(s Schema)) func(testing.TB, *Definition) {
	return func(t testing.TB, d *Definition) { f(diffAt(t, d.Output, names...)) }
}

func diffPath(names ...string) []string { return names }

// diffItemsProp returns property name of the items schema of array schema s.
func diffItemsProp(s Schema, name string) Schema {
	return s["items"].(map[string]any)["properties"].(map[string]any)[name].(map[string]any)
}

func TestDiffIdentical(t *testing.T) {
	r := Diff(diffBase(t, nil), diffBase(t, nil))
	diffCheckChanges(t, r, nil)
	if r.Required != BumpNone || r.Declared != BumpNone || !r.Satisfied || r.Problem != "" {
		t.Errorf("identical definitions: Required=%s Declared=%s Satisfied=%t Problem=%q", r.Required, r.Declared, r.Satisfied, r.Problem)
	}
	if r.Changes == nil {
		t.Error("Changes is nil; want an empty list so that JSON shows []")
	}
}

func TestDiffInputFields(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "required field removed",
			new:  diffEditIn(nil, func(s Schema) { delete(s["properties"].(map[string]any), "target"); s["required"] = []any{} }),
			want: []diffWant{{"input.properties.target", "input_required_removed", BumpMajor}},
		},
		{
			name: "required field removed two levels deep",
			new: diffEditIn(diffPath("filters", "options"), func(s Schema) {
				delete(s["properties"].(map[string]any), "mode")
				delete(s, "required")
			}),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "input_required_removed", BumpMajor}},
		},
		{
			name: "required field added two levels deep",
			new: diffEditIn(diffPath("filters", "options"), func(s Schema) {
				s["properties"].(map[string]any)["format"] = map[string]any{"type": "string"}
				s["required"] = []any{"mode", "format"}
			}),
			want:         []diffWant{{"input.properties.filters.properties.options.properties.format", "input_required_added", BumpMajor}},
			descContains: "will be rejected",
		},
		{
			name: "required field added at the top",
			new: diffEditIn(nil, func(s Schema) {
				s["properties"].(map[string]any)["token"] = map[string]any{"type": "string"}
				s["required"] = []any{"target", "token"}
			}),
			want: []diffWant{{"input.properties.token", "input_required_added", BumpMajor}},
		},
		{
			name: "optional field added with a default",
			new: diffEditIn(diffPath("filters"), func(s Schema) {
				s["properties"].(map[string]any)["limit"] = map[string]any{"type": "integer", "default": int64(100)}
			}),
			want:         []diffWant{{"input.properties.filters.properties.limit", "input_field_added", BumpMinor}},
			descContains: "with default 100",
		},
		{
			name:         "optional field added without a default",
			new:          diffEditIn(nil, func(s Schema) { s["properties"].(map[string]any)["note"] = map[string]any{"type": "string"} }),
			want:         []diffWant{{"input.properties.note", "input_field_added", BumpMinor}},
			descContains: "no default",
		},
		{
			name:         "optional field removed is major",
			new:          diffEditIn(diffPath("filters"), func(s Schema) { delete(s["properties"].(map[string]any), "severity") }),
			want:         []diffWant{{"input.properties.filters.properties.severity", "input_field_removed", BumpMajor}},
			descContains: "may be rejected",
		},
		{
			name: "optional becomes required",
			new:  diffEditIn(nil, func(s Schema) { s["required"] = []any{"target", "depth"} }),
			want: []diffWant{{"input.properties.depth", "input_became_required", BumpMajor}},
		},
		{
			name: "required becomes optional",
			new:  diffEditIn(diffPath("filters", "options"), func(s Schema) { s["required"] = []any{} }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "input_became_optional", BumpMinor}},
		},
		{
			name: "required list reordered is no change",
			old:  diffEditIn(nil, func(s Schema) { s["required"] = []any{"target", "depth"} }),
			new:  diffEditIn(nil, func(s Schema) { s["required"] = []any{"depth", "target"} }),
		},
		{
			name: "field required without a schema is still a field",
			old:  diffEditIn(nil, func(s Schema) { s["required"] = []any{"target", "extra"} }),
			new:  diffEditIn(nil, func(s Schema) { s["required"] = []any{"target"} }),
			want: []diffWant{{"input.properties.extra", "input_required_removed", BumpMajor}},
		},
		{
			name: "property names that contain dots are quoted in the path",
			new:  diffEditIn(nil, func(s Schema) { s["properties"].(map[string]any)["a.b"] = map[string]any{} }),
			want: []diffWant{{`input.properties["a.b"]`, "input_field_added", BumpMinor}},
		},
	})
}

func TestDiffTypes(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "type changed",
			new:  diffEditIn(diffPath("depth"), func(s Schema) { s["type"] = "string"; delete(s, "minimum"); delete(s, "maximum"); delete(s, "default") }),
			want: []diffWant{
				{"input.properties.depth", "type_changed", BumpMajor},
				{"input.properties.depth", "constraint_loosened", BumpMinor},
				{"input.properties.depth", "constraint_loosened", BumpMinor},
				{"input.properties.depth", "default_changed", BumpMinor},
			},
		},
		{
			name: "type as array versus string is a change",
			new:  diffEditIn(diffPath("target"), func(s Schema) { s["type"] = []any{"string", "null"} }),
			want: []diffWant{{"input.properties.target", "type_changed", BumpMajor}},
		},
		{
			name: "type arrays compared as sets",
			old:  diffEditIn(diffPath("target"), func(s Schema) { s["type"] = []any{"string", "null"} }),
			new:  diffEditIn(diffPath("target"), func(s Schema) { s["type"] = []any{"null", "string"} }),
		},
		{
			name: "type string equals a one-element array",
			new:  diffEditIn(diffPath("target"), func(s Schema) { s["type"] = []any{"string"} }),
		},
		{
			name: "OpenAPI nullable adds null",
			new:  diffEditIn(diffPath("target"), func(s Schema) { s["nullable"] = true }),
			want: []diffWant{{"input.properties.target", "type_changed", BumpMajor}},
		},
		{
			name: "nullable equals a null type",
			old:  diffEditIn(diffPath("target"), func(s Schema) { s["nullable"] = true }),
			new:  diffEditIn(diffPath("target"), func(s Schema) { s["type"] = []any{"string", "null"} }),
		},
		{
			name: "type added where there was none",
			old:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { delete(s, "type") }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "type_changed", BumpMajor}},
		},
		{
			name: "output type changed in array items",
			new: diffEditOut(diffPath("results"), func(s Schema) {
				s["items"].(map[string]any)["properties"].(map[string]any)["cvss"] = map[string]any{"type": "string"}
			}),
			want: []diffWant{{"output.properties.results.items.properties.cvss", "type_changed", BumpMajor}},
		},
		{
			name: "object turned into a string reports the type only",
			new:  diffEditIn(diffPath("filters"), func(s Schema) { clear(s); s["type"] = "string" }),
			want: []diffWant{{"input.properties.filters", "type_changed", BumpMajor}},
		},
	})
}

func TestDiffEnums(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name:         "input enum narrowed",
			new:          diffEditIn(diffPath("filters", "severity"), func(s Schema) { s["enum"] = []any{"high", "critical"} }),
			want:         []diffWant{{"input.properties.filters.properties.severity", "enum_narrowed", BumpMajor}},
			descContains: `["low", "medium"] removed`,
		},
		{
			name: "input enum widened",
			new:  diffEditIn(diffPath("filters", "severity"), func(s Schema) { s["enum"] = []any{"info", "low", "medium", "high", "critical"} }),
			want: []diffWant{{"input.properties.filters.properties.severity", "enum_widened", BumpMinor}},
		},
		{
			name: "input enum reordered is no change",
			new:  diffEditIn(diffPath("filters", "severity"), func(s Schema) { s["enum"] = []any{"critical", "high", "medium", "low"} }),
		},
		{
			name: "input enum value replaced is a narrowing",
			new:  diffEditIn(diffPath("filters", "severity"), func(s Schema) { s["enum"] = []any{"info", "medium", "high", "critical"} }),
			want: []diffWant{{"input.properties.filters.properties.severity", "enum_narrowed", BumpMajor}},
		},
		{
			name: "input enum removed widens",
			new:  diffEditIn(diffPath("filters", "severity"), func(s Schema) { delete(s, "enum") }),
			want: []diffWant{{"input.properties.filters.properties.severity", "enum_removed", BumpMinor}},
		},
		{
			name: "input enum added narrows",
			new:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["enum"] = []any{"fast", "full"} }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "enum_added", BumpMajor}},
		},
		{
			name: "output enum narrowed",
			new:  diffEditOut(diffPath("results"), func(s Schema) { diffItemsProp(s, "severity")["enum"] = []any{"low", "high"} }),
			want: []diffWant{{"output.properties.results.items.properties.severity", "enum_narrowed", BumpMajor}},
		},
		{
			name: "output enum widened",
			new: diffEditOut(diffPath("results"), func(s Schema) {
				diffItemsProp(s, "severity")["enum"] = []any{"low", "medium", "high", "critical", "unknown"}
			}),
			want: []diffWant{{"output.properties.results.items.properties.severity", "enum_widened", BumpMinor}},
		},
		{
			name: "numeric enum compares values, not Go types",
			old:  diffEditIn(diffPath("depth"), func(s Schema) { s["enum"] = []any{int64(1), int64(2)} }),
			new:  diffEditIn(diffPath("depth"), func(s Schema) { s["enum"] = []any{1, 2.0} }),
		},
		{
			name: "const changed",
			old:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["const"] = "fast" }),
			new:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["const"] = "full" }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "const_changed", BumpMajor}},
		},
		{
			name: "const added",
			new:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["const"] = "fast" }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "const_added", BumpMajor}},
		},
		{
			name: "const removed",
			old:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["const"] = "fast" }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "const_removed", BumpMinor}},
		},
		{
			name: "const widened to an enum",
			old:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["const"] = "fast" }),
			new:  diffEditIn(diffPath("filters", "options", "mode"), func(s Schema) { s["enum"] = []any{"fast", "full"} }),
			want: []diffWant{{"input.properties.filters.properties.options.properties.mode", "enum_widened", BumpMinor}},
		},
	})
}

func TestDiffAdditionalProperties(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "absent to false closes",
			new:  diffEditIn(diffPath("filters"), func(s Schema) { s["additionalProperties"] = false }),
			want: []diffWant{{"input.properties.filters.additionalProperties", "additional_properties_closed", BumpMajor}},
		},
		{
			name: "true to false closes",
			old:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = true }),
			new:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = false }),
			want: []diffWant{{"input.additionalProperties", "additional_properties_closed", BumpMajor}},
		},
		{
			name: "false to true opens",
			old:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = false }),
			new:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = true }),
			want: []diffWant{{"input.additionalProperties", "additional_properties_opened", BumpMinor}},
		},
		{
			name: "true, absent and {} are the same",
			old:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = true }),
			new:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = map[string]any{} }),
		},
		{
			name: "additionalProperties schema compared as a schema",
			old:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = map[string]any{"type": "string"} }),
			new:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = map[string]any{"type": "integer"} }),
			want: []diffWant{{"input.additionalProperties", "type_changed", BumpMajor}},
		},
		{
			name: "additionalProperties schema added restricts",
			new:  diffEditIn(nil, func(s Schema) { s["additionalProperties"] = map[string]any{"type": "string"} }),
			want: []diffWant{{"input.additionalProperties", "additional_properties_restricted", BumpMajor}},
		},
	})
}

func TestDiffConstraints(t *testing.T) {
	target := diffPath("target")
	depth := diffPath("depth")
	tags := diffPath("tags")
	const tp, dp, gp = "input.properties.target", "input.properties.depth", "input.properties.tags"
	diffRun(t, []diffCase{
		{name: "minimum raised", new: diffEditIn(depth, func(s Schema) { s["minimum"] = int64(2) }), want: []diffWant{{dp, "constraint_tightened", BumpMajor}}, descContains: "minimum raised from 1 to 2"},
		{name: "minimum lowered", new: diffEditIn(depth, func(s Schema) { s["minimum"] = int64(0) }), want: []diffWant{{dp, "constraint_loosened", BumpMinor}}},
		{name: "minimum as float equal to int", new: diffEditIn(depth, func(s Schema) { s["minimum"] = 1.0 })},
		{name: "maximum lowered", new: diffEditIn(depth, func(s Schema) { s["maximum"] = int64(5) }), want: []diffWant{{dp, "constraint_tightened", BumpMajor}}},
		{name: "maximum raised", new: diffEditIn(depth, func(s Schema) { s["maximum"] = 10.5 }), want: []diffWant{{dp, "constraint_loosened", BumpMinor}}},
		{name: "maximum removed", new: diffEditIn(depth, func(s Schema) { delete(s, "maximum") }), want: []diffWant{{dp, "constraint_loosened", BumpMinor}}},
		{name: "exclusiveMinimum added", new: diffEditIn(depth, func(s Schema) { s["exclusiveMinimum"] = int64(0) }), want: []diffWant{{dp, "constraint_tightened", BumpMajor}}},
		{name: "exclusiveMaximum raised", old: diffEditIn(depth, func(s Schema) { s["exclusiveMaximum"] = int64(5) }), new: diffEditIn(depth, func(s Schema) { s["exclusiveMaximum"] = int64(6) }), want: []diffWant{{dp, "constraint_loosened", BumpMinor}}},
		{name: "draft-04 exclusiveMinimum true", new: diffEditIn(depth, func(s Schema) { s["exclusiveMinimum"] = true }), want: []diffWant{{dp, "constraint_tightened", BumpMajor}}},
		{name: "multipleOf added", new: diffEditIn(depth, func(s Schema) { s["multipleOf"] = int64(2) }), want: []diffWant{{dp, "constraint_tightened", BumpMajor}}},
		{name: "minLength raised", new: diffEditIn(target, func(s Schema) { s["minLength"] = int64(3) }), want: []diffWant{{tp, "constraint_tightened", BumpMajor}}},
		{name: "minLength removed", new: diffEditIn(target, func(s Schema) { delete(s, "minLength") }), want: []diffWant{{tp, "constraint_loosened", BumpMinor}}},
		{name: "maxLength added", new: diffEditIn(target, func(s Schema) { s["maxLength"] = int64(200) }), want: []diffWant{{tp, "constraint_tightened", BumpMajor}}},
		{name: "maxLength raised", old: diffEditIn(target, func(s Schema) { s["maxLength"] = int64(200) }), new: diffEditIn(target, func(s Schema) { s["maxLength"] = int64(400) }), want: []diffWant{{tp, "constraint_loosened", BumpMinor}}},
		{name: "pattern added", new: diffEditIn(target, func(s Schema) { s["pattern"] = "^[a-z]+$" }), want: []diffWant{{tp, "constraint_tightened", BumpMajor}}},
		{name: "pattern changed", old: diffEditIn(target, func(s Schema) { s["pattern"] = "^[a-z]+$" }), new: diffEditIn(target, func(s Schema) { s["pattern"] = "^[a-z0-9]+$" }), want: []diffWant{{tp, "constraint_tightened", BumpMajor}}},
		{name: "pattern removed", old: diffEditIn(target, func(s Schema) { s["pattern"] = "^[a-z]+$" }), want: []diffWant{{tp, "constraint_loosened", BumpMinor}}},
		{name: "format added", new: diffEditIn(target, func(s Schema) { s["format"] = "uri" }), want: []diffWant{{tp, "constraint_tightened", BumpMajor}}},
		{name: "format removed", old: diffEditIn(target, func(s Schema) { s["format"] = "uri" }), want: []diffWant{{tp, "constraint_loosened", BumpMinor}}},
		{name: "minItems added", new: diffEditIn(tags, func(s Schema) { s["minItems"] = int64(1) }), want: []diffWant{{gp, "constraint_tightened", BumpMajor}}},
		{name: "maxItems lowered", new: diffEditIn(tags, func(s Schema) { s["maxItems"] = int64(10) }), want: []diffWant{{gp, "constraint_tightened", BumpMajor}}},
		{name: "maxItems raised", new: diffEditIn(tags, func(s Schema) { s["maxItems"] = int64(50) }), want: []diffWant{{gp, "constraint_loosened", BumpMinor}}},
		{name: "uniqueItems on", new: diffEditIn(tags, func(s Schema) { s["uniqueItems"] = true }), want: []diffWant{{gp, "constraint_tightened", BumpMajor}}},
		{name: "uniqueItems off", old: diffEditIn(tags, func(s Schema) { s["uniqueItems"] = true }), new: diffEditIn(tags, func(s Schema) { s["uniqueItems"] = false }), want: []diffWant{{gp, "constraint_loosened", BumpMinor}}},
		{name: "minProperties added", new: diffEditIn(diffPath("filters"), func(s Schema) { s["minProperties"] = int64(1) }), want: []diffWant{{"input.properties.filters", "constraint_tightened", BumpMajor}}},
		{name: "maxProperties removed", old: diffEditIn(diffPath("filters"), func(s Schema) { s["maxProperties"] = int64(3) }), want: []diffWant{{"input.properties.filters", "constraint_loosened", BumpMinor}}},
		{name: "items constraint", new: diffEditIn(tags, func(s Schema) { s["items"].(map[string]any)["maxLength"] = int64(32) }), want: []diffWant{{gp + ".items", "constraint_tightened", BumpMajor}}},
	})
}

func TestDiffAnnotations(t *testing.T) {
	const tp = "input.properties.target"
	diffRun(t, []diffCase{
		{name: "input default changed", new: diffEditIn(diffPath("depth"), func(s Schema) { s["default"] = int64(5) }), want: []diffWant{{"input.properties.depth", "default_changed", BumpMinor}}},
		{name: "input default removed", new: diffEditIn(diffPath("depth"), func(s Schema) { delete(s, "default") }), want: []diffWant{{"input.properties.depth", "default_changed", BumpMinor}}},
		{name: "description changed", new: diffEditIn(diffPath("target"), func(s Schema) { s["description"] = "What to scan" }), want: []diffWant{{tp, "description_changed", BumpPatch}}},
		{name: "title added", new: diffEditIn(diffPath("target"), func(s Schema) { s["title"] = "Target" }), want: []diffWant{{tp, "title_changed", BumpPatch}}},
		{name: "examples added", new: diffEditIn(diffPath("target"), func(s Schema) { s["examples"] = []any{"./src"} }), want: []diffWant{{tp, "examples_changed", BumpPatch}}},
		{name: "x- extension", new: diffEditIn(diffPath("target"), func(s Schema) { s["x-ui"] = "file-picker" }), want: []diffWant{{tp, "annotation_changed", BumpPatch}}},
		{name: "output description", new: diffEditOut(diffPath("summary"), func(s Schema) { s["description"] = "One line" }), want: []diffWant{{"output.properties.summary", "description_changed", BumpPatch}}},
		{name: "output default is documentation", new: diffEditOut(diffPath("summary"), func(s Schema) { s["default"] = "" }), want: []diffWant{{"output.properties.summary", "default_changed", BumpPatch}}},
		{name: "unanalysed keyword changes are breaking", new: diffEditIn(diffPath("filters"), func(s Schema) { s["dependentRequired"] = map[string]any{"severity": []any{"options"}} }), want: []diffWant{{"input.properties.filters", "schema_keyword_changed", BumpMajor}}},
	})
}

func TestDiffOutputFields(t *testing.T) {
	items := func(f func(items Schema)) func(testing.TB, *Definition) {
		return diffEditOut(diffPath("results"), func(s Schema) { f(s["items"].(map[string]any)) })
	}
	diffRun(t, []diffCase{
		{
			name: "output field removed",
			new:  diffEditOut(nil, func(s Schema) { delete(s["properties"].(map[string]any), "summary") }),
			want: []diffWant{{"output.properties.summary", "output_field_removed", BumpMajor}},
		},
		{
			name: "output field removed in array items",
			new: items(func(s Schema) {
				delete(s["properties"].(map[string]any), "id")
				s["required"] = []any{"severity"}
			}),
			want: []diffWant{{"output.properties.results.items.properties.id", "output_field_removed", BumpMajor}},
		},
		{
			name: "output field added in array items",
			new:  items(func(s Schema) { s["properties"].(map[string]any)["fix"] = map[string]any{"type": "string"} }),
			want: []diffWant{{"output.properties.results.items.properties.fix", "output_field_added", BumpMinor}},
		},
		{
			name: "output required field added",
			new: diffEditOut(nil, func(s Schema) {
				s["properties"].(map[string]any)["count"] = map[string]any{"type": "integer"}
				s["required"] = []any{"results", "scanned_at", "count"}
			}),
			want: []diffWant{{"output.properties.count", "output_field_added", BumpMinor}},
		},
		{
			name: "output field dropped from required",
			new:  diffEditOut(nil, func(s Schema) { s["required"] = []any{"results"} }),
			want: []diffWant{{"output.properties.scanned_at", "output_became_optional", BumpMajor}},
		},
		{
			name: "output field added to required",
			new:  diffEditOut(nil, func(s Schema) { s["required"] = []any{"results", "scanned_at", "summary"} }),
			want: []diffWant{{"output.properties.summary", "output_became_required", BumpMinor}},
		},
		{
			name: "output format changed",
			new:  diffEditOut(diffPath("scanned_at"), func(s Schema) { s["format"] = "date" }),
			want: []diffWant{{"output.properties.scanned_at", "constraint_tightened", BumpMajor}},
		},
		{
			name: "output schema removed entirely",
			new:  func(_ testing.TB, d *Definition) { d.Output = nil },
			want: []diffWant{
				{"output", "type_changed", BumpMajor},
				{"output.properties.results", "output_field_removed", BumpMajor},
				{"output.properties.scanned_at", "output_field_removed", BumpMajor},
				{"output.properties.summary", "output_field_removed", BumpMajor},
			},
		},
	})
}

func TestDiffRefs(t *testing.T) {
	entity := `{
	  "type": "object",
	  "required": ["entity"],
	  "properties": {
	    "entity": {"$ref": "#/definitions/Entity"},
	    "owner": {"type": "object", "properties": {"who": {"$ref": "#/definitions/Entity"}}}
	  },
	  "definitions": {
	    "Entity": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
	  }
	}`
	entityNoName := strings.Replace(entity, `, "name": {"type": "string"}`, "", 1)
	entityInlined := `{
	  "type": "object",
	  "required": ["entity"],
	  "properties": {
	    "entity": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}}},
	    "owner": {"type": "object", "properties": {"who": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}}
	  }
	}`
	defs := strings.NewReplacer("#/definitions/", "#/$defs/", `"definitions"`, `"$defs"`)
	escaped := strings.NewReplacer("#/definitions/Entity", "#/definitions/a~1b~0c", `"Entity":`, `"a/b~c":`)
	recursive := `{
	  "type": "object",
	  "properties": {"root": {"$ref": "#/$defs/Node"}},
	  "$defs": {"Node": {"type": "object", "properties": {
	    "value": {"type": "string"},
	    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
	    "parent": {"$ref": "#/$defs/Node"}
	  }}}
	}`
	selfRoot := `{"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}}}`

	diffRun(t, []diffCase{
		{
			name: "a $ref'd definition loses a field",
			old:  diffSetInput(entity),
			new:  diffSetInput(entityNoName),
			// Reported once, at the first path that uses Entity.
			want: []diffWant{{"input.properties.entity.properties.name", "input_field_removed", BumpMajor}},
		},
		{
			name: "an unchanged $ref'd definition is no change",
			old:  diffSetInput(entity),
			new:  diffSetInput(entity),
		},
		{
			name: "$defs and escaped pointers resolve",
			old:  diffSetInput(defs.Replace(escaped.Replace(entity))),
			new:  diffSetInput(defs.Replace(escaped.Replace(entityNoName))),
			want: []diffWant{{"input.properties.entity.properties.name", "input_field_removed", BumpMajor}},
		},
		{
			name: "inlining a $ref is no change",
			old:  diffSetInput(entity),
			new:  diffSetInput(entityInlined),
		},
		{
			name: "a $ref'd definition gets a required field, through an inline old side",
			old:  diffSetInput(entityInlined),
			new:  diffSetInput(strings.Replace(entity, `"required": ["id"]`, `"required": ["id", "name"]`, 1)),
			want: []diffWant{
				{"input.properties.entity.properties.name", "input_became_required", BumpMajor},
				{"input.properties.owner.properties.who.properties.name", "input_became_required", BumpMajor},
			},
		},
		{
			name: "$ref siblings are compared",
			old:  diffSetInput(strings.Replace(entity, `"entity": {"$ref": "#/definitions/Entity"}`, `"entity": {"$ref": "#/definitions/Entity", "description": "the scanned entity"}`, 1)),
			new:  diffSetInput(strings.Replace(entity, `"entity": {"$ref": "#/definitions/Entity"}`, `"entity": {"$ref": "#/definitions/Entity", "description": "the entity"}`, 1)),
			want: []diffWant{{"input.properties.entity", "description_changed", BumpPatch}},
		},
		{
			name: "recursive schema, unchanged, terminates",
			old:  diffSetInput(recursive),
			new:  diffSetInput(recursive),
		},
		{
			name: "recursive schema, changed, terminates and reports once",
			old:  diffSetInput(recursive),
			new:  diffSetInput(strings.Replace(recursive, `"value": {"type": "string"}`, `"value": {"type": "integer"}`, 1)),
			want: []diffWant{{"input.properties.root.properties.value", "type_changed", BumpMajor}},
		},
		{
			name: "recursive schema, field added, terminates",
			old:  diffSetInput(recursive),
			new:  diffSetInput(strings.Replace(recursive, `"value": {"type": "string"},`, `"value": {"type": "string"}, "weight": {"type": "number"},`, 1)),
			want: []diffWant{{"input.properties.root.properties.weight", "input_field_added", BumpMinor}},
		},
		{
			name: "reference to the root terminates",
			old:  diffSetOutput(selfRoot),
			new:  diffSetOutput(strings.Replace(selfRoot, `"string"`, `"integer"`, 1)),
			want: []diffWant{{"output.properties.name", "type_changed", BumpMajor}},
		},
		{
			name: "unresolvable $ref changed",
			old:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "other.json#/A"}}}`),
			new:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "other.json#/B"}}}`),
			want: []diffWant{{"input.properties.x", "ref_unresolved", BumpMajor}},
		},
		{
			name: "unresolvable $ref unchanged",
			old:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "#/definitions/Missing"}}}`),
			new:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "#/definitions/Missing"}}}`),
		},
		{
			name: "a loop of $refs terminates",
			old:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}`),
			new:  diffSetInput(`{"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}`),
		},
		{
			name: "output items $ref'd",
			old:  diffSetOutput(`{"type": "object", "properties": {"results": {"type": "array", "items": {"$ref": "#/$defs/R"}}}, "$defs": {"R": {"type": "object", "properties": {"id": {"type": "string"}}}}}`),
			new:  diffSetOutput(`{"type": "object", "properties": {"results": {"type": "array", "items": {"$ref": "#/$defs/R"}}}, "$defs": {"R": {"type": "object", "properties": {}}}}`),
			want: []diffWant{{"output.properties.results.items.properties.id", "output_field_removed", BumpMajor}},
		},
	})
}

// TestDiffRefsTerminateFast checks that shared definitions are compared once:
// 30 levels of definitions, each using the next one twice, would take 2^30
// walks if every use were compared.
func TestDiffRefsTerminateFast(t *testing.T) {
	build := func(leaf string) Schema {
		defs := map[string]any{}
		for i := range 30 {
			next := fmt.Sprintf("#/$defs/L%d", i+1)
			defs[fmt.Sprintf("L%d", i)] = map[string]any{"type": "object", "properties": map[string]any{
				"a": map[string]any{"$ref": next}, "b": map[string]any{"$ref": next},
			}}
		}
		defs["L30"] = map[string]any{"type": leaf}
		return Schema{"$ref": "#/$defs/L0", "$defs": defs}
	}
	done := make(chan *DiffReport, 1)
	go func() {
		done <- Diff(diffBase(t, func(d *Definition) { d.Input = build("string") }), diffBase(t, func(d *Definition) { d.Input = build("integer") }))
	}()
	select {
	case r := <-done:
		if len(r.Changes) != 1 || r.Changes[0].Kind != "type_changed" {
			t.Fatalf("changes = %v, want one type_changed", diffGot(r))
		}
		if want := "input" + strings.Repeat(".properties.a", 30); r.Changes[0].Path != want {
			t.Errorf("path = %s, want %s", r.Changes[0].Path, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Diff did not finish in 10s: shared $refs are compared more than once")
	}
}

func TestDiffArraysAndBranches(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "prefixItems position changed",
			old:  diffSetInput(`{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}`),
			new:  diffSetInput(`{"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}`),
			want: []diffWant{{"input.prefixItems[1]", "type_changed", BumpMajor}},
		},
		{
			name: "draft-07 tuple items changed",
			old:  diffSetInput(`{"type": "array", "items": [{"type": "string"}, {"enum": ["a", "b"]}]}`),
			new:  diffSetInput(`{"type": "array", "items": [{"type": "string"}, {"enum": ["a"]}]}`),
			want: []diffWant{{"input.items[1]", "enum_narrowed", BumpMajor}},
		},
		{
			name: "items schema turned into a tuple",
			old:  diffSetInput(`{"type": "array", "items": {"type": "string"}}`),
			new:  diffSetInput(`{"type": "array", "items": [{"type": "string"}]}`),
			want: []diffWant{{"input.items", "items_changed", BumpMajor}},
		},
		{
			name: "items of objects two levels deep",
			old:  diffSetInput(`{"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"cells": {"type": "array", "items": {"type": "object", "required": ["v"], "properties": {"v": {"type": "string"}}}}}}}}}`),
			new:  diffSetInput(`{"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"cells": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "string"}}}}}}}}}`),
			want: []diffWant{{"input.properties.rows.items.properties.cells.items.properties.v", "input_became_optional", BumpMinor}},
		},
		{
			name: "anyOf compared branch by branch",
			old:  diffSetInput(`{"anyOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "string"}}}]}`),
			new:  diffSetInput(`{"anyOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}]}`),
			want: []diffWant{{"input.anyOf[1].properties.b", "input_field_added", BumpMinor}},
		},
		{
			name: "oneOf branch count changed",
			old:  diffSetInput(`{"oneOf": [{"type": "string"}]}`),
			new:  diffSetInput(`{"oneOf": [{"type": "string"}, {"type": "integer"}]}`),
			want: []diffWant{{"input", "schema_keyword_changed", BumpMajor}},
		},
		{
			name: "false schema opened",
			old:  diffSetInput(`{"type": "object", "properties": {"x": false}}`),
			new:  diffSetInput(`{"type": "object", "properties": {"x": {"type": "string"}}}`),
			want: []diffWant{{"input.properties.x", "schema_opened", BumpMinor}},
		},
	})
}

func TestDiffErrors(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "error code removed",
			new:  func(_ testing.TB, d *Definition) { d.Errors = d.Errors[:1] },
			want: []diffWant{{"errors[SCAN_FAILED]", "error_removed", BumpMajor}},
		},
		{
			name: "error retryable changed",
			new:  func(_ testing.TB, d *Definition) { d.Errors[1].Retryable = false },
			want: []diffWant{{"errors[SCAN_FAILED]", "error_changed", BumpMajor}},
		},
		{
			name: "error code added",
			new: func(_ testing.TB, d *Definition) {
				d.Errors = append(d.Errors, ErrorDef{Code: "RATE_LIMITED", Retryable: true})
			},
			want: []diffWant{{"errors[RATE_LIMITED]", "error_added", BumpMinor}},
		},
		{
			name: "error description changed",
			new:  func(_ testing.TB, d *Definition) { d.Errors[0].Description = "No such target." },
			want: []diffWant{{"errors[TARGET_NOT_FOUND]", "error_description_changed", BumpPatch}},
		},
		{
			name: "errors reordered is no change",
			new:  func(_ testing.TB, d *Definition) { d.Errors[0], d.Errors[1] = d.Errors[1], d.Errors[0] },
		},
		{
			name: "error code renamed is a removal and an addition",
			new:  func(_ testing.TB, d *Definition) { d.Errors[1].Code = "SCANNER_FAILED" },
			want: []diffWant{
				{"errors[SCANNER_FAILED]", "error_added", BumpMinor},
				{"errors[SCAN_FAILED]", "error_removed", BumpMajor},
			},
		},
	})
}

func TestDiffAuthority(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name:         "effects broadened",
			new:          func(_ testing.TB, d *Definition) { d.Effects = append(d.Effects, "filesystem_write") },
			want:         []diffWant{{"effects", "effects_broadened", BumpMajor}},
			descContains: "filesystem_write",
		},
		{
			name: "effects narrowed",
			new:  func(_ testing.TB, d *Definition) { d.Effects = nil },
			want: []diffWant{{"effects", "effects_narrowed", BumpMinor}},
		},
		{
			name: "effects reordered is no change",
			old:  func(_ testing.TB, d *Definition) { d.Effects = []string{"a", "b"} },
			new:  func(_ testing.TB, d *Definition) { d.Effects = []string{"b", "a", "a"} },
		},
		{
			name: "permissions broadened",
			new:  func(_ testing.TB, d *Definition) { d.Permissions = []string{"network.http", "contacts"} },
			want: []diffWant{{"permissions", "permissions_broadened", BumpMajor}},
		},
		{
			name: "permissions narrowed",
			old:  func(_ testing.TB, d *Definition) { d.Permissions = []string{"network.http", "contacts"} },
			want: []diffWant{{"permissions", "permissions_narrowed", BumpMinor}},
		},
		{
			name: "permissions swapped is broadened and narrowed",
			new:  func(_ testing.TB, d *Definition) { d.Permissions = []string{"contacts"} },
			want: []diffWant{{"permissions", "permissions_broadened", BumpMajor}, {"permissions", "permissions_narrowed", BumpMinor}},
		},
		{
			name: "ui_required turned on",
			new:  func(_ testing.TB, d *Definition) { d.UIRequired = true },
			want: []diffWant{{"ui_required", "ui_required_added", BumpMajor}},
		},
		{
			name: "bundle tools",
			old:  func(_ testing.TB, d *Definition) { d.Tools = []string{"ossa:a/x@1.0", "ossa:a/y@1.0"} },
			new:  func(_ testing.TB, d *Definition) { d.Tools = []string{"ossa:a/x@1.0", "ossa:a/z@1.0"} },
			want: []diffWant{{"tools", "tools_added", BumpMinor}, {"tools", "tools_removed", BumpMajor}},
		},
	})
}

func TestDiffBindings(t *testing.T) {
	diffRun(t, []diffCase{
		{
			name: "binding added",
			new: func(_ testing.TB, d *Definition) {
				d.Bindings.HTTP = &HTTPBinding{Method: "POST", URL: "https://scan.example.com/{target}"}
			},
			want: []diffWant{{"bindings.http", "binding_added", BumpMinor}},
		},
		{
			name:         "binding removed",
			new:          func(_ testing.TB, d *Definition) { d.Bindings.CLI = nil },
			want:         []diffWant{{"bindings.cli", "binding_removed", BumpMinor}},
			descContains: "contract (input, output, errors) is unchanged",
		},
		{
			name: "binding fields changed",
			new: func(_ testing.TB, d *Definition) {
				d.Bindings.MCP.Tool = "scan_v2"
				d.Bindings.MCP.Mapping["target"] = "target"
			},
			want:         []diffWant{{"bindings.mcp", "binding_changed", BumpPatch}},
			descContains: "mapping, tool",
		},
		{
			name: "unmodelled binding kind added",
			new: func(_ testing.TB, d *Definition) {
				d.Bindings.Extra = map[string]any{"wasm": map[string]any{"module": "scan.wasm"}}
			},
			want: []diffWant{{"bindings.wasm", "binding_added", BumpMinor}},
		},
	})
}

func TestDiffMetadata(t *testing.T) {
	diffRun(t, []diffCase{
		{name: "description", new: func(_ testing.TB, d *Definition) { d.Description = "Scans." }, want: []diffWant{{"description", "description_changed", BumpPatch}}},
		{name: "title", new: func(_ testing.TB, d *Definition) { d.Title = "Scan" }, want: []diffWant{{"title", "title_changed", BumpPatch}}},
		{name: "documentation_url", new: func(_ testing.TB, d *Definition) { d.DocumentationURL = "" }, want: []diffWant{{"documentation_url", "documentation_url_changed", BumpPatch}}},
		{name: "examples", new: func(_ testing.TB, d *Definition) { d.Examples = []Example{{Input: map[string]any{"target": "."}}} }, want: []diffWant{{"examples", "examples_changed", BumpPatch}}},
		{name: "keywords", new: func(_ testing.TB, d *Definition) { d.Keywords = []string{"cve"} }, want: []diffWant{{"keywords", "keywords_changed", BumpPatch}}},
		{name: "display", new: func(_ testing.TB, d *Definition) { d.Display = &Display{Icon: "shield"} }, want: []diffWant{{"display", "display_changed", BumpPatch}}},
		{name: "system_prompt_addition", new: func(_ testing.TB, d *Definition) { d.SystemPromptAddition = "Use scans." }, want: []diffWant{{"system_prompt_addition", "system_prompt_addition_changed", BumpPatch}}},
		{name: "metadata", new: func(_ testing.TB, d *Definition) { d.Metadata["owner"] = "appsec" }, want: []diffWant{{"metadata", "metadata_changed", BumpPatch}}},
		{name: "provenance", new: func(_ testing.TB, d *Definition) { d.Provenance.Method = "mcp_introspection" }, want: []diffWant{{"provenance", "provenance_changed", BumpPatch}}},
		{name: "domains", new: func(_ testing.TB, d *Definition) { d.Domains = []string{"security", "security.scan"} }, want: []diffWant{{"domains", "domains_changed", BumpPatch}}},
		{name: "categories", new: func(_ testing.TB, d *Definition) { d.Categories = nil }, want: []diffWant{{"categories", "categories_changed", BumpPatch}}},
		{name: "intents", new: func(_ testing.TB, d *Definition) { d.Intents = []string{"security.audit"} }, want: []diffWant{{"intents", "intents_changed", BumpPatch}}},
		{name: "stability", new: func(_ testing.TB, d *Definition) { d.Stability = StabilityDeprecated }, want: []diffWant{{"stability", "stability_changed", BumpPatch}}},
		{name: "deprecated_by", new: func(_ testing.TB, d *Definition) { d.DeprecatedBy = "ossa:security/scan@2.0" }, want: []diffWant{{"deprecated_by", "deprecated_by_changed", BumpPatch}}},
		{name: "sunset_date", new: func(_ testing.TB, d *Definition) { d.SunsetDate = "2027-01-01" }, want: []diffWant{{"sunset_date", "sunset_date_changed", BumpPatch}}},
		{name: "migration_guide", new: func(_ testing.TB, d *Definition) { d.MigrationGuide = "Use v2." }, want: []diffWant{{"migration_guide", "migration_guide_changed", BumpPatch}}},
		{name: "unknown top-level field", new: func(_ testing.TB, d *Definition) { d.Extra = map[string]any{"x-team": "sec"} }, want: []diffWant{{"x-team", "field_changed", BumpPatch}}},
		{name: "attestation is not a change", new: func(_ testing.TB, d *Definition) { d.Attestation.Signature = "def" }},
		{name: "uri and version are not changes", new: func(_ testing.TB, d *Definition) {
			d.URI = "ossa:security/scan_vulnerabilities@1.1"
			d.Version = "1.1.0"
		}},
		{name: "empty and absent are the same", old: func(_ testing.TB, d *Definition) { d.Metadata = nil; d.Keywords = nil }, new: func(_ testing.TB, d *Definition) { d.Metadata = map[string]any{}; d.Keywords = []string{} }},
	})
}

// TestDiffOSSA checks each bullet of OSSA §6.2 (major) and §6.3 (minor; a
// description change is patch, caphub's rule overriding §6.3).
func TestDiffOSSA(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(testing.TB, *Definition)
		want Bump
	}{
		{"6.2 removing required input field", diffEditIn(nil, func(s Schema) { delete(s["properties"].(map[string]any), "target"); s["required"] = []any{} }), BumpMajor},
		{"6.2 adding new required input field", diffEditIn(nil, func(s Schema) {
			s["required"] = []any{"target", "new"}
			s["properties"].(map[string]any)["new"] = map[string]any{}
		}), BumpMajor},
		{"6.2 changing type of existing field", diffEditIn(diffPath("target"), func(s Schema) { s["type"] = "array" }), BumpMajor},
		{"6.2 removing output field", diffEditOut(nil, func(s Schema) { delete(s["properties"].(map[string]any), "summary") }), BumpMajor},
		{"6.2 changing error codes", func(_ testing.TB, d *Definition) { d.Errors[0].Code = "NOT_FOUND" }, BumpMajor},
		{"CCOS broadening effects", func(_ testing.TB, d *Definition) { d.Effects = append(d.Effects, "x") }, BumpMajor},
		{"CCOS broadening permissions", func(_ testing.TB, d *Definition) { d.Permissions = append(d.Permissions, "x") }, BumpMajor},
		{"6.3 adding optional input field with default", diffEditIn(nil, func(s Schema) { s["properties"].(map[string]any)["n"] = map[string]any{"default": int64(1)} }), BumpMinor},
		{"6.3 adding output field", diffEditOut(nil, func(s Schema) { s["properties"].(map[string]any)["n"] = map[string]any{} }), BumpMinor},
		{"6.3 adding new error code", func(_ testing.TB, d *Definition) { d.Errors = append(d.Errors, ErrorDef{Code: "NEW"}) }, BumpMinor},
		{"6.3 adding new binding type", func(_ testing.TB, d *Definition) { d.Bindings.Native = &NativeBinding{Handler: "scan"} }, BumpMinor},
		{"changing description is patch", func(_ testing.TB, d *Definition) { d.Description = "x" }, BumpPatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Diff(diffBase(t, nil), diffBase(t, func(d *Definition) { tc.edit(t, d) }))
			if r.Required != tc.want {
				t.Errorf("Required = %s, want %s; changes %v", r.Required, tc.want, diffGot(r))
			}
		})
	}
}

func TestDiffVerdict(t *testing.T) {
	removeTarget := diffEditIn(nil, func(s Schema) { delete(s["properties"].(map[string]any), "target"); s["required"] = []any{} })
	describe := func(_ testing.TB, d *Definition) { d.Description = "Scans a target." }
	addField := diffEditOut(nil, func(s Schema) { s["properties"].(map[string]any)["n"] = map[string]any{} })
	for _, tc := range []struct {
		name                string
		oldVersion, version string
		edit                func(testing.TB, *Definition)
		required, declared  Bump
		satisfied           bool
		problem             string // must appear in Problem; "" means Problem is empty
		renameNew, nilNew   bool
		oldInvalid, nilOld  bool
		newDomain           string
	}{
		{name: "minor bump for a breaking change", oldVersion: "1.0.0", version: "1.1.0", edit: removeTarget, required: BumpMajor, declared: BumpMinor,
			problem: "version 1.1.0 is a minor bump but the changes need a major bump: use 2.0.0"},
		{name: "major bump for a breaking change", oldVersion: "1.0.0", version: "2.0.0", edit: removeTarget, required: BumpMajor, declared: BumpMajor, satisfied: true},
		{name: "patch bump for a description", oldVersion: "1.2.3", version: "1.2.4", edit: describe, required: BumpPatch, declared: BumpPatch, satisfied: true},
		{name: "patch bump for an addition", oldVersion: "1.2.3", version: "1.2.4", edit: addField, required: BumpMinor, declared: BumpPatch,
			problem: "version 1.2.4 is a patch bump but the changes need a minor bump: use 1.3.0"},
		{name: "larger bump than needed", oldVersion: "1.2.3", version: "2.0.0", edit: describe, required: BumpPatch, declared: BumpMajor, satisfied: true},
		{name: "new version lower than old", oldVersion: "1.2.0", version: "1.1.0", edit: describe, required: BumpPatch, declared: BumpMinor,
			problem: "version 1.1.0 is lower than the old version 1.2.0: a new version must be higher; use 1.2.1"},
		{name: "new version lower than old without changes", oldVersion: "2.0.0", version: "1.9.9", required: BumpNone, declared: BumpMajor,
			problem: "is lower than the old version 2.0.0"},
		{name: "same version with changes", oldVersion: "1.0.0", version: "1.0.0", edit: addField, required: BumpMinor, declared: BumpNone,
			problem: "has the same precedence as the old version 1.0.0 but the changes need a minor bump: use 1.1.0"},
		{name: "same version without changes", oldVersion: "1.0.0", version: "1.0.0", satisfied: true},
		{name: "1.0 and 1.0.0 are the same version", oldVersion: "1.0", version: "1.0.0", satisfied: true},
		{name: "build metadata only", oldVersion: "1.0.0+a", version: "1.0.0+b", problem: "only in build metadata"},
		{name: "new version without changes", oldVersion: "1.0.0", version: "1.0.1", declared: BumpPatch, satisfied: true},
		{name: "pre-release only", oldVersion: "1.0.0-rc.1", version: "1.0.0-rc.2", edit: describe, required: BumpPatch, declared: BumpPatch, satisfied: true},
		{name: "pre-release of a major", oldVersion: "1.4.2", version: "2.0.0-rc.1", edit: removeTarget, required: BumpMajor, declared: BumpMajor, satisfied: true},
		{name: "0.x needs a major too", oldVersion: "0.1.0", version: "0.2.0", edit: removeTarget, required: BumpMajor, declared: BumpMinor, problem: "use 1.0.0"},
		{name: "new version does not parse", oldVersion: "1.0.0", version: "v1.1.0", edit: describe, required: BumpPatch, problem: `new version: invalid version "v1.1.0"`},
		{name: "old version does not parse", oldVersion: "1.0.x", version: "1.1.0", required: BumpNone, problem: `old version: invalid version "1.0.x"`},
		{name: "different names", oldVersion: "1.0.0", version: "1.1.0", renameNew: true, required: BumpNone, declared: BumpMinor,
			problem: "old and new are different capabilities (ossa:security/scan_vulnerabilities and ossa:security/scan_code)"},
		{name: "different domains", oldVersion: "1.0.0", version: "1.1.0", newDomain: "code", required: BumpNone, declared: BumpMinor,
			problem: "different capabilities"},
		{name: "nil new definition", oldVersion: "1.0.0", nilNew: true, problem: "the new definition is missing"},
		{name: "nil old definition", version: "1.0.0", nilOld: true, problem: "the old definition is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := diffBase(t, func(d *Definition) { d.Version = tc.oldVersion })
			new := diffBase(t, func(d *Definition) {
				d.Version = tc.version
				if tc.edit != nil {
					tc.edit(t, d)
				}
				if tc.renameNew {
					d.Name, d.URI = "scan_code", "ossa:security/scan_code@1.1"
				}
				if tc.newDomain != "" {
					d.Domain, d.URI = tc.newDomain, "ossa:"+tc.newDomain+"/scan_vulnerabilities@1.1"
				}
			})
			if tc.nilOld {
				old = nil
			}
			if tc.nilNew {
				new = nil
			}
			r := Diff(old, new)
			if tc.nilOld || tc.nilNew {
				if r.Satisfied || !strings.Contains(r.Problem, tc.problem) {
					t.Fatalf("Satisfied=%t Problem=%q, want not satisfied with %q", r.Satisfied, r.Problem, tc.problem)
				}
				return
			}
			if r.Required != tc.required || r.Declared != tc.declared || r.Satisfied != tc.satisfied {
				t.Errorf("Required=%s Declared=%s Satisfied=%t, want %s %s %t (changes %v, problem %q)",
					r.Required, r.Declared, r.Satisfied, tc.required, tc.declared, tc.satisfied, diffGot(r), r.Problem)
			}
			switch {
			case tc.problem == "" && r.Problem != "":
				t.Errorf("Problem = %q, want none", r.Problem)
			case tc.problem != "" && !strings.Contains(r.Problem, tc.problem):
				t.Errorf("Problem = %q, want it to contain %q", r.Problem, tc.problem)
			}
			if r.Satisfied == (r.Problem != "") {
				t.Errorf("Satisfied=%t but Problem=%q", r.Satisfied, r.Problem)
			}
			if r.Old != tc.oldVersion || r.New != tc.version {
				t.Errorf("Old, New = %q, %q, want %q, %q", r.Old, r.New, tc.oldVersion, tc.version)
			}
		})
	}
}

// TestDiffOrder checks that changes come sorted by path then kind, whatever
// the map iteration order.
func TestDiffOrder(t *testing.T) {
	edit := func(d *Definition) {
		d.Description = "x"
		d.Effects = append(d.Effects, "y")
		d.Errors = d.Errors[:1]
		p := d.Input["properties"].(map[string]any)
		p["target"].(map[string]any)["minLength"] = int64(2)
		p["target"].(map[string]any)["maxLength"] = int64(9)
		p["target"].(map[string]any)["pattern"] = "^x"
		delete(p, "depth")
		p["zeta"] = map[string]any{}
		p["alpha"] = map[string]any{}
	}
	first := Diff(diffBase(t, nil), diffBase(t, edit))
	for range 20 {
		again := Diff(diffBase(t, nil), diffBase(t, edit))
		if !slices.Equal(again.Changes, first.Changes) {
			t.Fatalf("order differs between runs:\n%v\n%v", first.Changes, again.Changes)
		}
	}
	if !slices.IsSortedFunc(first.Changes, func(a, b Change) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	}) {
		t.Errorf("changes not sorted by path, kind: %v", diffGot(first))
	}
}

// TestDiffDoesNotModify checks that Diff leaves both definitions as they were.
func TestDiffDoesNotModify(t *testing.T) {
	old := diffBase(t, func(d *Definition) {
		d.Input = diffSchema(t, `{"type": "object", "properties": {"e": {"$ref": "#/$defs/E", "description": "d"}}, "$defs": {"E": {"type": "string"}}}`)
	})
	new := diffBase(t, func(d *Definition) {
		d.Input = diffSchema(t, `{"type": "object", "properties": {"e": {"$ref": "#/$defs/E", "description": "e"}}, "$defs": {"E": {"type": "integer"}}}`)
	})
	before := [2]string{}
	for i, d := range []*Definition{old, new} {
		b, _ := json.Marshal(d)
		before[i] = string(b)
	}
	Diff(old, new)
	for i, d := range []*Definition{old, new} {
		if b, _ := json.Marshal(d); string(b) != before[i] {
			t.Errorf("definition %d modified:\n%s\n%s", i, before[i], b)
		}
	}
}

func TestDiffReportJSON(t *testing.T) {
	r := Diff(diffBase(t, nil), diffBase(t, func(d *Definition) {
		d.Version = "1.1.0"
		d.Errors = d.Errors[:1]
	}))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"old":"1.0.0"`, `"new":"1.1.0"`, `"required":"major"`, `"declared":"minor"`, `"satisfied":false`, `"bump":"major"`, `"path":"errors[SCAN_FAILED]"`, `"kind":"error_removed"`, `"problem":"version 1.1.0 is a minor bump`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON %s does not contain %s", b, s)
		}
	}
	var back DiffReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Required != BumpMajor || back.Declared != BumpMinor || back.Changes[0].Bump != BumpMajor {
		t.Errorf("round trip: %+v", back)
	}

	empty, _ := json.Marshal(Diff(diffBase(t, nil), diffBase(t, nil)))
	if !strings.Contains(string(empty), `"changes":[]`) || strings.Contains(string(empty), "problem") {
		t.Errorf("empty report JSON = %s", empty)
	}
}

func TestBump(t *testing.T) {
	for b, name := range map[Bump]string{BumpNone: "none", BumpPatch: "patch", BumpMinor: "minor", BumpMajor: "major"} {
		if b.String() != name {
			t.Errorf("%d.String() = %q, want %q", int(b), b.String(), name)
		}
		var back Bump
		if err := back.UnmarshalText([]byte(name)); err != nil || back != b {
			t.Errorf("UnmarshalText(%q) = %v, %v", name, back, err)
		}
	}
	if !(BumpNone < BumpPatch && BumpPatch < BumpMinor && BumpMinor < BumpMajor) {
		t.Error("bumps are not ordered")
	}
	if _, err := Bump(7).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid bump succeeded")
	}
	var b Bump
	if err := b.UnmarshalText([]byte("huge")); err == nil {
		t.Error("UnmarshalText(huge) succeeded")
	}
	if Bump(7).String() != "Bump(7)" {
		t.Errorf("Bump(7).String() = %q", Bump(7).String())
	}
}

func ExampleDiff() {
	old := &Definition{
		URI: "ossa:security/scan@1.0", Domain: "security", Name: "scan", Version: "1.0.0",
		Input: Schema{"type": "object", "required": []any{"target"}, "properties": map[string]any{
			"target": map[string]any{"type": "string"},
		}},
	}
	new := &Definition{
		URI: "ossa:security/scan@1.1", Domain: "security", Name: "scan", Version: "1.1.0",
		Input: Schema{"type": "object", "required": []any{"target", "token"}, "properties": map[string]any{
			"target": map[string]any{"type": "string"},
			"token":  map[string]any{"type": "string"},
		}},
	}
	r := Diff(old, new)
	for _, c := range r.Changes {
		fmt.Println(c.Bump, c.Kind, c.Path)
	}
	fmt.Println(r.Satisfied, r.Problem)
	// Output:
	// major input_required_added input.properties.token
	// false version 1.1.0 is a minor bump but the changes need a major bump: use 2.0.0
}

// diffBenchDefinition builds a realistic definition with 30 fields: 18 in the
// input (some nested, an array of objects, a $ref'd definition) and 12 in
// the output.
func diffBenchDefinition(version string, changed bool) *Definition {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	in := map[string]any{}
	for i := range 12 {
		in[fmt.Sprintf("field_%02d", i)] = str(fmt.Sprintf("Input field %d.", i))
	}
	in["limit"] = map[string]any{"type": "integer", "minimum": int64(1), "maximum": int64(100), "default": int64(20)}
	in["sort"] = map[string]any{"type": "string", "enum": []any{"asc", "desc"}}
	in["filters"] = map[string]any{"type": "object", "properties": map[string]any{
		"state":  map[string]any{"type": "string", "enum": []any{"open", "closed", "all"}},
		"labels": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}}
	in["owner"] = map[string]any{"$ref": "#/$defs/User"}
	in["since"] = map[string]any{"type": "string", "format": "date-time"}
	in["page"] = map[string]any{"type": "integer", "minimum": int64(1)}
	out := map[string]any{}
	for i := range 8 {
		out[fmt.Sprintf("out_%02d", i)] = str(fmt.Sprintf("Output field %d.", i))
	}
	out["total"] = map[string]any{"type": "integer"}
	out["next"] = map[string]any{"type": []any{"string", "null"}}
	out["author"] = map[string]any{"$ref": "#/$defs/User"}
	out["items"] = map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"id"}, "properties": map[string]any{
		"id": str("ID."), "title": str("Title."), "state": map[string]any{"type": "string", "enum": []any{"open", "closed"}},
	}}}
	user := map[string]any{"type": "object", "required": []any{"login"}, "properties": map[string]any{"login": str("Login."), "id": map[string]any{"type": "integer"}}}
	if changed {
		in["field_03"] = map[string]any{"type": "integer"}
		delete(in, "field_07")
		in["sort"] = map[string]any{"type": "string", "enum": []any{"asc", "desc", "relevance"}}
		in["extra"] = str("New optional field.")
		out["items"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["url"] = str("URL.")
		user["properties"].(map[string]any)["name"] = str("Name.")
	}
	return &Definition{
		URI: "ossa:code/list_issues@1.0", Domain: "code", Name: "list_issues", Version: version,
		Description: "Lists issues.",
		Input:       Schema{"type": "object", "required": []any{"field_00", "field_01"}, "properties": in, "$defs": map[string]any{"User": user}},
		Output:      Schema{"type": "object", "required": []any{"items", "total"}, "properties": out, "$defs": map[string]any{"User": user}},
		Errors:      []ErrorDef{{Code: "NOT_FOUND"}, {Code: "RATE_LIMITED", Retryable: true}},
		Bindings:    Bindings{MCP: &MCPBinding{Server: "github", Tool: "list_issues"}},
		Effects:     []string{"network_request"},
		Permissions: []string{"network.http"},
	}
}

func BenchmarkDiff(b *testing.B) {
	old := diffBenchDefinition("1.0.0", false)
	new := diffBenchDefinition("2.0.0", true)
	if r := Diff(old, new); !r.Satisfied || len(r.Changes) < 5 {
		b.Fatalf("unexpected report: %+v", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		Diff(old, new)
	}
}
