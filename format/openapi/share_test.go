package openapi

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// TestComponentsShared: the definitions of one import share the
// components under their $defs instead of holding a copy each (Microsoft
// Graph held 350 MB of copies), in canonical form, so that the registry's
// workers, registering them at once, only read them (under -race, a
// write to a shared component is reported here) and leave them as they
// were.
func TestComponentsShared(t *testing.T) {
	var paths []string
	const ops = 40 // over 32, so that the registry prepares them on several goroutines
	for i := range ops {
		paths = append(paths, fmt.Sprintf(`"/pets%d": {"get": {"operationId": "listPets%d", "responses": {"200": {"description": "ok",
			"content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}}}`, i, i))
	}
	spec := `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.0.0"}, "servers": [{"url": "https://pets.example.com"}],
		"paths": {` + strings.Join(paths, ",") + `},
		"components": {"schemas": {
			"Pet": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer", "maximum": 1e6}, "weight": {"type": "number", "default": 2.5}, "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}}},
			"Tag": {"type": "object", "properties": {"name": {"type": "string", "enum": ["a", "b"]}, "rank": {"type": "integer", "default": 3}}}}}}`
	res := importBytes(t, "pets.json", []byte(spec), Options{})
	if len(res.Definitions) != ops {
		t.Fatalf("%d definitions, want %d", len(res.Definitions), ops)
	}
	pet := func(d *capability.Definition) map[string]any {
		defs, _ := d.Output["$defs"].(map[string]any)
		p, _ := defs["Pet"].(map[string]any)
		if p == nil {
			t.Fatalf("%s: no $defs.Pet in the output %v", d.Name, d.Output)
		}
		return p
	}
	first := pet(&res.Definitions[0])
	for i := range res.Definitions[1:] {
		if p := pet(&res.Definitions[i+1]); reflect.ValueOf(p).UnsafePointer() != reflect.ValueOf(first).UnsafePointer() {
			t.Fatalf("%s holds a copy of the component Pet, not the one the import shares", res.Definitions[i+1].Name)
		}
	}
	before := capability.CloneValue(first)
	if got := capability.Normalize(capability.CloneValue(first)); !reflect.DeepEqual(got, before) {
		t.Errorf("the shared component is not in canonical form:\n%v\nnormalised:\n%v", before, got)
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
	out, err := svc.Import(t.Context(), res.Definitions, nil)
	if err != nil || len(out.Failures) > 0 || len(out.Results) != ops {
		t.Fatalf("register: %v, %d registered, failures %v", err, len(out.Results), out.Failures)
	}
	if !reflect.DeepEqual(first, before) {
		t.Errorf("registering changed the shared component:\n%v\nnow:\n%v", before, first)
	}
}
