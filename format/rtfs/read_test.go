package rtfs

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
)

// corpusFile is one file of corpus/ccos read by ReadCapabilities.
type corpusFile struct {
	rel      string // path under corpus/ccos
	defs     []capability.Definition
	failures []capability.ImportFailure
}

// readCorpus reads every .rtfs file under corpus/ccos (or skips the test).
func readCorpus(t testing.TB) []corpusFile {
	t.Helper()
	root := testpeers.Corpus(t, "ccos")
	var out []corpusFile
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".rtfs") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		defs, failures, err := ReadCapabilities(filepath.ToSlash(rel), data)
		if err != nil {
			t.Errorf("%s: the file cannot be read at all: %v", rel, err)
		}
		out = append(out, corpusFile{rel: filepath.ToSlash(rel), defs: defs, failures: failures})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func corpusDef(t *testing.T, files []corpusFile, rel, uri string) capability.Definition {
	t.Helper()
	for _, f := range files {
		if f.rel != rel {
			continue
		}
		for _, d := range f.defs {
			if d.URI == uri {
				return d
			}
		}
	}
	t.Fatalf("%s: no capability %s", rel, uri)
	return capability.Definition{}
}

// TestCorpusReads reads every file of the CCOS corpus: how many capabilities
// and failures each gives, that every schema compiles and that every
// definition validates without errors, except where the source lacks what
// caphub needs.
func TestCorpusReads(t *testing.T) {
	files := readCorpus(t)
	type counts struct{ defs, failures int }
	want := map[string]counts{
		"module/capabilities.rtfs":                                    {40, 0},
		"paired/capabilities.rtfs":                                    {40, 0},
		"brace-map/discovered/mcp/github/github-mcp_list_issues.rtfs": {1, 0},
		"brace-map/generated/demo.hello/capability.rtfs":              {1, 0},
		"brace-map/openapi/openweather/get_current_weather.rtfs":      {1, 0},
		"brace-map/openapi/openweather/get_forecast.rtfs":             {1, 0},
		// CCOS wrote the tool's description with unescaped quotes.
		"brace-map/mcp/github/pull_request_review_write.rtfs": {1, 0},
	}
	// No validation errors: demo.hello, whose only body is RTFS code, has
	// the rtfs binding (caphub keeps it, validation warns, invoking it is
	// refused).
	wantErrors := map[string][]string{}

	if len(files) != 52 {
		t.Errorf("%d .rtfs files in corpus/ccos, want 52 (50 brace-map, module, paired)", len(files))
	}
	total, failed, braceMap := 0, 0, 0
	for _, f := range files {
		w, ok := want[f.rel]
		if !ok && strings.HasPrefix(f.rel, "brace-map/mcp/github/") {
			w = counts{1, 0}
		} else if !ok {
			t.Errorf("%s: file not in the test's table", f.rel)
			continue
		}
		if len(f.defs) != w.defs || len(f.failures) != w.failures {
			t.Errorf("%s: %d capabilities, %d failures, want %d and %d: %v", f.rel, len(f.defs), len(f.failures), w.defs, w.failures, f.failures)
		}
		if strings.HasPrefix(f.rel, "brace-map/") {
			braceMap++
		}
		total += len(f.defs)
		failed += len(f.failures)
		for _, d := range f.defs {
			for name, s := range map[string]capability.Schema{"input": d.Input, "output": d.Output} {
				if s == nil {
					t.Errorf("%s: %s has no %s schema", f.rel, d.URI, name)
				} else if _, issues := capability.CompileSchema(s); len(issues) > 0 {
					t.Errorf("%s: %s: %s schema does not compile: %v", f.rel, d.URI, name, issues)
				}
			}
			var errs []string
			for _, iss := range capability.Validate(&d) {
				if iss.Severity == capability.SeverityError {
					errs = append(errs, iss.Path)
				}
			}
			if !reflect.DeepEqual(errs, wantErrors[d.URI]) {
				t.Errorf("%s: %s: validation errors at %v, want %v", f.rel, d.URI, errs, wantErrors[d.URI])
			}
		}
	}
	if braceMap != 50 || total != 130 || failed != 0 {
		t.Errorf("%d brace-map files, %d capabilities, %d failures; want 50, 130, 0", braceMap, total, failed)
	}
}

func TestCorpusListIssues(t *testing.T) {
	files := readCorpus(t)
	d := corpusDef(t, files, "brace-map/mcp/github/list_issues.rtfs", "mcp:github/list_issues@1.0")
	if d.Name != "list_issues" || d.Domain != "github" || d.Version != "1.0.0" || d.Title != "list_issues" {
		t.Errorf("identity: name %q domain %q version %q title %q", d.Name, d.Domain, d.Version, d.Title)
	}
	if !strings.HasPrefix(d.Description, "List issues in a GitHub repository. For pagination, use the 'endCursor'") {
		t.Errorf("description %q", d.Description)
	}
	if m := d.Bindings.MCP; m == nil || m.Server != "github" || m.Tool != "list_issues" || len(d.Bindings.Types()) != 1 {
		t.Errorf("bindings %+v", d.Bindings)
	}
	if !reflect.DeepEqual(d.Permissions, []string{"network.http"}) || !reflect.DeepEqual(d.Effects, []string{"network_request", "mcp_call"}) {
		t.Errorf("permissions %v effects %v", d.Permissions, d.Effects)
	}
	wantMCP := map[string]any{
		"server_url": "https://api.githubcopilot.com/mcp/", "server_name": "github", "tool_name": "list_issues",
		"protocol_version": "2024-11-05", "requires_session": "auto", "auth_env_var": "MCP_AUTH_TOKEN",
		"server_url_override_env": "MCP_SERVER_URL",
	}
	if !reflect.DeepEqual(d.Metadata["mcp"], wantMCP) {
		t.Errorf("metadata.mcp %v", d.Metadata["mcp"])
	}
	wantProv := &capability.Provenance{Method: "mcp_introspection", SourceURL: "https://api.githubcopilot.com/mcp/",
		CreatedAt: "2025-10-24T09:02:22.096877869+00:00", CapabilityType: "mcp_tool"}
	if !reflect.DeepEqual(d.Provenance, wantProv) {
		t.Errorf("provenance %+v", d.Provenance)
	}
	wantInput := mustJSON(t, `{"type":"object","required":["owner","repo"],"properties":{
		"after":{"type":"string"},"direction":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},
		"orderBy":{"type":"string"},"owner":{"type":"string"},"perPage":{"type":"number"},"repo":{"type":"string"},
		"since":{"type":"string"},"state":{"type":"string"}}}`)
	if !reflect.DeepEqual(d.Input, wantInput) {
		j, _ := json.Marshal(d.Input)
		t.Errorf("input %s", j)
	}
	if !reflect.DeepEqual(d.Output, capability.Schema{}) {
		t.Errorf("output %v, want {} (:any)", d.Output)
	}
	rtfs := d.Metadata["rtfs"].(map[string]any)
	impl := rtfs["implementation"].(string)
	if !strings.HasPrefix(impl, "(fn [input]\n  ;; MCP Tool: List issues in a GitHub repository.") ||
		!strings.HasSuffix(impl, "{:error \"No response from MCP server\" :url mcp_url}))))") {
		t.Errorf("implementation not verbatim: %q … %q", impl[:40], impl[len(impl)-60:])
	}
	if rtfs["provider"] != "MCP" || rtfs["id"] != nil {
		t.Errorf("metadata.rtfs %v", rtfs)
	}
}

func TestCorpusRustDebugSchema(t *testing.T) {
	files := readCorpus(t)
	d := corpusDef(t, files, "brace-map/discovered/mcp/github/github-mcp_list_issues.rtfs", "mcp:github-github-mcp/list_issues@1.0")
	same := corpusDef(t, files, "brace-map/mcp/github/list_issues.rtfs", "mcp:github/list_issues@1.0")
	if !reflect.DeepEqual(d.Input, same.Input) {
		t.Errorf("the Rust Debug schema reads as\n%v\nwant the brace-map one\n%v", d.Input, same.Input)
	}
	if m := d.Bindings.MCP; m == nil || m.Server != "github-github-mcp" || m.Tool != "list_issues" {
		t.Errorf("binding %+v", d.Bindings.MCP)
	}
	if d.Provenance == nil || d.Provenance.Method != "mcp_registry" || d.Provenance.SourceURL != "" {
		t.Errorf("provenance %+v", d.Provenance)
	}
	if got := d.Metadata["rtfs"].(map[string]any)["id"]; got != "mcp.github.github-mcp.list_issues" {
		t.Errorf("kept id %v", got)
	}
}

func TestCorpusFlatAndOpenAPI(t *testing.T) {
	files := readCorpus(t)

	hello := corpusDef(t, files, "brace-map/generated/demo.hello/capability.rtfs", "ossa:demo/hello@1.0")
	// Its only body is RTFS code: the rtfs binding points at it.
	if hello.Title != "Hello Capability" || !reflect.DeepEqual(hello.Bindings, capability.Bindings{Extra: map[string]any{
		RTFSBinding: map[string]any{"implementation": "metadata.rtfs.implementation"}}}) {
		t.Errorf("demo.hello: title %q bindings %+v", hello.Title, hello.Bindings)
	}
	warned := false
	for _, iss := range capability.Validate(&hello) {
		warned = warned || (iss.Path == "bindings.rtfs" && iss.Severity == capability.SeverityWarning)
	}
	if !warned {
		t.Errorf("demo.hello: no warning about the rtfs binding: %v", capability.Validate(&hello))
	}
	// The flat layout (:source_url, :discovery_method, :capability_type) is migrated.
	if p := hello.Provenance; p == nil || p.Method != "manual" || p.SourceURL != "ccos://examples" || p.CapabilityType != "utility" {
		t.Errorf("demo.hello provenance %+v", hello.Provenance)
	}
	rtfs := hello.Metadata["rtfs"].(map[string]any)
	if !reflect.DeepEqual(rtfs["capabilities-required"], []any{}) || !strings.HasPrefix(rtfs["implementation"].(string), "(do\n  (let [raw input") {
		t.Errorf("demo.hello metadata.rtfs %v", rtfs)
	}
	if !reflect.DeepEqual(hello.Output, mustJSON(t, `{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`)) {
		t.Errorf("demo.hello output %v", hello.Output)
	}

	w := corpusDef(t, files, "brace-map/openapi/openweather/get_current_weather.rtfs", "ossa:openweather-api/get_current_weather@2.5")
	if w.Version != "2.5.0" || w.Title != "Get Current Weather" {
		t.Errorf("weather: version %q title %q", w.Version, w.Title)
	}
	if h := w.Bindings.HTTP; h == nil || h.Method != "GET" || h.URL != "https://api.openweathermap.org/data/2.5/weather" || h.Auth != nil {
		t.Errorf("weather http binding %+v", w.Bindings.HTTP)
	}
	if !reflect.DeepEqual(w.Metadata["openapi"], map[string]any{"base_url": "https://api.openweathermap.org", "endpoint_method": "GET", "endpoint_path": "/data/2.5/weather"}) {
		t.Errorf("weather metadata.openapi %v", w.Metadata["openapi"])
	}
	wantOut := mustJSON(t, `{"type":"object","required":["coord","main","name","weather"],"properties":{
		"coord":{"type":"object","properties":{"lon":{"type":"number"},"lat":{"type":"number"}},"required":["lat","lon"]},
		"weather":{"type":"array","items":{"type":"object"}},
		"main":{"type":"object","properties":{"temp":{"type":"number"},"humidity":{"type":"integer"}},"required":["humidity","temp"]},
		"name":{"type":"string"}}}`)
	if !reflect.DeepEqual(w.Output, wantOut) {
		j, _ := json.Marshal(w.Output)
		t.Errorf("weather output %s", j)
	}
	if got := w.Metadata["rtfs"].(map[string]any)["id"]; got != "openweather_api.get_current_weather" {
		t.Errorf("kept id %v", got)
	}
}

func TestCorpusModule(t *testing.T) {
	files := readCorpus(t)
	d := corpusDef(t, files, "module/capabilities.rtfs", "mcp:github-github-mcp/add_comment_to_pending_review@1.0")
	// The flat metadata {:discovery_source :mcp_server_endpoint :mcp_server_name} is migrated.
	if !reflect.DeepEqual(d.Metadata["mcp"], map[string]any{"server_url": "https://api.githubcopilot.com/mcp/", "server_name": "github/github-mcp"}) {
		t.Errorf("metadata.mcp %v", d.Metadata["mcp"])
	}
	if d.Provenance == nil || d.Provenance.Method != "mcp_unified_service" {
		t.Errorf("provenance %+v", d.Provenance)
	}
	rtfs := d.Metadata["rtfs"].(map[string]any)
	wantProvider := map[string]any{"type": "mcp", "server_endpoint": "https://api.githubcopilot.com/mcp/",
		"tool_name": "add_comment_to_pending_review", "timeout_seconds": int64(30), "protocol_version": "2024-11-05"}
	if !reflect.DeepEqual(rtfs["provider"], wantProvider) || rtfs["language"] != "rtfs20" || rtfs["id"] != "mcp.github/github-mcp.add_comment_to_pending_review" {
		t.Errorf("metadata.rtfs %v", rtfs)
	}
	req := d.Input["required"]
	if !reflect.DeepEqual(req, []any{"body", "owner", "path", "pullNumber", "repo", "subjectType"}) {
		t.Errorf("required %v", req)
	}
	var uris []string
	for _, f := range files {
		if f.rel == "paired/capabilities.rtfs" {
			for _, d := range f.defs {
				uris = append(uris, d.URI)
			}
		}
	}
	sort.Strings(uris)
	if len(uris) != 40 || uris[0] != "mcp:github/add_comment_to_pending_review@1.0" || uris[39] != "mcp:github/update_pull_request_branch@1.0" {
		t.Errorf("paired URIs %v", uris)
	}
}

// CCOS wrote this description with unescaped quotes; the lenient second
// reading (see Parse) keeps them in the description instead of failing.
func TestCorpusUnescapedQuotes(t *testing.T) {
	files := readCorpus(t)
	for _, f := range files {
		if f.rel != "brace-map/mcp/github/pull_request_review_write.rtfs" {
			continue
		}
		if len(f.failures) != 0 || len(f.defs) != 1 {
			t.Fatalf("failures %#v, %d definitions", f.failures, len(f.defs))
		}
		d := f.defs[0]
		if !strings.Contains(d.Description, `If "event" parameter is provided`) || !strings.HasSuffix(strings.TrimSpace(d.Description), "on the specified pull request.") {
			t.Errorf("description %q", d.Description)
		}
		if d.URI != "mcp:github/pull_request_review_write@1.0" || d.Input == nil {
			t.Errorf("definition %+v", d)
		}
		return
	}
	t.Error("pull_request_review_write.rtfs not read")
}

// Only :description strings are read leniently: a quote in code ends its
// string, and a file that is still broken keeps its strict error.
func TestLenientReadingIsNarrow(t *testing.T) {
	src := `(capability "x.y" :description "say "hi" to them" :implementation (fn [i] (str "Bearer " i)))`
	defs, failures, err := ReadCapabilities("x.rtfs", []byte(src))
	if err != nil || len(failures) != 0 || len(defs) != 1 || defs[0].Description != `say "hi" to them` {
		t.Fatalf("%v %v %+v", err, failures, defs)
	}
	if _, _, err := ReadCapabilities("x.rtfs", []byte(`(capability "x.y" :description "unclosed`)); err == nil {
		t.Error("an unclosed string was accepted")
	}
}

func readOne(t *testing.T, src string) ([]capability.Definition, []capability.ImportFailure) {
	t.Helper()
	defs, failures, err := ReadCapabilities("t.rtfs", []byte(src))
	if err != nil {
		t.Fatalf("ReadCapabilities: %v", err)
	}
	return defs, failures
}

// TestFormFailures: each bad form is one failure with its position, and the
// other forms are still read.
func TestFormFailures(t *testing.T) {
	good := `(capability "demo.ok" :input-schema {:a :string} :output-schema :any)`
	tests := []struct {
		name, form string
		line, col  int
		reason     string
	}{
		{"no id", `(capability :name "x")`, 2, 13, "(capability …) needs the capability id as a string"},
		{"key without value", `(capability "demo.x" :name)`, 2, 22, "keyword :name has no value"},
		{"not a key", `(capability "demo.x" :name "n" "stray" 1)`, 2, 32, `expected a keyword such as :name here, found string "stray"`},
		{"duplicate key", "(capability \"demo.x\"\n :name \"a\"\n :name \"b\")", 4, 2, ":name appears twice (first at 3:2): keep one"},
		{"version not a string", `(capability "demo.x" :version 1.0)`, 2, 31, `:version must be a string such as "1.0.0", not float 1: quote it`},
		{"bad version", `(capability "demo.x" :version "v1")`, 2, 31, `invalid version "v1"`},
		{"no domain", `(capability "hello")`, 2, 13, `capability id "hello" has no domain: write it as <domain>.<name>`},
		{"bad type", "(capability \"demo.x\"\n :input-schema {:a :strin})", 3, 20, ":input-schema: unknown type keyword :strin"},
		{"metadata not a map", `(capability "demo.x" :metadata [1])`, 2, 32, ":metadata must be a map"},
		{"code in metadata", `(capability "demo.x" :metadata {:mcp {:server_name (str "a")}})`, 2, 52, ":metadata :mcp must be data"},
		{"NaN in data", `(capability "demo.x" :weights [1 ##NaN])`, 2, 34, "which JSON cannot store"},
		{"bad list", `(capability "demo.x" :permissions "net")`, 2, 35, ":permissions must be a vector"},
		{"bad discovery", `(capability "demo.x" :metadata {:discovery {:created_at 5}})`, 2, 1, "metadata :discovery :created_at must be a string"},
		{"no mcp server", `(capability "mcp.tool" :provider "MCP")`, 2, 13, `cannot tell the MCP server of "mcp.tool"`},
		{"map without id", `{:type "capability" :name "x"}`, 2, 1, "the capability map has no :id"},
		{"rtfs metadata", `(capability "demo.x" :metadata {:rtfs {:a 1}})`, 2, 33, ":metadata :rtfs is caphub's record"},
		{"bad uri", `(capability "demo.x" :uri "ossa:Demo/x@1.0")`, 2, 27, `invalid capability URI "ossa:Demo/x@1.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, failures := readOne(t, good+"\n"+tt.form+"\n"+good)
			if len(defs) != 2 {
				t.Errorf("%d definitions read, want the 2 good ones", len(defs))
			}
			if len(failures) != 1 {
				t.Fatalf("failures %v, want one", failures)
			}
			f := failures[0]
			if f.File != "t.rtfs" || f.Line != tt.line || f.Column != tt.col || !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("failure %s\nwant at t.rtfs:%d:%d, containing %q", f, tt.line, tt.col, tt.reason)
			}
		})
	}
}

func TestReadSyntaxErrorFailsTheFile(t *testing.T) {
	_, _, err := ReadCapabilities("bad.rtfs", []byte("(capability \"demo.x\"\n  :name \"x\"\n"))
	if err == nil || err.Error() != `bad.rtfs:1:1: "(" opened here is never closed (the file ends at 3:1): add ")"` {
		t.Errorf("error %v", err)
	}
}

// TestFlatMigration reads the seed's old flat layout into the hierarchical one.
func TestFlatMigration(t *testing.T) {
	src := `(capability "mcp.github.list_issues"
  :name "list_issues"
  :source_url "https://api.githubcopilot.com/mcp/"
  :discovery_method "mcp_introspection"
  :created_at "2025-10-23T20:57:22Z"
  :capability_type "mcp_tool"
  :mcp_metadata {
    :server_url "https://api.githubcopilot.com/mcp/"
    :server_name "github"
    :tool_name "list_issues"
  }
  :mcp_requires_session "auto"
  :mcp_auth_env_var "MCP_AUTH_TOKEN"
  :metadata {:openapi_base_url "https://x.example" :discovery_introspector_version "1.2" :team "core"}
  :input-schema {:owner :string}
  :output-schema :any)`
	defs, failures := readOne(t, src)
	if len(failures) > 0 || len(defs) != 1 {
		t.Fatalf("defs %d failures %v", len(defs), failures)
	}
	d := defs[0]
	wantMeta := map[string]any{
		"mcp": map[string]any{"server_url": "https://api.githubcopilot.com/mcp/", "server_name": "github", "tool_name": "list_issues",
			"requires_session": "auto", "auth_env_var": "MCP_AUTH_TOKEN"},
		"openapi": map[string]any{"base_url": "https://x.example"},
		"team":    "core",
	}
	if !reflect.DeepEqual(d.Metadata, wantMeta) {
		t.Errorf("metadata %v", d.Metadata)
	}
	want := &capability.Provenance{Method: "mcp_introspection", SourceURL: "https://api.githubcopilot.com/mcp/",
		CreatedAt: "2025-10-23T20:57:22Z", CapabilityType: "mcp_tool", IntrospectorVersion: "1.2"}
	if !reflect.DeepEqual(d.Provenance, want) {
		t.Errorf("provenance %+v", d.Provenance)
	}

	// A flat key whose hierarchical place holds another value stays put.
	defs, _ = readOne(t, `(capability "demo.x" :source_url "https://old" :metadata {:discovery {:source_url "https://new"} :discovery_method "m"})`)
	d = defs[0]
	if d.Provenance.SourceURL != "https://new" || d.Provenance.Method != "m" || d.Metadata["rtfs"].(map[string]any)["source_url"] != "https://old" {
		t.Errorf("conflict: provenance %+v metadata %v", d.Provenance, d.Metadata)
	}
}

func TestIdentityRule(t *testing.T) {
	tests := []struct {
		form, uri string
		mcp       *capability.MCPBinding
		http      *capability.HTTPBinding
	}{
		{`(capability "mcp.github.list_issues")`, "mcp:github/list_issues@1.0", &capability.MCPBinding{Server: "github", Tool: "list_issues"}, nil},
		{`(capability "mcp.github/github-mcp.create_branch" :version "2.1.3")`, "mcp:github-github-mcp/create_branch@2.1", &capability.MCPBinding{Server: "github-github-mcp", Tool: "create_branch"}, nil},
		{`(capability "mcp.slack.send" :metadata {:mcp {:server_name "Slack_Bot" :tool_name "chat.postMessage"}})`, "mcp:slack-bot/chat.postMessage@1.0", &capability.MCPBinding{Server: "slack-bot", Tool: "chat.postMessage"}, nil},
		{`(capability "github.list_issues" :provider "MCP")`, "mcp:github/list_issues@1.0", &capability.MCPBinding{Server: "github", Tool: "list_issues"}, nil},
		{`(capability "tools.x" :provider {:type :mcp :tool_name "Do-It"} :metadata {:mcp {:server_name "srv"}})`, "mcp:srv/Do-It@1.0", &capability.MCPBinding{Server: "srv", Tool: "Do-It"}, nil},
		{`(capability "github.list_issues")`, "ossa:github/list_issues@1.0", nil, nil},
		{`(capability "ccos.io.println")`, "ossa:ccos-io/println@1.0", nil, nil},
		{`(capability "Acme_API.Get-Thing")`, "ossa:acme-api/get_thing@1.0", nil, nil},
		{`(capability "weather.now" :metadata {:openapi {:base_url "https://api.example/" :endpoint_path "/v1/now" :endpoint_method "post" :auth_type "api_key" :auth_location "query" :auth_param_name "appid" :auth_env_var "KEY"}})`,
			"ossa:weather/now@1.0", nil, &capability.HTTPBinding{Method: "POST", URL: "https://api.example/v1/now", Auth: &capability.HTTPAuth{Type: "api_key", Location: "query", ParamName: "appid", Env: "KEY"}}},
		{`(capability "x.y" :uri "ossa:security/scan@3.2" :version "3.2.0")`, "ossa:security/scan@3.2", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			defs, failures := readOne(t, tt.form)
			if len(failures) > 0 {
				t.Fatalf("failures %v", failures)
			}
			d := defs[0]
			u := capability.MustParseURI(tt.uri)
			if d.URI != tt.uri || d.Domain != u.Domain || d.Name != u.Name {
				t.Errorf("uri %q domain %q name %q, want %s", d.URI, d.Domain, d.Name, tt.uri)
			}
			if !reflect.DeepEqual(d.Bindings.MCP, tt.mcp) || !reflect.DeepEqual(d.Bindings.HTTP, tt.http) {
				t.Errorf("bindings mcp %+v http %+v", d.Bindings.MCP, d.Bindings.HTTP)
			}
		})
	}
}
