package invoke_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/caphub/caphub/invoke"
)

// TestApplyDefaultsThroughRefs: defaults are found through local $refs
// (an imported OpenAPI schema keeps its shared components under $defs),
// in nested objects and along chains of $refs, and a default written
// beside a $ref wins over the target's.
func TestApplyDefaultsThroughRefs(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal([]byte(`{
		"type": "object",
		"properties": {
			"page": {"$ref": "#/$defs/Page"},
			"size": {"$ref": "#/$defs/Size", "default": 50},
			"filter": {"$ref": "#/$defs/Filter"},
			"plain": {"type": "string", "default": "p"}
		},
		"$defs": {
			"Page": {"$ref": "#/$defs/PageNumber"},
			"PageNumber": {"type": "integer", "default": 1},
			"Size": {"type": "integer", "default": 20},
			"Filter": {"$ref": "#/$defs/FilterBase", "properties": {"state": {"type": "string", "default": "open"}}},
			"FilterBase": {"type": "object", "properties": {"sort": {"$ref": "#/$defs/Sort"}}},
			"Sort": {"enum": ["asc", "desc"], "default": "asc"}
		}}`), &schema); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"filter": map[string]any{}}
	invoke.ApplyDefaults(schema, in)
	want := map[string]any{"page": 1.0, "size": 50.0, "plain": "p", "filter": map[string]any{"state": "open", "sort": "asc"}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("ApplyDefaults = %v, want %v", in, want)
	}
	// A loop of $refs ends.
	loop := map[string]any{"$ref": "#/$defs/A", "$defs": map[string]any{"A": map[string]any{"$ref": "#/$defs/A"}}}
	invoke.ApplyDefaults(loop, map[string]any{})
}
