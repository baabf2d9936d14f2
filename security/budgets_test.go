package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Budgets on every input: a definition, a schema or an imported document
// that nests too deep or expands too far is refused with a clear error
// before any work proportional to its expansion is done, and a document
// with a key written twice is refused instead of silently keeping one.

// nested wraps inner in n objects {"key": …}, as JSON text.
func nested(key string, n int, inner string) string {
	return strings.Repeat(`{"`+key+`":`, n) + inner + strings.Repeat("}", n)
}

// capabilityBody is a registration body for one otherwise valid definition
// with the given input schema and extra members (JSON text, "" for none).
func capabilityBody(name, input, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"capability": {"uri": "ossa:budget/` + name + `@1.0", "name": "` + name + `", "domain": "budget", "version": "1.0.0",
		"description": "a budget test", "input": ` + input + `, "output": {},
		"bindings": {"http": {"method": "GET", "url": "https://example.com/x"}}` + extra + `}}`
}

// problemDoc is the part of a problem document the tests read.
type problemDoc struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Issues []struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"issues"`
}

func readProblem(t *testing.T, body string) problemDoc {
	t.Helper()
	var p problemDoc
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem document: %v\n%.500s", err, body)
	}
	return p
}

// issueAt returns the message of the issue at path, "" when none.
func (p problemDoc) issueAt(path string) string {
	for _, i := range p.Issues {
		if i.Path == path {
			return i.Message
		}
	}
	return ""
}

// An input schema {"items": {"items": …}} 2,000 levels deep (18 KB) kept
// the schema compiler busy for minutes at most of a gigabyte. It must be
// answered with a 422 that names the path where the nesting passes the
// limit, without compiling anything (the client's timeout is the guard).
func TestDeepSchemaRefusedOverREST(t *testing.T) {
	s := newSite(t)
	s.serve()
	body := capabilityBody("deep", nested("items", 2000, "{}"), "")
	code, resp, _ := s.do(req{method: "POST", path: "/registry/capabilities", body: body})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a schema 2,000 levels deep: status %d, want 422\n%.1000s", code, resp)
	}
	p := readProblem(t, resp)
	path := "input" + strings.Repeat(".items", 64)
	if msg := p.issueAt(path); !strings.Contains(msg, "schema nesting exceeds 64 levels") {
		t.Errorf("no issue at %s saying the schema nests too deep; detail: %.600s", path, p.Detail)
	}
	// The definition was not registered.
	if code, resp, _ := s.do(req{method: "GET", path: "/registry/capabilities/budget/deep"}); code != http.StatusNotFound {
		t.Errorf("after the refusal: GET the capability: %d %.300s", code, resp)
	}
}

// A definition whose metadata nests 1,100 levels deep was a 500 on SQLite
// (json_valid refuses it) and a 201 on PostgreSQL. Both stores must give
// the same 422 naming the path, before either is touched.
func TestDeepDefinitionSameOnBothStores(t *testing.T) {
	body := capabilityBody("deepmeta", `{"type": "object"}`, `"metadata": `+nested("a", 1100, "1"))
	path := "metadata" + strings.Repeat(".a", 127)
	check := func(t *testing.T, s *site) {
		code, resp, _ := s.do(req{method: "POST", path: "/registry/capabilities", body: body})
		if code != http.StatusUnprocessableEntity {
			t.Fatalf("a definition 1,100 levels deep: status %d, want 422\n%.1000s", code, resp)
		}
		p := readProblem(t, resp)
		if msg := p.issueAt(path); !strings.Contains(msg, "definition nesting exceeds 128 levels") {
			t.Errorf("no issue at %s saying the definition nests too deep; detail: %.600s", path, p.Detail)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		s := newSite(t)
		s.serve()
		check(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s := newSite(t)
		s.serve("--db", postgresSchema(t))
		check(t, s)
	})
}

// 22 component schemas of 8 $refs each to the next expand into 8^22 nodes:
// inlined, the expansion ran to gigabytes. Shared components are now kept
// as $defs, so the bomb imports as the 23 schemas it is, its stored
// definition stays small, and a changed version's diff (which looks through
// the $refs) finishes and names the deep change (the harness's timeout is
// the guard against an expansion).
func bombSpec(version, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "openapi: 3.0.0\ninfo: {title: Bomb, version: %s}\nservers: [{url: 'https://bomb.example'}]\n", version)
	b.WriteString("paths:\n  /bomb:\n    get:\n      operationId: bomb\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}\n")
	b.WriteString("components:\n  schemas:\n")
	for i := 0; i < 22; i++ {
		fmt.Fprintf(&b, "    S%d:\n      type: object\n      properties:\n", i)
		for j := 0; j < 8; j++ {
			fmt.Fprintf(&b, "        f%d: {$ref: '#/components/schemas/S%d'}\n", j, i+1)
		}
	}
	fmt.Fprintf(&b, "    S22: {type: %s}\n", leaf)
	return b.String()
}

func TestOpenAPIRefBombImport(t *testing.T) {
	s := newSite(t)
	file := filepath.Join(s.dir, "bomb.yaml")
	if err := os.WriteFile(file, []byte(bombSpec("1.0.0", "string")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := s.caphub("import", "openapi", file)
	if code != 0 || !strings.Contains(out, "1 imported") {
		t.Fatalf("the $ref bomb as $defs: exit %d\n%.2000s%.2000s", code, out, errOut)
	}
	out, errOut, code = s.caphub("capability", "show", "ossa:bomb/bomb", "--format", "json")
	if code != 0 || len(out) > 64<<10 || !strings.Contains(out, `"$ref": "#/$defs/S1"`) {
		t.Fatalf("stored bomb: exit %d, %d bytes; want its components as $defs, under 64 KiB\n%.1000s%s", code, len(out), out, errOut)
	}
	changed := filepath.Join(s.dir, "bomb2.yaml")
	if err := os.WriteFile(changed, []byte(bombSpec("1.0.1", "integer")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ = s.caphub("import", "openapi", changed)
	if all := out + errOut; !strings.Contains(all, "need a major bump") || !strings.Contains(all, "type changed from string to integer") {
		t.Errorf("the changed bomb's diff does not name the deep change:\n%.2000s", all)
	}
}

// A key written twice was silently resolved to its last value (a manifest
// with "package" twice registered under the second). Every reader refuses
// it and names the key and its line.
func TestDuplicateKeysRefused(t *testing.T) {
	write := func(s *site, name, text string) string {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("agentos", func(t *testing.T) {
		s := newSite(t)
		manifest := write(s, "capabilities.json", `{
	"manifestVersion": "1.0",
	"package": "com.example.first",
	"package": "com.example.second",
	"capabilities": [{"id": "ping", "intents": ["ping.run"], "description": "Ping", "handler": {"type": "service", "target": "com.example.Ping"}}]
}`)
		out, errOut, code := s.caphub("import", "agentos", manifest)
		all := out + errOut
		if code == 0 || !strings.Contains(all, `key "package" is already defined at line 3`) || !strings.Contains(all, "capabilities.json:4:") {
			t.Errorf("exit %d:\n%s", code, all)
		}
	})

	t.Run("openapi", func(t *testing.T) {
		s := newSite(t)
		spec := write(s, "spec.json", `{
  "openapi": "3.0.0",
  "info": {"title": "Dup", "version": "1.0.0"},
  "servers": [{"url": "https://dup.example"}],
  "paths": {
    "/a": {"get": {"operationId": "first", "operationId": "second", "responses": {"204": {"description": "ok"}}}}
  }
}`)
		out, errOut, code := s.caphub("import", "openapi", spec)
		all := out + errOut
		if code == 0 || !strings.Contains(all, `key "operationId" is already defined at line 6`) || !strings.Contains(all, "paths./a.get.operationId") {
			t.Errorf("exit %d:\n%s", code, all)
		}
	})

	t.Run("rest", func(t *testing.T) {
		s := newSite(t)
		s.serve()
		one := strings.TrimSuffix(strings.TrimPrefix(capabilityBody("one", "{}", ""), `{"capability": `), "}")
		body := `{"capability": ` + one + `, "capability": {"uri": "ossa:budget/two@1.0"}}`
		code, resp, _ := s.do(req{method: "POST", path: "/registry/capabilities", body: body})
		if code < 400 || code >= 500 || !strings.Contains(resp, `key \"capability\" is already defined at line 1`) {
			t.Errorf("a body with \"capability\" twice: %d %.800s", code, resp)
		}
	})
}
