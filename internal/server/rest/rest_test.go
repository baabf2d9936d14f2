package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

const memoryYAML = "../../../../shared/corpus/ossa-v0.2.9/capabilities/memory.yaml"

// clock is a settable clock for moving past sunset dates.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func newTestServer(t *testing.T) (*httptest.Server, *clock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	svc := registry.NewService(st, registry.WithClock(c.now))
	srv := httptest.NewServer(New(svc, nil))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return srv, c
}

type answer struct {
	status int
	body   []byte
	header http.Header
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, a.body)
	}
	return m
}

func call(t *testing.T, srv *httptest.Server, method, path, contentType string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b, resp.Header}
}

func expect(t *testing.T, a answer, status int, what string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, a.status, status, a.body)
	}
	if status >= 400 && a.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s: error without a problem document (Content-Type %q)", what, a.header.Get("Content-Type"))
	}
}

func corpus(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(memoryYAML)
	if err != nil {
		t.Skipf("OSSA corpus not found at %s (clone with ../shared beside the project): %v", memoryYAML, err)
	}
	return b
}

func TestRegistryAPIWithCorpus(t *testing.T) {
	srv, _ := newTestServer(t)
	body := corpus(t)

	a := call(t, srv, "POST", "/registry/capabilities", "application/yaml", body)
	expect(t, a, 201, "register memory.yaml")
	items := a.json(t)["items"].([]any)
	if len(items) != 4 || items[1].(map[string]any)["uri"] != "ossa:memory/kg_query@1.0" || items[1].(map[string]any)["created"] != true {
		t.Fatalf("register answer %s", a.body)
	}
	a = call(t, srv, "POST", "/registry/capabilities", "application/yaml", body)
	expect(t, a, 200, "identical re-register")
	if a.json(t)["items"].([]any)[0].(map[string]any)["created"] != false {
		t.Errorf("re-register reported created: %s", a.body)
	}

	a = call(t, srv, "GET", "/registry/capabilities", "", nil)
	expect(t, a, 200, "list")
	if _, counted := a.json(t)["total"]; counted || len(a.json(t)["items"].([]any)) != 4 {
		t.Errorf("list without total=true: %s; want 4 items and no total", a.body)
	}
	a = call(t, srv, "GET", "/registry/capabilities?total=true", "", nil)
	expect(t, a, 200, "list")
	if a.json(t)["total"] != float64(4) {
		t.Errorf("list total: %s", a.body)
	}
	a = call(t, srv, "GET", "/registry/capabilities/memory?total=true", "", nil)
	expect(t, a, 200, "list domain")
	if a.json(t)["total"] != float64(3) {
		t.Errorf("memory domain total: %s", a.body)
	}
	a = call(t, srv, "GET", "/registry/capabilities/memory/kg_query", "", nil)
	expect(t, a, 200, "all versions")
	if a.json(t)["total"] != float64(1) {
		t.Errorf("versions: %s", a.body)
	}
	for _, v := range []string{"1.0", "1", "1.0.0"} {
		a = call(t, srv, "GET", "/registry/capabilities/memory/kg_query@"+v, "", nil)
		expect(t, a, 200, "get @"+v)
		d := a.json(t)
		if d["name"] != "kg_query" || d["version"] != "1.0.0" {
			t.Errorf("get @%s: %s", v, a.body)
		}
		// $refs to the file-level definitions travel with the definition.
		defs := d["output"].(map[string]any)["definitions"].(map[string]any)
		if defs["Entity"] == nil {
			t.Errorf("kg_query lost its Entity definition")
		}
		// Inferred domains and categories were added.
		if len(d["domains"].([]any)) == 0 || len(d["categories"].([]any)) == 0 {
			t.Errorf("no inferred domains/categories: %v %v", d["domains"], d["categories"])
		}
	}
	expect(t, call(t, srv, "GET", "/registry/capabilities/memory/kg_query@2.0", "", nil), 404, "missing version")
	expect(t, call(t, srv, "GET", "/registry/capabilities/memory/nope", "", nil), 404, "missing capability")

	a = call(t, srv, "GET", "/registry/resolve?uri=ossa:ml/predict@1", "", nil)
	expect(t, a, 200, "resolve @1")
	if a.json(t)["uri"] != "ossa:ml/predict@1.0" {
		t.Errorf("resolve: %s", a.body)
	}

	a = call(t, srv, "POST", "/registry/negotiate", "application/json",
		[]byte(`{"type":"capability_request","capability":"ossa:memory/semantic_search","preferred_versions":["2.0","1.0"],"minimum_version":"1.0"}`))
	expect(t, a, 200, "negotiate")
	if m := a.json(t); m["status"] != "available" || m["capability"] != "ossa:memory/semantic_search@1.0" {
		t.Errorf("negotiate: %s", a.body)
	}
	a = call(t, srv, "POST", "/registry/negotiate", "application/json",
		[]byte(`{"type":"capability_request","capability":"ossa:memory/semantic_search","preferred_versions":["2.0"],"minimum_version":"2.0"}`))
	if m := a.json(t); m["status"] != "unavailable" || len(m["available_versions"].([]any)) != 1 {
		t.Errorf("negotiate unavailable: %s", a.body)
	}

	a = call(t, srv, "GET", "/registry/search?q=semantic+search&view=full", "", nil)
	expect(t, a, 200, "search")
	res := a.json(t)["items"].([]any)
	if len(res) == 0 || res[0].(map[string]any)["name"] != "semantic_search" {
		t.Errorf("search 'semantic search' did not rank semantic_search first: %s", a.body)
	}
	a = call(t, srv, "GET", "/registry/search?q=predictions&domain=memory&view=full", "", nil)
	for _, it := range a.json(t)["items"].([]any) {
		if it.(map[string]any)["domain"] != "memory" {
			t.Errorf("search filter let through %v", it.(map[string]any)["uri"])
		}
	}

	a = call(t, srv, "GET", "/registry/index.yaml", "", nil)
	expect(t, a, 200, "index")
	f, err := ossa.Read("index.yaml", a.body)
	if err != nil || f.Kind != ossa.KindIndex || len(f.Index.Capabilities) != 4 || len(f.Index.Domains) != 2 {
		t.Errorf("index.yaml: %v\n%s", err, a.body)
	}

	a = call(t, srv, "GET", "/v1/capabilities?total=true", "", nil)
	expect(t, a, 200, "everruns list")
	m := a.json(t)
	if m["total"] != float64(4) || m["items"].([]any)[0].(map[string]any)["status"] != "available" {
		t.Errorf("everruns list: %s", a.body)
	}
	a = call(t, srv, "GET", "/v1/capabilities/predict", "", nil)
	expect(t, a, 200, "everruns get by name")
	if a.json(t)["id"] != "ossa:ml/predict@1.0" {
		t.Errorf("everruns get: %s", a.body)
	}
	expect(t, call(t, srv, "GET", "/v1/capabilities/ossa:ml/predict@1.0", "", nil), 200, "everruns get by URI")
}

const lintV1 = `{"capability": {
  "uri": "ossa:code/lint@1.0", "name": "lint", "domain": "code", "version": "1.0.0",
  "description": "Run linting checks", "stability": "stable",
  "input": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
  "output": {"type": "object", "properties": {"findings": {"type": "array"}}},
  "errors": [{"code": "LINT_FAILED", "description": "the linter failed", "retryable": false}],
  "bindings": {"cli": {"command": "eslint --format json {path}", "parser": "json"}}}}`

func lint(version, uriVersion string, repl ...string) []byte {
	s := strings.NewReplacer(`"version": "1.0.0"`, `"version": "`+version+`"`, "lint@1.0", "lint@"+uriVersion).Replace(lintV1)
	if len(repl) > 0 {
		s = strings.NewReplacer(repl...).Replace(s)
	}
	return []byte(s)
}

func TestVersioningDeprecationAndSunset(t *testing.T) {
	srv, clk := newTestServer(t)
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.0.0", "1.0")), 201, "register 1.0.0")

	// A minor bump that adds a required field is refused, with the change and the bump it needs.
	addRequired := []string{`"required": ["path"]`, `"required": ["path", "config"]`, `"path": {"type": "string"}`, `"path": {"type": "string"}, "config": {"type": "string"}`}
	a := call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.1.0", "1.1", addRequired...))
	expect(t, a, 422, "breaking change as minor")
	p := a.json(t)
	if p["required_bump"] != "major" || p["declared_bump"] != "minor" || !strings.Contains(p["detail"].(string), "2.0.0") {
		t.Errorf("problem: %s", a.body)
	}
	found := false
	for _, c := range p["changes"].([]any) {
		if c.(map[string]any)["path"] == "input.properties.config" {
			found = true
		}
	}
	if !found {
		t.Errorf("the refusal does not list the new required field: %s", a.body)
	}
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("2.0.0", "2.0", addRequired...)), 201, "the same as 2.0.0")

	// The same version with other content is a conflict.
	a = call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.0.0", "1.0", "Run linting checks", "Lint the code"))
	expect(t, a, 409, "conflicting re-register")

	// An invalid definition: 422 with positioned issues.
	a = call(t, srv, "POST", "/registry/capabilities", "application/json", lint("1.0.1", "1.0", "{path}", "{file}"))
	expect(t, a, 422, "invalid definition")
	issues := a.json(t)["issues"].([]any)
	if len(issues) == 0 || !strings.Contains(string(a.body), "capability.bindings.cli.command") && !strings.Contains(string(a.body), "bindings.cli.command") {
		t.Errorf("issues: %s", a.body)
	}
	// Malformed bodies: 400.
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", []byte(`{"capability": `)), 400, "truncated JSON")
	expect(t, call(t, srv, "POST", "/registry/capabilities", "text/plain", []byte(`x`)), 400, "wrong content type")

	// Deprecation: a sunset inside the six-month grace period is refused with the earliest date.
	dep := func(body string) answer {
		return call(t, srv, "POST", "/registry/capabilities/code/lint@1.0/deprecate", "application/json", []byte(body))
	}
	a = dep(`{"deprecated_by": "ossa:code/lint@2.0", "sunset_date": "2027-01-01", "migration_guide": "pass config"}`)
	expect(t, a, 400, "sunset too early")
	if !strings.Contains(string(a.body), "earliest allowed date is 2027-05-21") {
		t.Errorf("no earliest date: %s", a.body)
	}
	expect(t, dep(`{"deprecated_by": "ossa:code/nope@1.0"}`), 400, "replacement that does not resolve")
	a = dep(`{"deprecated_by": "ossa:code/lint@2.0", "sunset_date": "2027-06-01", "migration_guide": "pass config"}`)
	expect(t, a, 200, "deprecate")
	if !strings.Contains(string(a.body), "ossa:code/lint@1.0.0") || !strings.Contains(string(a.body), "grace_minor_versions") {
		t.Errorf("deprecate answer: %s", a.body)
	}

	// During the grace period it resolves with a warning carrying the replacement and the guide.
	a = call(t, srv, "GET", "/registry/resolve?uri=ossa:code/lint@1.0", "", nil)
	expect(t, a, 200, "resolve deprecated")
	w := a.json(t)["warnings"].([]any)[0].(map[string]any)
	if w["deprecated_by"] != "ossa:code/lint@2.0" || w["migration_guide"] != "pass config" {
		t.Errorf("warning: %s", a.body)
	}

	// After the sunset date, but with fewer than two newer minor versions, it still resolves.
	clk.set(time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC))
	expect(t, call(t, srv, "GET", "/registry/resolve?uri=ossa:code/lint@1.0", "", nil), 200, "past sunset, one newer minor")
	// A second newer minor ends the grace period: 410 naming the replacement.
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", lint("2.1.0", "2.1", addRequired...)), 201, "register 2.1.0")
	a = call(t, srv, "GET", "/registry/resolve?uri=ossa:code/lint@1.0", "", nil)
	expect(t, a, 410, "sunset")
	if p := a.json(t); p["deprecated_by"] != "ossa:code/lint@2.0" || !strings.Contains(p["detail"].(string), "pass config") {
		t.Errorf("sunset problem: %s", a.body)
	}
	// The versionless URI resolves to the highest stable version.
	a = call(t, srv, "GET", "/registry/resolve?uri=ossa:code/lint", "", nil)
	expect(t, a, 200, "resolve latest")
	if a.json(t)["version"] != "2.1.0" {
		t.Errorf("latest: %s", a.body)
	}
}

func TestOpenAPIAndHealth(t *testing.T) {
	srv, _ := newTestServer(t)
	a := call(t, srv, "GET", "/openapi.json", "", nil)
	expect(t, a, 200, "openapi")
	doc := a.json(t)
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/registry/capabilities", "/registry/capabilities/{domain}/{name}", "/registry/search", "/registry/negotiate", "/v1/capabilities/{id}"} {
		if paths[p] == nil {
			t.Errorf("openapi lacks %s", p)
		}
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi version %v", doc["openapi"])
	}
	expect(t, call(t, srv, "GET", "/healthz", "", nil), 200, "healthz")
	expect(t, call(t, srv, "GET", "/nope", "", nil), 404, "unknown path")
	expect(t, call(t, srv, "GET", "/registry/capabilities?limit=x", "", nil), 400, "bad limit")
}
