package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
)

func TestInvokeLocalExitCodes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")
	code, out, errOut := caphub(t, "invoke", "ossa:everruns/add@1.0", "--input", `{"a": 2, "b": 3.5}`, "--db", db)
	var res struct {
		Output  map[string]any
		Binding string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Output["result"] != 5.5 || res.Binding != "native" {
		t.Fatalf("add: exit %d %v\n%s%s", code, err, out, errOut)
	}
	cases := []struct {
		uri, input string
		code       int
		contains   string
	}{
		{"ossa:everruns/divide@1.0", `{"a": 1, "b": 0}`, invoke.ExitDeclared, "DIVISION_BY_ZERO"},
		{"ossa:everruns/nope@1.0", `{}`, invoke.ExitNotFound, "NOT_FOUND"},
		{"ossa:everruns/add@1.0", `{"a": "two", "b": 1}`, invoke.ExitInvalid, "INVALID_INPUT"},
	}
	for _, c := range cases {
		code, _, errOut := caphub(t, "invoke", c.uri, "--input", c.input, "--db", db)
		if code != c.code || !strings.Contains(errOut, c.contains) {
			t.Errorf("%s %s: exit %d, want %d with %s\n%s", c.uri, c.input, code, c.code, c.contains, errOut)
		}
	}
	if code, _, _ := caphub(t, "invoke", "ossa:everruns/add@1.0", "--input", `not json`, "--db", db); code != exitUsage {
		t.Errorf("bad --input: exit %d", code)
	}
}

// Through a running server: discover server-everything there, then invoke
// its echo tool and a built-in over POST /v1/invoke.
func TestInvokeThroughServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the caphub binary")
	}
	node := testpeers.Node(t)
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything")
	// A server saved over the API runs only a program the operator allows.
	p := startServe(t, filepath.Join(t.TempDir(), "caphub.db"), "--allow-command", node)
	code, out, errOut := caphub(t, "discover", "mcp", "everything", "--command", node, "--arg", filepath.Join(pkg, "dist", "index.js"), "--arg", "stdio", "--server", p.url)
	if code != 0 || !strings.Contains(out, "new        mcp:everything/echo@1.0") {
		t.Fatalf("discover through the server: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "invoke", "mcp:everything/echo@1.0", "--input", `{"message": "hi"}`, "--server", p.url)
	if code != 0 || !strings.Contains(out, `"text": "Echo: hi"`) || !strings.Contains(out, `"binding": "mcp"`) {
		t.Errorf("echo: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = caphub(t, "invoke", "ossa:everruns/get_forecast@1.0", "--input", `{"city": "Oslo", "days": 9}`, "--server", p.url)
	if code != 0 || !strings.Contains(out, `"clamped": true`) {
		t.Errorf("forecast: exit %d\n%s", code, out)
	}
	code, _, errOut = caphub(t, "invoke", "ossa:everruns/divide@1.0", "--input", `{"a": 1, "b": 0}`, "--server", p.url)
	if code != invoke.ExitDeclared || !strings.Contains(errOut, "DIVISION_BY_ZERO") {
		t.Errorf("divide by zero through the server: exit %d\n%s", code, errOut)
	}
	code, out, _ = caphub(t, "server", "list", "--server", p.url)
	if code != 0 || !strings.Contains(out, "everything") {
		t.Errorf("server list: exit %d\n%s", code, out)
	}
}
