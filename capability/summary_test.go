package capability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/testpeers"
)

// summaryJSON is the summary of d as encoding/json writes it.
func summaryJSON(t testing.TB, d *capability.Definition) (capability.Summary, []byte) {
	t.Helper()
	s := capability.Summarize(d)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// checkSummary checks what holds for every summary: the size bound, one
// line of valid UTF-8, the tool name and URI of the definition.
func checkSummary(t testing.TB, d *capability.Definition, s capability.Summary, b []byte) {
	t.Helper()
	if len(b) > capability.MaxSummaryBytes {
		t.Errorf("%s: summary is %d bytes, over %d: %s", d.URI, len(b), capability.MaxSummaryBytes, b)
	}
	for _, f := range []string{s.Title, s.Description, s.Params} {
		if strings.ContainsAny(f, "\n\r\t") || !utf8.ValidString(f) {
			t.Errorf("%s: summary field %q is not one line of UTF-8", d.URI, f)
		}
	}
	if s.ToolName != capability.ToolName(s.URI) {
		t.Errorf("%s: tool name %q, ToolName(%s) = %q", d.URI, s.ToolName, s.URI, capability.ToolName(s.URI))
	}
}

// TestSummarizeGitHub summarises every operation of GitHub's REST API (npm
// @octokit/openapi): each summary fits MaxSummaryBytes, and a few read as
// an agent needs them.
func TestSummarizeGitHub(t *testing.T) {
	p := filepath.Join(testpeers.NPMPackage(t, "@octokit/openapi"), "generated", "api.github.com.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("GitHub's OpenAPI spec is not readable at %s: %v", p, err)
	}
	res, err := openapi.Import(context.Background(), p, data, openapi.Options{Domain: "github"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Definitions) < 1000 {
		t.Fatalf("imported %d operations, want GitHub's whole API", len(res.Definitions))
	}
	byName := map[string]capability.Summary{}
	largest, total, schemaBytes := 0, 0, 0
	for i := range res.Definitions {
		d := &res.Definitions[i]
		s, b := summaryJSON(t, d)
		checkSummary(t, d, s, b)
		if s.URI != "ossa:github/"+d.Name+"@23.0" || s.Version != d.Version {
			t.Errorf("%s: summary URI %q version %q", d.Name, s.URI, s.Version)
		}
		byName[d.Name] = s
		largest, total = max(largest, len(b)), total+len(b)
		checkFit(t, d, s, 300)
		in, _ := json.Marshal(d.Input)
		out, _ := json.Marshal(d.Output)
		schemaBytes += len(in) + len(out)
	}
	t.Logf("%d summaries: largest %d bytes, %d on average (their schemas: %d bytes on average)",
		len(res.Definitions), largest, total/len(res.Definitions), schemaBytes/len(res.Definitions))

	for _, tc := range []struct {
		name        string
		description string
		params      []string // substrings, in order
	}{
		{"issues_create", "Any user with pull access to a repository can create an issue.",
			[]string{"owner*: string, repo*: string, title*: string|integer, ", "assignees: string[]", "issue_field_values: {field_id*: integer, value*: string|number|string[]}[]", "labels: (string|object)[]", "milestone: string|integer|null"}},
		{"search_issues_and_pull_requests", "Find issues by state and keyword.",
			[]string{"q*: string", `order: "desc"|"asc"="desc"`, "per_page: integer=30", `sort: "comments"|"reactions"|"reactions-+1"|"reactions--1"|+7`}},
		{"issues_list_for_repo", "List issues in a repository.",
			[]string{"owner*: string, repo*: string", "since: string(date-time)"}},
		{"repos_create_for_authenticated_user", "Creates a new repository for the authenticated user.",
			[]string{"name*: string, ", "allow_auto_merge: boolean=false", "more"}},
		{"repos_create_webhook", "Repositories can have multiple webhooks installed.",
			[]string{"owner*: string, repo*: string, body: {active: boolean=true, config: object, events: string[]"}},
	} {
		s, ok := byName[tc.name]
		if !ok {
			t.Errorf("no operation %s", tc.name)
			continue
		}
		if s.Description != tc.description {
			t.Errorf("%s: description %q, want %q", tc.name, s.Description, tc.description)
		}
		rest := s.Params
		for _, want := range tc.params {
			i := strings.Index(rest, want)
			if i < 0 {
				t.Errorf("%s: params %q lack %q (in this order)", tc.name, s.Params, want)
				break
			}
			rest = rest[i+len(want):]
		}
	}
}

// checkFit checks that Fit(max) brings a summary within max bytes when
// its uncut fields fit, keeps the parameter list's braces balanced, and
// leaves a summary that fits as it is.
func checkFit(t testing.TB, d *capability.Definition, s capability.Summary, max int) {
	t.Helper()
	fitted := s
	fitted.Fit(max)
	b, _ := json.Marshal(fitted)
	fixed := capability.Summary{ToolName: s.ToolName, URI: s.URI, Version: s.Version, Stability: s.Stability, DeprecatedBy: s.DeprecatedBy}
	fb, _ := json.Marshal(fixed)
	orig, _ := json.Marshal(s)
	switch {
	case len(orig) <= max && fitted != s:
		t.Errorf("%s: Fit(%d) changed a summary of %d bytes", d.URI, max, len(orig))
	case len(b) > max && len(fb)+len(`,"params":"…"`) <= max:
		t.Errorf("%s: Fit(%d) left %d bytes: %s", d.URI, max, len(b), b)
	case strings.Count(fitted.Params, "{") != strings.Count(fitted.Params, "}"):
		t.Errorf("%s: Fit(%d) cut inside braces: %q", d.URI, max, fitted.Params)
	case fitted.Params != s.Params && !strings.HasSuffix(fitted.Params, "…"):
		t.Errorf("%s: Fit(%d) cut the parameters without an ellipsis: %q", d.URI, max, fitted.Params)
	}
}

func TestSummarize(t *testing.T) {
	def := func(input map[string]any) capability.Definition {
		return capability.Definition{URI: "ossa:test/thing@1.0", Name: "thing", Domain: "test", Version: "1.2.3", Input: input}
	}
	manyProps := map[string]any{}
	for i := range 5000 {
		manyProps[fmt.Sprintf("property_number_%05d_%s", i, strings.Repeat("x", 40))] = map[string]any{"type": "string", "enum": []any{strings.Repeat("v", 500), "b", "c", "d", "e", "f"}}
	}
	deep := map[string]any{"type": "string"}
	for range 60 {
		deep = map[string]any{"type": "array", "items": deep}
	}
	cases := []struct {
		name   string
		d      capability.Definition
		params string
	}{
		{"no input", def(nil), ""},
		{"empty object", def(map[string]any{"type": "object"}), ""},
		{"required first, then by name",
			def(map[string]any{"type": "object", "required": []any{"z", "a"}, "properties": map[string]any{
				"b": map[string]any{"type": "integer", "default": 3}, "z": map[string]any{"type": "string"}, "a": map[string]any{"type": "boolean"}}}),
			"z*: string, a*: boolean, b: integer=3"},
		{"local refs, allOf, const, false schema",
			def(map[string]any{"$defs": map[string]any{"Color": map[string]any{"enum": []any{"red", "green"}}},
				"allOf":      []any{map[string]any{"properties": map[string]any{"mode": map[string]any{"const": "fast"}}, "required": []any{"mode"}}},
				"properties": map[string]any{"color": map[string]any{"$ref": "#/$defs/Color"}, "never": false, "any": map[string]any{}}}),
			`mode*: "fast", any: any, color: "red"|"green", never: never`},
		{"a $ref loop ends", def(map[string]any{"$defs": map[string]any{"A": map[string]any{"$ref": "#/$defs/B"}, "B": map[string]any{"$ref": "#/$defs/A"}},
			"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/A"}}}), "x: any"},
		{"nested objects open one level", def(map[string]any{"properties": map[string]any{"outer": map[string]any{"type": "object", "required": []any{"inner"}, "properties": map[string]any{
			"inner": map[string]any{"type": "object", "properties": map[string]any{"deeper": map[string]any{"type": "string"}}}}}}}),
			"outer: {inner*: object}"},
		{"deep arrays", def(map[string]any{"properties": map[string]any{"grid": deep}}), "grid: string" + strings.Repeat("[]", 60)},
		{"non-object input", def(map[string]any{"type": "string"}), "input: string"},
		{"5000 long properties, long enums", def(map[string]any{"type": "object", "properties": manyProps}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, b := summaryJSON(t, &tc.d)
			checkSummary(t, &tc.d, s, b)
			for _, n := range []int{0, 100, 200, 400} {
				checkFit(t, &tc.d, s, n)
			}
			if s.URI != "ossa:test/thing@1.2" || s.ToolName != "test_thing" || s.Version != "1.2.3" {
				t.Errorf("summary %s", b)
			}
			if tc.params != "" && !strings.HasPrefix(s.Params, tc.params) {
				t.Errorf("params %q, want %q", s.Params, tc.params)
			}
		})
	}
	// The 5000 properties are cut with a count of the rest.
	s := capability.Summarize(&cases[len(cases)-1].d)
	if !strings.HasSuffix(s.Params, " more") || !strings.Contains(s.Params, `|+2`) {
		t.Errorf("5000 properties: params %q, want enums cut and a +N more", s.Params)
	}
}

func TestSummaryDescription(t *testing.T) {
	long := strings.Repeat("word ", 200)
	cases := []struct{ in, want string }{
		{"", ""},
		{"Adds two numbers.", "Adds two numbers."},
		{"Adds two numbers. Then it rests.", "Adds two numbers."},
		{"Lists items, e.g. files. More.", "Lists items, e.g. files."},
		{"The IANA time zone (e.g. Europe/Paris) of the user. More.", "The IANA time zone (e.g. Europe/Paris) of the user."},
		{"Say \"i.e. this\" then stop. Next.", "Say \"i.e. this\" then stop."},
		{"See [the docs](https://example.com/x) for **details**. Rest.", "See the docs for details."},
		{"No period\nbut a second line\n\nand a paragraph", "No period but a second line"},
		{"Is it?  Yes.", "Is it?"},
		{"Version 1.2 of A. B. Smith's tool. Second.", "Version 1.2 of A. B. Smith's tool."},
	}
	for _, tc := range cases {
		d := capability.Definition{URI: "ossa:test/x@1.0", Version: "1.0.0", Description: tc.in}
		if got := capability.Summarize(&d).Description; got != tc.want {
			t.Errorf("description of %q = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Long text, multi-byte and HTML-escaped characters are cut within the
	// budget, on a rune boundary, with an ellipsis.
	for _, text := range []string{long, strings.Repeat("é", 2000), strings.Repeat("<&>", 2000), strings.Repeat(`"\`, 2000)} {
		d := capability.Definition{URI: "ossa:test/x@1.0", Version: "1.0.0", Title: text, Description: text}
		s, b := summaryJSON(t, &d)
		checkSummary(t, &d, s, b)
		if !strings.HasSuffix(s.Description, "…") || !strings.HasSuffix(s.Title, "…") {
			t.Errorf("long text %.20q…: title %q, description %q, want both cut with …", text, s.Title, s.Description)
		}
	}
}

// FuzzSummarize checks that any input schema and text give a summary within
// MaxSummaryBytes, on one line of valid UTF-8, without panicking.
func FuzzSummarize(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, "Adds. Then.", "Add")
	f.Add(`{"properties":{"x":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`, "e.g. x", "")
	f.Add(`{"allOf":[{"properties":{"a":{"oneOf":[{"type":"object","properties":{"b":{}}},{"enum":[1,"x",null]}]}}}]}`, "[a](b)", "<&>")
	f.Add(`{"properties":{"a":{"type":["array","null"],"items":{"anyOf":[{"const":"\u2028"},{"type":"object"}]}}}}`, "\x00", "\xff")
	f.Fuzz(func(t *testing.T, schema, description, title string) {
		var in map[string]any
		if json.Unmarshal([]byte(schema), &in) != nil {
			return
		}
		d := capability.Definition{URI: "ossa:fuzz/x@1.0", Version: "1.0.0", Title: title, Description: description, Input: in}
		s, b := summaryJSON(t, &d)
		checkSummary(t, &d, s, b)
		checkFit(t, &d, s, 200)
	})
}

func BenchmarkSummarize(b *testing.B) {
	props := map[string]any{}
	for i := range 200 {
		props[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"enum": []any{"x", "y"}}}}
	}
	d := capability.Definition{URI: "ossa:bench/x@1.0", Version: "1.0.0", Description: strings.Repeat("Some words here. ", 50), Input: map[string]any{"type": "object", "properties": props}}
	for b.Loop() {
		capability.Summarize(&d)
	}
}
