package capability

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// deep wraps inner in n objects {key: …}.
func deep(key string, n int, inner any) map[string]any {
	m := map[string]any{key: inner}
	for i := 1; i < n; i++ {
		m = map[string]any{key: m}
	}
	return m
}

// budgetDefinition is a valid definition with the given input schema.
func budgetDefinition(input Schema) *Definition {
	return &Definition{
		URI: "ossa:budget/deep@1.0", Name: "deep", Domain: "budget", Version: "1.0.0",
		Description: "budgets", DocumentationURL: "https://example.com/doc", Stability: StabilityStable,
		Input: input, Output: Schema{},
		Errors:   []ErrorDef{{Code: "FAILED", Description: "it failed"}},
		Bindings: Bindings{Native: &NativeBinding{Handler: "x"}},
	}
}

func errorsOf(issues []Issue) []Issue {
	var out []Issue
	for _, i := range issues {
		if i.Severity == SeverityError {
			out = append(out, i)
		}
	}
	return out
}

// A schema 4,000 levels deep (81 s to compile before) is refused at the
// first path past the limit, and nothing else is reported.
func TestSchemaNestingRefused(t *testing.T) {
	d := budgetDefinition(deep("items", 4000, map[string]any{}))
	issues := Validate(d)
	want := "input" + strings.Repeat(".items", MaxSchemaNesting)
	if len(issues) != 1 || issues[0].Path != want || issues[0].Severity != SeverityError ||
		!strings.Contains(issues[0].Message, "schema nesting exceeds 64 levels") {
		t.Fatalf("issues: %v", issues)
	}
	if _, si := CompileSchema(d.Input); len(si) != 1 || si[0].Pointer != strings.Repeat("items.", MaxSchemaNesting-1)+"items" {
		t.Errorf("CompileSchema: %v", si)
	}
	if err := (&ValidationError{Issues: issues}); !HasErrors(issues) || !strings.Contains(err.Error(), want+": schema nesting exceeds 64 levels") {
		t.Errorf("ValidationError: %v", err)
	}
}

// A schema exactly at the limit is valid; one level more is not. Arrays
// count as levels, and the path names their index.
func TestSchemaNestingLimit(t *testing.T) {
	at := deep("items", MaxSchemaNesting-1, map[string]any{"type": "string"}) // 64 objects
	if issues := errorsOf(Validate(budgetDefinition(at))); len(issues) > 0 {
		t.Errorf("a schema nesting %d levels: %v", MaxSchemaNesting, issues)
	}
	over := deep("items", MaxSchemaNesting-1, map[string]any{"enum": []any{"a"}})
	issues := errorsOf(Validate(budgetDefinition(over)))
	if want := "input" + strings.Repeat(".items", MaxSchemaNesting-1) + ".enum"; len(issues) != 1 || issues[0].Path != want {
		t.Errorf("a schema nesting %d levels: %v, want one issue at %s", MaxSchemaNesting+1, issues, want)
	}
	arr := map[string]any{"type": "object", "allOf": []any{map[string]any{}, deep("not", MaxSchemaNesting, true)}}
	issues = errorsOf(Validate(budgetDefinition(arr)))
	if want := "input.allOf[1]" + strings.Repeat(".not", MaxSchemaNesting-2); len(issues) != 1 || issues[0].Path != want {
		t.Errorf("deep under allOf: %v, want one issue at %s", issues, want)
	}
}

// With several branches too deep, the first in key order is named, every
// time (maps have no order of their own).
func TestSchemaNestingPathIsStable(t *testing.T) {
	s := map[string]any{"properties": map[string]any{}}
	for _, k := range []string{"zeta", "alpha", "mid"} {
		s["properties"].(map[string]any)[k] = deep("items", 100, true)
	}
	want := "input.properties.alpha" + strings.Repeat(".items", MaxSchemaNesting-2)
	for range 5 {
		if issues := Validate(budgetDefinition(s)); len(issues) != 1 || issues[0].Path != want {
			t.Fatalf("issues %v, want one at %s", issues, want)
		}
	}
}

// Wide schemas: too many subschemas (the compiler's time grows with the
// square of their number) or too many values are refused without
// compiling.
func TestSchemaSizeRefused(t *testing.T) {
	many := make([]any, MaxSchemaObjects)
	for i := range many {
		many[i] = map[string]any{}
	}
	issues := Validate(budgetDefinition(Schema{"anyOf": many}))
	if len(issues) != 1 || issues[0].Path != "input" || !strings.Contains(issues[0].Message, "more than 10000 objects") {
		t.Errorf("%d subschemas: %v", len(many), issues)
	}
	if _, si := CompileSchema(Schema{"anyOf": many}); len(si) != 1 || !strings.Contains(si[0].Message, "more than 10000 objects") {
		t.Errorf("CompileSchema of %d subschemas: %v", len(many), si)
	}

	values := make([]any, MaxSchemaNodes)
	for i := range values {
		values[i] = "v"
	}
	issues = Validate(budgetDefinition(Schema{"type": "object", "properties": map[string]any{"a": map[string]any{"enum": values}}}))
	if len(issues) != 1 || issues[0].Path != "input" || !strings.Contains(issues[0].Message, "more than 100000 values") {
		t.Errorf("%d values: %v", len(values), issues)
	}

	// Input and output count together.
	half := make([]any, MaxSchemaObjects/2+1)
	for i := range half {
		half[i] = true
	}
	d := budgetDefinition(Schema{"type": "object", "anyOf": half})
	d.Output = Schema{"anyOf": half}
	if issues := Validate(d); len(issues) != 1 || issues[0].Path != "output" {
		t.Errorf("input and output of %d subschemas each: %v", len(half), issues)
	}
	d.Output = Schema{}
	if issues := errorsOf(Validate(d)); len(issues) > 0 {
		t.Errorf("input of %d subschemas: %v", len(half), issues)
	}
}

// A definition nested 1,100 levels deep (a 500 on SQLite, a 201 on
// PostgreSQL) is refused by Validate, whichever free-form field holds it.
func TestDefinitionNestingRefused(t *testing.T) {
	msg := "definition nesting exceeds 128 levels"
	cases := []struct {
		name string
		set  func(d *Definition)
		want string
	}{
		{"metadata", func(d *Definition) { d.Metadata = deep("a", 1100, 1) }, "metadata" + strings.Repeat(".a", MaxDefinitionNesting-1)},
		{"extra", func(d *Definition) { d.Extra = map[string]any{"x-deep": deep("a", 1100, 1)} }, "x-deep" + strings.Repeat(".a", MaxDefinitionNesting-1)},
		{"example", func(d *Definition) {
			d.Examples = []Example{{Input: map[string]any{"q": deep("a", 1100, 1)}}}
		}, "examples[0].input.q" + strings.Repeat(".a", MaxDefinitionNesting-4)},
		{"binding extra", func(d *Definition) { d.Bindings.Native.Extra = map[string]any{"x": deep("a", 1100, 1)} }, "bindings.native.x" + strings.Repeat(".a", MaxDefinitionNesting-3)},
		{"error extra", func(d *Definition) { d.Errors[0].Extra = map[string]any{"x": []any{deep("a", 1100, 1)}} }, "errors[0].x[0]" + strings.Repeat(".a", MaxDefinitionNesting-4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := budgetDefinition(Schema{"type": "object"})
			c.set(d)
			issues := Validate(d)
			if len(issues) != 1 || issues[0].Path != c.want || !strings.Contains(issues[0].Message, msg) {
				t.Errorf("issues %v, want one at %s", issues, c.want)
			}
		})
	}
	// At the limit it is accepted: metadata is level 2, so 127 objects fit.
	d := budgetDefinition(Schema{"type": "object"})
	d.Metadata = deep("a", MaxDefinitionNesting-1, 1)
	if issues := errorsOf(Validate(d)); len(issues) > 0 {
		t.Errorf("metadata at the limit: %v", issues)
	}
}

// CheckSchemaBudget accepts real schemas, nil ones included.
func TestCheckSchemaBudgetSmall(t *testing.T) {
	if issues := CheckSchemaBudget(nil, nil); issues != nil {
		t.Errorf("nil schemas: %v", issues)
	}
	in := Schema{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	if issues := CheckSchemaBudget(in, Schema{}); issues != nil {
		t.Errorf("a small schema: %v", issues)
	}
}

// Checking a schema within the budgets allocates next to nothing, however
// many objects it holds: the walk sorts no keys and builds no path unless it
// finds a value over a budget (a large import spent most of its validation
// sorting keys). A schema over a budget is still reported at the same path
// (TestSchemaNestingPathIsStable).
func TestCheckSchemaBudgetAllocations(t *testing.T) {
	props := map[string]any{}
	for i := range 200 {
		props["p"+strconv.Itoa(i)] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	}
	in := Schema{"type": "object", "properties": props}
	allocs := testing.AllocsPerRun(10, func() {
		if issues := CheckSchemaBudget(in, Schema{}); issues != nil {
			t.Fatalf("a schema within the budgets: %v", issues)
		}
	})
	if allocs > 5 {
		t.Errorf("CheckSchemaBudget of 601 objects: %.0f allocations, want at most 5", allocs)
	}
}

// depthOf is an independent count of v's nesting (objects and arrays, the
// root counting one).
func depthOf(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// plainKeys reports whether every key in v is non-empty and holds no ".", "[" or "]".
func plainKeys(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "" || strings.ContainsAny(k, ".[]") || !plainKeys(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !plainKeys(e) {
				return false
			}
		}
	}
	return true
}

// at follows a path as CheckSchemaBudget writes it ("input.a[2].b").
func at(t *testing.T, root any, path string) any {
	t.Helper()
	cur := root
	for _, seg := range strings.Split(strings.ReplaceAll(path, "[", ".["), ".")[1:] {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, "[") {
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			arr, ok := cur.([]any)
			if err != nil || !ok || i >= len(arr) {
				t.Fatalf("path %s: no item %s", path, seg)
			}
			cur = arr[i]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("path %s: no key %s", path, seg)
		}
		cur = m[seg]
	}
	return cur
}

// FuzzSchemaBudget: for any JSON object as an input schema, the budget
// refuses it exactly when it nests deeper than MaxSchemaNesting (small
// inputs stay within the size budgets), and the path it names leads to a
// container at the first level past the limit.
func FuzzSchemaBudget(f *testing.F) {
	f.Add([]byte(`{"type": "object"}`), 3)
	f.Add([]byte(`{"items": [1, {"a": []}]}`), 70)
	f.Add([]byte(`{"properties": {"a.b": {"x": {}}}}`), 40)
	f.Add([]byte(`{"allOf": [{}, {"not": {"enum": [[[]]]}}]}`), 62)
	f.Fuzz(func(t *testing.T, data []byte, wrap int) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		inner, ok := v.(map[string]any)
		if !ok || wrap < 0 || wrap > 200 {
			return
		}
		for range wrap {
			inner = map[string]any{"items": inner}
		}
		issues := CheckSchemaBudget(inner, nil)
		deep := depthOf(inner) > MaxSchemaNesting
		if deep != (len(issues) > 0) {
			t.Fatalf("depth %d, issues %v", depthOf(inner), issues)
		}
		if !deep {
			return
		}
		if issues[0].Path == "" || !strings.HasPrefix(issues[0].Path, "input") || issues[0].Message != nestingMessage {
			t.Fatalf("issue %v", issues[0])
		}
		if plainKeys(inner) { // a key holding the path's separators cannot be followed back
			got := at(t, map[string]any(inner), issues[0].Path)
			if d := depthOf(got); d == 0 {
				t.Fatalf("the path %s leads to a scalar", issues[0].Path)
			}
			levels := strings.Count(issues[0].Path, ".") + strings.Count(issues[0].Path, "[")
			if levels+1 != MaxSchemaNesting+1 {
				t.Fatalf("the path %s is at level %d, want %d", issues[0].Path, levels+1, MaxSchemaNesting+1)
			}
		}
	})
}
