package capability

import "testing"

// TestCompileSchemaCached checks that equal schemas share one compilation,
// and that an invalid schema reports the same issues from the cache.
func TestCompileSchemaCached(t *testing.T) {
	a := Schema{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "minLength": 1.0}}}
	b := Schema{"properties": map[string]any{"q": map[string]any{"minLength": 1.0, "type": "string"}}, "type": "object"}
	sa, issues := CompileSchema(a)
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	sb, _ := CompileSchema(b)
	if sa != sb {
		t.Error("equal schemas were compiled twice")
	}
	if err := sb.Validate(map[string]any{"q": ""}); err == nil {
		t.Error("the cached schema accepts an empty q")
	}
	other, _ := CompileSchema(Schema{"type": "object", "required": []any{"q"}})
	if other == sa {
		t.Error("a different schema got the cached compilation")
	}
	bad := Schema{"type": "object", "properties": map[string]any{"q": map[string]any{"type": 12.0}}}
	_, first := CompileSchema(bad)
	_, again := CompileSchema(bad)
	if len(first) == 0 || len(again) != len(first) || again[0] != first[0] {
		t.Errorf("invalid schema: issues %v, then from the cache %v", first, again)
	}
}
