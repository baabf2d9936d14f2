package capability

import (
	"strings"
	"testing"
)

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

// TestCompileSchemaSharesPatterns checks that different schemas with the
// same pattern share its compiled regular expression, and that a bad
// pattern is still refused, from the cache too.
func TestCompileSchemaSharesPatterns(t *testing.T) {
	a, issues := CompileSchema(Schema{"type": "string", "pattern": "^shared-[0-9]+$"})
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	b, issues := CompileSchema(Schema{"type": "string", "minLength": 1.0, "pattern": "^shared-[0-9]+$"})
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	if a.Pattern == nil || a.Pattern != b.Pattern {
		t.Errorf("the pattern was compiled twice: %p and %p", a.Pattern, b.Pattern)
	}
	if b.Validate("shared-12") != nil || b.Validate("shared-x") == nil {
		t.Error("the shared pattern does not match as it should")
	}
	for i := range 2 {
		if _, issues := CompileSchema(Schema{"type": "string", "minLength": float64(i), "pattern": "^(unclosed"}); len(issues) == 0 || !strings.Contains(issues[0].Message, "regex") {
			t.Errorf("a bad pattern (time %d): %v, want it refused as not a regex", i+1, issues)
		}
	}
}
