package agent

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestRulesMatchSchema walks the official schema file and the rule tables
// side by side and checks that every keyword of every subschema is
// transcribed exactly (and that the schema uses no keyword the rules do not
// implement), so the tables cannot drift from the schema unnoticed.
func TestRulesMatchSchema(t *testing.T) {
	_, raw := referenceSchema(t)
	defs, _ := raw["definitions"].(map[string]any)
	seen := map[string]bool{}
	var compare func(ptr string, s map[string]any, r *rule)
	compare = func(ptr string, s map[string]any, r *rule) {
		fail := func(format string, args ...any) { t.Errorf("%s: %s", ptr, fmt.Sprintf(format, args...)) }
		if r == nil {
			fail("no rule")
			return
		}
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			if r.name != name {
				fail("$ref %s, rule is %q", ref, r.name)
				return
			}
			if !seen[name] {
				seen[name] = true
				def, _ := defs[name].(map[string]any)
				compare("#/definitions/"+name, def, r)
			}
			return
		}
		for k := range s {
			switch k {
			case "type", "properties", "items", "enum", "pattern", "format", "minLength", "maxLength", "minimum", "maximum",
				"maxItems", "required", "additionalProperties", "description", "default", "examples",
				"$schema", "$id", "title", "definitions":
			default:
				fail("keyword %q is not implemented by the rules", k)
			}
		}
		want := map[string]jsonType{"string": typeString, "integer": typeInteger, "number": typeNumber,
			"boolean": typeBoolean, "object": typeObject, "array": typeArray}[fmt.Sprint(s["type"])]
		if r.typ != want {
			fail("type %v, rule has %s", s["type"], typeNames[r.typ])
		}
		var enum []string
		if e, ok := s["enum"].([]any); ok {
			for _, x := range e {
				enum = append(enum, x.(string))
			}
		}
		if !reflect.DeepEqual(enum, r.enumValues) {
			fail("enum %v, rule has %v", enum, r.enumValues)
		}
		pat, _ := s["pattern"].(string)
		if got := ""; r.re != nil {
			got = r.re.String()
			if got != pat {
				fail("pattern %q, rule has %q", pat, got)
			}
			if r.reMeans == "" {
				fail("pattern without words")
			}
		} else if pat != "" {
			fail("pattern %q missing", pat)
		}
		if f, _ := s["format"].(string); (f == "uri") != r.uriFormat || f != "" && f != "uri" {
			fail("format %q, rule uriFormat=%v", f, r.uriFormat)
		}
		intKw := func(kw string, got int) {
			want := -1
			if v, ok := s[kw].(float64); ok {
				want = int(v)
			}
			if got != want {
				fail("%s %d, rule has %d", kw, want, got)
			}
		}
		intKw("minLength", r.minLen)
		intKw("maxLength", r.maxLen)
		intKw("maxItems", r.maxItemN)
		numKw := func(kw string, got *float64) {
			v, ok := s[kw].(float64)
			if ok != (got != nil) || ok && v != *got {
				have := "none"
				if got != nil {
					have = fmtNum(*got)
				}
				fail("%s %v, rule has %s", kw, s[kw], have)
			}
		}
		numKw("minimum", r.min)
		numKw("maximum", r.max)
		var req []string
		if rq, ok := s["required"].([]any); ok {
			for _, x := range rq {
				req = append(req, x.(string))
			}
		}
		if !reflect.DeepEqual(req, r.required) {
			fail("required %v, rule has %v", req, r.required)
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if r.noExtra == ap || r.extra != nil {
				fail("additionalProperties %v, rule closed=%v extra=%v", ap, r.noExtra, r.extra != nil)
			}
		case map[string]any:
			if r.noExtra {
				fail("additionalProperties is a schema, rule is closed")
			}
			compare(ptr+"/additionalProperties", ap, r.extra)
		case nil:
			if r.noExtra || r.extra != nil {
				fail("no additionalProperties, rule closed=%v extra=%v", r.noExtra, r.extra != nil)
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			compare(ptr+"/items", items, r.items)
		} else if r.items != nil {
			fail("rule has items, schema none")
		}
		props, _ := s["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		ruleNames := propNames(r)
		sort.Strings(names)
		sort.Strings(ruleNames)
		if len(names)+len(ruleNames) > 0 && !reflect.DeepEqual(names, ruleNames) {
			fail("properties %v, rule has %v", names, ruleNames)
		}
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				compare(ptr+"/properties/"+escapePointer(k), sub, r.byName[k])
			}
		}
	}
	compare("#", raw, manifestDef)
	for name := range defs {
		if !seen[name] {
			t.Errorf("#/definitions/%s is never referenced from the rules", name)
		}
	}
	t.Logf("compared the root and %d definitions keyword by keyword", len(seen))
}
