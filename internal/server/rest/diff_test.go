package rest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

// TestDiffRoute: GET …/{domain}/{name}/diff?from=&to= answers capability.Diff
// of two registered versions (the classification the CLI prints), and
// problems naming what to fix for a missing, malformed or unknown version.
func TestDiffRoute(t *testing.T) {
	srv, _ := newTestServer(t)
	addRequired := []string{`"required": ["path"]`, `"required": ["path", "config"]`, `"path": {"type": "string"}`, `"path": {"type": "string"}, "config": {"type": "string", "description": "the config file"}`}
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.0.0", "1.0")), 201, "register 1.0.0")
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.1.0", "1.1", "Run linting checks", "Run linting checks on a tree")), 201, "register 1.1.0")
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("2.0.0", "2.0", addRequired...)), 201, "register 2.0.0")

	read := func(path string) diffResponse {
		t.Helper()
		a := call(t, srv, "GET", path, "", nil)
		expect(t, a, 200, path)
		var d diffResponse
		if err := json.Unmarshal(a.body, &d); err != nil || d.DiffReport == nil {
			t.Fatalf("%s: %v %s", path, err, a.body)
		}
		return d
	}
	d := read("/registry/capabilities/code/lint/diff?from=1.0.0&to=2")
	if d.Capability != "ossa:code/lint" || d.Old != "1.0.0" || d.New != "2.0.0" || d.Required != capability.BumpMajor || d.Declared != capability.BumpMajor || !d.Satisfied {
		t.Errorf("1.0.0 → 2: %+v", d)
	}
	var breaking *capability.Change
	for i, c := range d.Changes {
		if c.Path == "input.properties.config" && c.Bump == capability.BumpMajor {
			breaking = &d.Changes[i]
		}
	}
	if breaking == nil || breaking.Description == "" || breaking.Kind == "" {
		t.Errorf("the new required field is not a major change with a reason: %+v", d.Changes)
	}
	d = read("/registry/capabilities/code/lint/diff?from=1.0&to=1.1.0")
	if d.Required != capability.BumpPatch || len(d.Changes) != 1 || d.Changes[0].Bump != capability.BumpPatch {
		t.Errorf("1.0 → 1.1.0 (a description): %+v", d)
	}
	// Backwards is answered, and says what is wrong.
	d = read("/registry/capabilities/code/lint/diff?from=2.0.0&to=1.0.0")
	if d.Satisfied || d.Problem == "" {
		t.Errorf("2.0.0 → 1.0.0: %+v", d)
	}

	for path, want := range map[string][]string{
		"/registry/capabilities/code/lint/diff?from=1.0.0":             {"400", "to="},
		"/registry/capabilities/code/lint/diff?from=one&to=2.0.0":      {"400", `"one"`},
		"/registry/capabilities/code/lint@1.0/diff?from=1.0&to=2.0":    {"400", "from= and to="},
		"/registry/capabilities/code/lint/diff?from=3.0.0&to=2.0.0":    {"404", "lint@3.0.0"},
		"/registry/capabilities/code/lint/diff?from=1.0.0&to=9":        {"404", "9"},
		"/registry/capabilities/code/missing/diff?from=1.0.0&to=2.0.0": {"404", "missing"},
	} {
		a := call(t, srv, "GET", path, "", nil)
		if got := a.json(t); strconv.Itoa(a.status) != want[0] || !strings.Contains(got["detail"].(string), want[1]) {
			t.Errorf("%s: %d %s, want %s naming %s", path, a.status, a.body, want[0], want[1])
		}
	}
	// The OpenAPI document describes it.
	a := call(t, srv, "GET", "/openapi.json", "", nil)
	if !strings.Contains(string(a.body), `"/registry/capabilities/{domain}/{name}/diff"`) {
		t.Error("openapi.json lacks the diff route")
	}
}
