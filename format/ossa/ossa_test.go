package ossa

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

const corpus = "../../../shared/corpus/ossa-v0.2.9/capabilities"

func corpusFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(corpus, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("OSSA corpus not found at %s (clone the project with ../shared beside it): %v", p, err)
	}
	return p
}

func mustRead(t *testing.T, path string) *File {
	t.Helper()
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", path, err)
	}
	return f
}

func errorsOf(issues []capability.Issue) []capability.Issue {
	var out []capability.Issue
	for _, i := range issues {
		if i.Severity == capability.SeverityError {
			out = append(out, i)
		}
	}
	return out
}

// The real memory.yaml: four definitions, valid (warnings allowed), whose
// $refs to the file-level definitions resolve.
func TestCorpusMemory(t *testing.T) {
	f := mustRead(t, corpusFile(t, "memory.yaml"))
	if f.Kind != KindCapabilities || len(f.Entries) != 4 {
		t.Fatalf("kind %s with %d entries, want capabilities with 4", f.Kind, len(f.Entries))
	}
	issues := f.Validate()
	if errs := errorsOf(issues); len(errs) > 0 {
		t.Fatalf("memory.yaml has errors: %v", errs)
	}
	want := []string{"ossa:memory/semantic_search@1.0", "ossa:memory/kg_query@1.0", "ossa:memory/context_fusion@1.0", "ossa:ml/predict@1.0"}
	for i, e := range f.Entries {
		if e.Definition.URI != want[i] {
			t.Errorf("entry %d: uri %s, want %s", i, e.Definition.URI, want[i])
		}
		if e.Path != "capabilities["+string(rune('0'+i))+"]" {
			t.Errorf("entry %d: path %s", i, e.Path)
		}
	}
	kg := f.Entries[1].Definition
	defs, _ := kg.Output["definitions"].(map[string]any)
	if defs["Entity"] == nil || defs["Relation"] == nil {
		t.Fatalf("kg_query output did not get the file-level definitions it references: %v", kg.Output)
	}
	if f.Entries[0].Definition.Output["definitions"] != nil {
		t.Errorf("semantic_search references no definitions but got some")
	}
	sch, issues2 := capability.CompileSchema(kg.Output)
	if len(issues2) > 0 {
		t.Fatalf("compile kg_query output: %v", issues2)
	}
	good := map[string]any{"entities": []any{map[string]any{"id": "e1", "observations": []any{"x"}}}}
	bad := map[string]any{"entities": []any{map[string]any{"id": int64(5)}}}
	if err := sch.Validate(good); err != nil {
		t.Errorf("valid instance rejected: %v", err)
	}
	if err := sch.Validate(bad); err == nil {
		t.Errorf("instance with a numeric Entity.id accepted: the $ref was not followed")
	}
	// The grpc binding's unmodelled `port` is kept and reported.
	cf := f.Entries[2].Definition
	if cf.Bindings.GRPC == nil || cf.Bindings.GRPC.Extra["port"] != int64(50051) {
		t.Errorf("grpc.port not preserved: %+v", cf.Bindings.GRPC)
	}
	found := false
	for _, i := range issues {
		if i.Path == "capabilities[2].bindings.grpc.port" {
			found = true
			if i.Line != 178 || i.Column != 9 || i.Severity != capability.SeverityWarning {
				t.Errorf("port issue at %d:%d %s, want 178:9 warning", i.Line, i.Column, i.Severity)
			}
		}
	}
	if !found {
		t.Errorf("no warning for the unknown grpc.port field: %v", issues)
	}
}

func TestCorpusIndex(t *testing.T) {
	f := mustRead(t, corpusFile(t, "index.yaml"))
	if f.Kind != KindIndex || f.Index == nil {
		t.Fatalf("kind %s, want index", f.Kind)
	}
	if len(f.Index.Domains) != 4 || f.Index.Domains[0].Name != "memory" || f.Index.Domains[3].Name != "code" {
		t.Errorf("domains %+v", f.Index.Domains)
	}
	var uris []string
	for _, e := range f.Index.Capabilities {
		uris = append(uris, e.URI)
	}
	want := "ossa:memory/semantic_search@1.0 ossa:memory/kg_query@1.0 ossa:memory/context_fusion@1.0 ossa:ml/predict@1.0 ossa:security/scan_vulnerabilities@1.0 ossa:code/lint@2.0 ossa:code/test@1.0"
	if strings.Join(uris, " ") != want {
		t.Errorf("uris %v", uris)
	}
	if errs := errorsOf(f.Validate()); len(errs) > 0 {
		t.Errorf("index has errors: %v", errs)
	}
}

func TestRegistryLayout(t *testing.T) {
	f := mustRead(t, "testdata/registry.yaml")
	if f.Kind != KindIndex || len(f.Index.Capabilities) != 3 || len(f.Index.Domains) != 2 {
		t.Fatalf("got %s %+v", f.Kind, f.Index)
	}
	e := f.Index.Capabilities[1]
	if e.Stability != "deprecated" || e.DeprecatedBy != "ossa:security/scan_vulnerabilities@1.0" || e.SunsetDate != "2025-06-01" {
		t.Errorf("entry 1: %+v", e)
	}
	if f.Index.Capabilities[2].BreakingChanges[0] != "Changed output format from flat to nested" {
		t.Errorf("breaking_changes lost")
	}
	if errs := errorsOf(f.Validate()); len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
	// Written in the §5.1 layout and read back: the same index.
	var buf bytes.Buffer
	if err := WriteIndex(&buf, f.Index, YAML); err != nil {
		t.Fatal(err)
	}
	g, err := Read("out.yaml", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	g.Index.refs, f.Index.refs = nil, nil
	if !reflect.DeepEqual(f.Index, g.Index) {
		t.Errorf("index round trip differs:\n%+v\n%+v", f.Index, g.Index)
	}
	// A bad entry is an error with its position.
	bad := strings.Replace(string(mustReadBytes(t, "testdata/registry.yaml")), `sunset_date: "2025-06-01"`, `sunset_date: "soon"`, 1)
	h, err := Read("bad.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	errs := errorsOf(h.Validate())
	if len(errs) != 1 || errs[0].Path != "registry.capabilities[1].sunset_date" || errs[0].Line != 19 {
		t.Errorf("want one sunset_date error at line 19, got %v", errs)
	}
}

func mustReadBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSingleDocumentValid(t *testing.T) {
	f := mustRead(t, "testdata/scan.yaml")
	if f.Kind != KindCapability || len(f.Entries) != 1 || f.Entries[0].Path != "capability" {
		t.Fatalf("got %s %d", f.Kind, len(f.Entries))
	}
	issues := f.Validate()
	if errs := errorsOf(issues); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	d := f.Entries[0].Definition
	if d.Extra["x-team"] != "appsec" {
		t.Errorf("extension field lost: %v", d.Extra)
	}
	if d.Bindings.HTTP.BodyTemplate == "" || d.Bindings.CLI.Parser != "json" || d.Bindings.MCP.Mapping["target"] != "path" {
		t.Errorf("bindings not read: %+v", d.Bindings)
	}
}

// Every kind of mistake is found, each with the path and the position of
// the field (or of its parent when the field is missing).
func TestValidationIssuesCarryPositions(t *testing.T) {
	f := mustRead(t, "testdata/broken.yaml")
	issues := f.Validate()
	type want struct {
		path      string
		line, col int
		contains  string
	}
	wants := []want{
		{"capability.uri", 2, 3, "URI version @1.0 differs from version 1.1.0"},
		{"capability.sunset_date", 7, 3, "YYYY-MM-DD"},
		{"capability.stability", 6, 3, "deprecated_by"},
		{"capability.input.properties.target.type", 11, 17, "not a valid JSON Schema"},
		{"capability.errors[0].code", 15, 7, "UPPER_SNAKE"},
		{"capability.errors[1].code", 17, 7, "already declared at errors[0]"},
		{"capability.bindings.cli.command", 21, 7, "{path} does not name an input field"},
		{"capability.bindings.http.method", 23, 7, "not an HTTP method"},
		{"capability.bindings.http.url", 24, 7, "absolute http(s) URL"},
		{"capability.bindings.mcp.tool", 25, 5, "missing"},
		{"capability.bindings.mcp.mapping.path", 28, 9, "does not name an input field"},
	}
	for _, w := range wants {
		found := false
		for _, i := range issues {
			if i.Path == w.path && strings.Contains(i.Message, w.contains) {
				found = true
				if i.Severity != capability.SeverityError {
					t.Errorf("%s: severity %s, want error", w.path, i.Severity)
				}
				if i.Line != w.line || i.Column != w.col {
					t.Errorf("%s: at %d:%d, want %d:%d", w.path, i.Line, i.Column, w.line, w.col)
				}
				if i.File != "testdata/broken.yaml" {
					t.Errorf("%s: file %q", w.path, i.File)
				}
			}
		}
		if !found {
			t.Errorf("no issue %s containing %q; got:\n%s", w.path, w.contains, render(issues))
		}
	}
}

func render(issues []capability.Issue) string {
	var b strings.Builder
	for _, i := range issues {
		b.WriteString(i.String() + "\n")
	}
	return b.String()
}

func TestJSONWithTabs(t *testing.T) {
	f := mustRead(t, "testdata/lint.json")
	if len(f.Entries) != 1 {
		t.Fatalf("entries %d", len(f.Entries))
	}
	issues := f.Validate()
	if errs := errorsOf(issues); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, i := range issues {
		if i.Path == "capability.documentation_url" && (i.Line != 2 || i.Column != 16) {
			t.Errorf("documentation_url warning at %d:%d, want the capability's mapping at 2:16", i.Line, i.Column)
		}
	}
}

// Round trip: read(write(d)) == d, and writing again gives the same bytes,
// in YAML and JSON.
func TestRoundTrip(t *testing.T) {
	files := []string{"testdata/scan.yaml", "testdata/lint.json"}
	if _, err := os.Stat(filepath.Join(corpus, "memory.yaml")); err == nil {
		files = append(files, filepath.Join(corpus, "memory.yaml"))
	}
	for _, path := range files {
		for _, format := range []Format{YAML, JSON} {
			t.Run(filepath.Base(path)+"/"+string(format), func(t *testing.T) {
				f := mustRead(t, path)
				defs := f.Definitions()
				var first bytes.Buffer
				if err := Write(&first, defs, format); err != nil {
					t.Fatal(err)
				}
				g, err := Read("out", first.Bytes())
				if err != nil {
					t.Fatalf("reading what we wrote: %v\n%s", err, first.String())
				}
				if !reflect.DeepEqual(defs, g.Definitions()) {
					t.Fatalf("definitions differ after the round trip:\n%#v\n%#v", defs, g.Definitions())
				}
				var second bytes.Buffer
				if err := Write(&second, g.Definitions(), format); err != nil {
					t.Fatal(err)
				}
				if first.String() != second.String() {
					t.Errorf("second write differs:\n%s\n---\n%s", first.String(), second.String())
				}
			})
		}
	}
}

func TestLayouts(t *testing.T) {
	cases := []struct {
		name, src string
		kind      Kind
		paths     []string
	}{
		{"bare definition", "uri: ossa:a/b@1.0\nname: b\n", KindCapability, []string{""}},
		{"top-level sequence of capability docs", "- capability: {uri: 'ossa:a/b@1.0'}\n- capability: {uri: 'ossa:a/c@1.0'}\n", KindCapabilities, []string{"[0].capability", "[1].capability"}},
		{"top-level sequence of definitions", "- {uri: 'ossa:a/b@1.0'}\n", KindCapabilities, []string{"[0]"}},
		{"capabilities list of capability docs", "capabilities:\n  - capability: {uri: 'ossa:a/b@1.0'}\n", KindCapabilities, []string{"capabilities[0].capability"}},
		{"multi-document", "capability: {uri: 'ossa:a/b@1.0'}\n---\ncapability: {uri: 'ossa:a/c@1.0'}\n", KindCapabilities, []string{"document[0].capability", "document[1].capability"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Read("x.yaml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != c.kind {
				t.Errorf("kind %s, want %s", f.Kind, c.kind)
			}
			var paths []string
			for _, e := range f.Entries {
				paths = append(paths, e.Path)
			}
			if !reflect.DeepEqual(paths, c.paths) {
				t.Errorf("paths %q, want %q", paths, c.paths)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"empty", "  \n", 1, "empty"},
		{"syntax", "capability:\n  uri: [unclosed\n", 1, "not valid YAML or JSON"},
		{"tab indentation", "capability:\n\turi: x\n", 2, "not valid YAML"},
		{"scalar", "hello\n", 1, "expected a mapping"},
		{"unknown layout", "foo: 1\nbar: 2\n", 1, "keys found: foo, bar"},
		{"capabilities not a list", "capabilities: {a: 1}\n", 1, "must be a list"},
		{"bad json", "{\"capability\": {\"uri\": }\n", 1, "not valid YAML or JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("x.yaml", []byte(c.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %v", err)
			}
			if e.Line != c.line || !strings.Contains(e.Error(), c.contains) || !strings.HasPrefix(e.Error(), "x.yaml:") {
				t.Errorf("got %q at line %d, want line %d containing %q", e.Error(), e.Line, c.line, c.contains)
			}
		})
	}
}

// A field of the wrong type fails that entry, with its path and line, and
// the other entries are still read.
func TestTypeErrorsKeepOtherEntries(t *testing.T) {
	src := "capabilities:\n  - uri: ossa:a/b@1.0\n    errors: oops\n  - uri: ossa:a/c@1.0\n    name: c\n"
	f, err := Read("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 1 || f.Entries[0].Definition.Name != "c" {
		t.Fatalf("entries %+v", f.Entries)
	}
	if len(f.Issues) != 1 {
		t.Fatalf("issues %v", f.Issues)
	}
	i := f.Issues[0]
	if i.Path != "capabilities[0].errors" || i.Line != 3 || i.Column != 13 || !strings.Contains(i.Message, "expected a list, found a string (oops)") {
		t.Errorf("issue %s", i.String())
	}
}

func TestDuplicateKeys(t *testing.T) {
	f, err := Read("x.yaml", []byte("capability:\n  uri: a\n  input:\n    type: object\n    type: string\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Issues) != 1 || f.Issues[0].Path != "capability.input.type" || f.Issues[0].Line != 5 || !strings.Contains(f.Issues[0].Message, "already defined at line 4") {
		t.Errorf("got %v", f.Issues)
	}
}

// A key written twice at the top of a document (`capability:` twice
// registered the first and dropped the second) or in its file-level
// definitions is an issue at the second key, and no entry of that document
// is read.
func TestDuplicateDocumentKeys(t *testing.T) {
	for _, tc := range []struct {
		name, src, path string
		line, col       int
	}{
		{"capability twice", `{"capability": {"uri": "ossa:a/b@1.0"},` + "\n" + ` "capability": {"uri": "ossa:a/c@1.0"}}`, "capability", 2, 2},
		{"capabilities twice", "capabilities: []\ncapabilities:\n  - uri: ossa:a/b@1.0\n", "capabilities", 2, 1},
		{"in definitions", "capability: {uri: 'ossa:a/b@1.0', input: {$ref: '#/definitions/A'}}\ndefinitions:\n  A: {type: object}\n  A: {type: string}\n", "definitions.A", 4, 3},
		{"in a later document", "capability: {uri: 'ossa:a/b@1.0'}\n---\ncapability: {uri: 'ossa:a/c@1.0'}\ncapability: {uri: 'ossa:a/d@1.0'}\n", "document[1].capability", 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read("x.yaml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Issues) != 1 || f.Issues[0].Path != tc.path || f.Issues[0].Line != tc.line || f.Issues[0].Column != tc.col ||
				!strings.Contains(f.Issues[0].Message, "is already defined at line") {
				t.Errorf("issues %v, want one at %s %d:%d", f.Issues, tc.path, tc.line, tc.col)
			}
			for _, e := range f.Entries {
				if e.Path != "document[0].capability" {
					t.Errorf("entry %s of the ambiguous document was read", e.Path)
				}
			}
		})
	}
}

// Invalid UTF-8 is refused at its line and column (the YAML parser names
// no position for it).
func TestInvalidUTF8Position(t *testing.T) {
	_, err := Read("x.json", []byte("{\"capability\": {\"uri\": \"ossa:a/b@1.0\",\n  \"name\": \"b\xff\"}}"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Column != 13 || e.Message != "invalid UTF-8 byte 0xFF: save the file as UTF-8" {
		t.Errorf("got %v", err)
	}
}

func TestMissingRefIsAnError(t *testing.T) {
	src := `capability:
  uri: ossa:a/b@1.0
  name: b
  domain: a
  version: 1.0.0
  input: {type: object}
  output:
    type: object
    properties:
      x: {$ref: "#/definitions/Nope"}
  bindings: {native: {handler: b}}
`
	f, err := Read("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	errs := errorsOf(f.Validate())
	if len(errs) != 1 || errs[0].Path != "capability.output" || !strings.Contains(errs[0].Message, "#/definitions/Nope") {
		t.Errorf("got %v", errs)
	}
}

// A JSON definition is read as JSON: the escape \/ (which PHP's
// json_encode and others write in every URL) is a slash, where the YAML
// parser refused the whole file ("found unknown escape character"), and an
// issue (a key given twice) has its line and column.
func TestJSONEscapedSlash(t *testing.T) {
	src := "{\"capability\": {\"uri\": \"ossa:a\\/b@1.0\", \"name\": \"b\", \"version\": \"1.0.0\",\n  \"description\": \"see https:\\/\\/example.com\\/docs\",\n  \"bindings\": {\"http\": {\"url\": \"https:\\/\\/api.example.com\\/b\"}}}}"
	f, err := Read("x.json", []byte(src))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	defs := f.Definitions()
	if len(defs) != 1 || defs[0].URI != "ossa:a/b@1.0" || defs[0].Description != "see https://example.com/docs" || len(f.Issues) != 0 {
		t.Fatalf("definitions %+v, issues %v; want ossa:a/b@1.0 with its slashes", defs, f.Issues)
	}
	twice := strings.Replace(src, "}}}}", "}},\n  \"name\": \"c\"}}", 1)
	if f, err = Read("x.json", []byte(twice)); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(f.Issues) != 1 || f.Issues[0].Line != 4 || f.Issues[0].Column != 3 {
		t.Errorf("issues %v, want the second name at 4:3", f.Issues)
	}
}

// A character beyond the BMP escaped as a surrogate pair (Python's
// json.dumps writes every emoji so) is that character, where the YAML
// parser refused the whole file ("found invalid Unicode character escape
// code"); a lone half of a pair is still refused.
func TestJSONSurrogatePair(t *testing.T) {
	src := `{"capability": {"uri": "ossa:a/b@1.0", "name": "b", "version": "1.0.0", "description": "launch \ud83d\ude80", "bindings": {"http": {"url": "https://api.example.com/b"}}}}`
	f, err := Read("x.json", []byte(src))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if defs := f.Definitions(); len(defs) != 1 || defs[0].Description != "launch \U0001F680" {
		t.Fatalf("definitions %+v, want the description with its rocket", defs)
	}
	if _, err := Read("x.json", []byte(strings.Replace(src, `\ude80`, "", 1))); err == nil {
		t.Error("a lone high surrogate escape was read, want it refused")
	}
}

// BenchmarkReadJSON reads a JSON definition of a real API's size (an
// input of 40 described properties, an output of 20; ~8 KB), as POST
// /registry/capabilities does.
func BenchmarkReadJSON(b *testing.B) {
	props := func(n int, what string) string {
		var p []string
		for i := range n {
			p = append(p, fmt.Sprintf(`"%s_%d": {"type": "string", "description": "The %s number %d, as the API's documentation describes it in a sentence or two.", "maxLength": 256}`, what, i, what, i))
		}
		return strings.Join(p, ",\n      ")
	}
	data := []byte(fmt.Sprintf(`{"capability": {
  "uri": "ossa:bench/read@1.0", "name": "read", "domain": "bench", "version": "1.0.0",
  "description": "Reads a thing, with every option the API has.",
  "input": {"type": "object", "properties": {
      %s}, "required": ["field_0"]},
  "output": {"type": "object", "properties": {
      %s}},
  "bindings": {"http": {"method": "GET", "url": "https://api.example.com/things/{field_0}"}}}}`, props(40, "field"), props(20, "result")))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read("body", data); err != nil {
			b.Fatal(err)
		}
	}
}
