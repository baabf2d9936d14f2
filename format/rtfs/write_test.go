package rtfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

// roundTrip writes d, reads it back and returns what was read and written.
func roundTrip(t *testing.T, d capability.Definition) (capability.Definition, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCapability(&buf, d); err != nil {
		t.Fatalf("WriteCapability(%s): %v", d.URI, err)
	}
	defs, failures, err := ReadCapabilities("written.rtfs", buf.Bytes())
	if err != nil || len(failures) > 0 || len(defs) != 1 {
		t.Fatalf("reading what was written for %s: err %v, failures %v, %d definitions\n%s", d.URI, err, failures, len(defs), buf.String())
	}
	return defs[0], buf.String()
}

func diffJSON(a, b capability.Definition) string {
	ja, _ := json.MarshalIndent(a, "", " ")
	jb, _ := json.MarshalIndent(b, "", " ")
	return "first difference: " + firstDiff(reflect.ValueOf(a), reflect.ValueOf(b), "") +
		"\nread:\n" + string(ja) + "\nafter write+read:\n" + string(jb)
}

// firstDiff names the first place where a and b differ (types included).
func firstDiff(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one side missing"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: %s vs %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Interface, reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil vs non-nil"
			}
			return ""
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return path + ": nil map vs empty map"
		}
		for _, k := range a.MapKeys() {
			if d := firstDiff(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
		if a.Len() != b.Len() {
			return path + ": different keys"
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return path + ": nil slice vs empty slice"
		}
		if a.Len() != b.Len() {
			return path + ": different lengths"
		}
		for i := 0; i < a.Len(); i++ {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())
	}
	return ""
}

// TestRoundTripCorpus: for every capability of the corpus, reading what
// WriteCapability wrote gives the same Definition, and writing it again gives
// the same text.
func TestRoundTripCorpus(t *testing.T) {
	n := 0
	for _, f := range readCorpus(t) {
		for _, d := range f.defs {
			again, text := roundTrip(t, d)
			if !reflect.DeepEqual(again, d) {
				t.Errorf("%s: %s changed in a round trip\n%s\nwritten:\n%s", f.rel, d.URI, diffJSON(d, again), text)
				continue
			}
			_, text2 := roundTrip(t, again)
			if text2 != text {
				t.Errorf("%s: %s: writing is not stable:\n%s\n---\n%s", f.rel, d.URI, text, text2)
			}
			n++
		}
	}
	if n != 130 {
		t.Errorf("%d capabilities round-tripped, want 130", n)
	}
}

func TestWriteCorpusLayout(t *testing.T) {
	d := corpusDef(t, readCorpus(t), "brace-map/mcp/github/list_issues.rtfs", "mcp:github/list_issues@1.0")
	_, text := roundTrip(t, d)
	for _, want := range []string{
		";; mcp:github/list_issues@1.0 (version 1.0.0)\n(capability \"mcp.github.list_issues\"\n  :name \"list_issues\"\n  :version \"1.0.0\"\n",
		"\n  :provider \"MCP\"\n  :permissions [:network.http]\n  :effects [:network_request :mcp_call]\n  :metadata {\n    :mcp {\n",
		"\n      :server_name \"github\"\n",
		"\n    :discovery {",
		"\n  :input-schema [:map [:after :string?] [:direction :string?] [:labels [:vector :string]?] [:orderBy :string?] [:owner :string] [:perPage :float?] [:repo :string] [:since :string?] [:state :string?]]\n  :output-schema :any\n  :implementation\n    (fn [input]\n  ;; MCP Tool: List issues",
		"{:error \"No response from MCP server\" :url mcp_url}))))\n)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("written form lacks %q:\n%s", want, text)
		}
	}
	for _, absent := range []string{":uri", ":bindings", ":json-schema"} {
		if strings.Contains(text, absent) {
			t.Errorf("written form has %s, which the id rule makes unneeded:\n%s", absent, text)
		}
	}
}

// richDefinition uses every field of the model, with schemas RTFS types
// cannot fully express and a binding the id rule would not derive.
func richDefinition(t *testing.T) capability.Definition {
	d := capability.Definition{
		URI: "ossa:security/scan_vulnerabilities@1.2", Name: "scan_vulnerabilities", Domain: "security", Version: "1.2.3",
		Title: "Scan vulnerabilities", Description: "Scans a repository.\nReturns \"findings\".", DocumentationURL: "https://docs.example/scan",
		Stability: "deprecated", DeprecatedBy: "ossa:security/scan@2.0", SunsetDate: "2027-01-01", MigrationGuide: "Use scan; rename path to target.",
		Input: mustJSON(t, `{"type":"object","required":["target","depth"],"additionalProperties":false,"properties":{
			"target":{"type":"string","description":"Repository URL","format":"uri"},
			"depth":{"type":"integer","minimum":1,"default":3},
			"mode":{"type":"string","enum":["fast","full"]}}}`),
		Output: mustJSON(t, `{"type":"object","properties":{"findings":{"type":"array","items":{"type":"object"}}},"required":["findings"]}`),
		Errors: []capability.ErrorDef{{Code: "NOT_FOUND", Description: "no such repo", Retryable: false}, {Code: "RATE_LIMITED", Retryable: true, Extra: map[string]any{"x-wait": int64(30)}}},
		Bindings: capability.Bindings{
			HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://scan.example/v1/{target}", Headers: map[string]string{"X-Depth": "{depth}"},
				BodyTemplate: `{"t":"{target}"}`, Auth: &capability.HTTPAuth{Type: "bearer", Env: "SCAN_TOKEN"}},
			CLI:   &capability.CLIBinding{Command: "scan {target}", Parser: "json"},
			Extra: map[string]any{"x-queue": map[string]any{"name": "scans"}},
		},
		Permissions: []string{"network.http", "fs read"}, Effects: []string{"network_request"},
		Domains: []string{"security", "security.scan"}, Categories: []string{"crud.read"}, Intents: []string{"security.scan"},
		Keywords: []string{"cve", ":odd"}, UIRequired: true,
		Display:              &capability.Display{Icon: "shield", Category: "Security"},
		SystemPromptAddition: "Scan before merging.",
		Tools:                []string{"ossa:security/scan@2.0"},
		Attestation:          &capability.Attestation{KeyID: "k1", Algorithm: "ed25519", Signature: "c2ln"},
		Provenance:           &capability.Provenance{Method: "manual", CreatedAt: "2025-01-02T03:04:05Z", Extra: map[string]any{"by": "alice"}},
		Metadata: map[string]any{
			"mcp":   "not a map",
			"team":  map[string]any{"owner": "sec", "tags": []any{":a", "b c", int64(1), 2.5, true, nil}, "weird key": ":x y"},
			"huge":  1e300,
			"empty": map[string]any{},
		},
		Examples: []capability.Example{{Description: "one", Input: map[string]any{"target": "https://x", "depth": int64(1)}, Output: []any{"ok"}}},
		Extra:    map[string]any{"x-owner": "sec"},
	}
	d.Normalize()
	return d
}

func TestRoundTripEveryField(t *testing.T) {
	d := richDefinition(t)
	again, text := roundTrip(t, d)
	if !reflect.DeepEqual(again, d) {
		t.Fatalf("changed in a round trip\n%s\nwritten:\n%s", diffJSON(d, again), text)
	}
	for _, want := range []string{
		"(capability \"security.scan_vulnerabilities\"\n",
		"\n  :permissions [:network.http \"fs read\"]",
		"\n  :keywords [:cve \":odd\"]",
		"\n  :bindings {",
		"\n    :json-schema {",
		"\n  :input-schema [:map [:depth [:and :int [:>= 1]]] [:mode [:enum \"fast\" \"full\"]?] [:target :string]]",
		"\n  :output-schema [:map [:findings [:vector :map]]]\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("written form lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, ":uri") {
		t.Errorf("the id rule gives the URI, yet :uri was written:\n%s", text)
	}
	// The output's type says it all: it is not carried.
	if strings.Contains(text, ":output {") {
		t.Errorf("the output schema was carried though its type expresses it:\n%s", text)
	}
}

func TestRoundTripExplicitURIAndBindings(t *testing.T) {
	tests := []capability.Definition{
		// An MCP tool whose name has a dot: the id rule cannot split it.
		{URI: "mcp:slack/chat.postMessage@1.0", Name: "chat.postMessage", Domain: "slack", Version: "1.0.0",
			Input: capability.Schema{"type": "object"}, Output: capability.Schema{},
			Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "slack", Tool: "chat.postMessage", Mapping: map[string]string{"text": "message"}}}},
		// A binding to another server than the URI's domain.
		{URI: "mcp:github/list_issues@1.0", Name: "list_issues", Domain: "github", Version: "1.0.0",
			Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "gh-enterprise", Tool: "list_issues"}}},
		// No binding although the metadata implies one.
		{URI: "ossa:weather/now@1.0", Name: "now", Domain: "weather", Version: "1.0.0",
			Metadata: map[string]any{"openapi": map[string]any{"base_url": "https://api.example"}}},
		// An ossa capability with MCP metadata.
		{URI: "ossa:tools/lint@0.1", Name: "lint", Domain: "tools", Version: "0.1.0-rc.1+b7",
			Metadata: map[string]any{"mcp": map[string]any{"server_name": "linter"}},
			Input:    capability.Schema{"type": "object", "properties": map[string]any{"": map[string]any{"type": "string"}}}},
	}
	for _, d := range tests {
		t.Run(d.URI, func(t *testing.T) {
			d.Normalize()
			again, text := roundTrip(t, d)
			if !reflect.DeepEqual(again, d) {
				t.Fatalf("changed in a round trip\n%s\nwritten:\n%s", diffJSON(d, again), text)
			}
		})
	}
}

func TestWriteRefuses(t *testing.T) {
	base := capability.Definition{URI: "ossa:demo/x@1.0", Name: "x", Domain: "demo", Version: "1.0.0"}
	tests := []struct {
		name string
		edit func(d *capability.Definition)
		msg  string
	}{
		{"discovery metadata", func(d *capability.Definition) { d.Metadata = map[string]any{"discovery": map[string]any{}} }, "metadata.discovery is the place RTFS keeps provenance"},
		{"json-schema metadata", func(d *capability.Definition) { d.Metadata = map[string]any{"json-schema": 1} }, "metadata.json-schema"},
		{"NaN", func(d *capability.Definition) { d.Metadata = map[string]any{"x": math.NaN()} }, "unsupported value: NaN"},
		{"bad implementation", func(d *capability.Definition) {
			d.Metadata = map[string]any{"rtfs": map[string]any{"implementation": "(fn [x] x) extra"}}
		}, "metadata.rtfs.implementation must be the source text of exactly one RTFS form"},
		{"data as verbatim", func(d *capability.Definition) {
			d.Metadata = map[string]any{"rtfs": map[string]any{"verbatim": map[string]any{"k": "[1 2]"}}}
		}, "metadata.rtfs.verbatim.k"},
		{"reserved rtfs key", func(d *capability.Definition) { d.Metadata = map[string]any{"rtfs": map[string]any{"name": "x"}} }, "metadata.rtfs.name cannot be written"},
		{"invalid URI", func(d *capability.Definition) { d.URI = "nope" }, `"nope" is not a valid capability URI`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			tt.edit(&d)
			var buf bytes.Buffer
			err := WriteCapability(&buf, d)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want one containing %q", err, tt.msg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q before failing", buf.String())
			}
		})
	}
}

func TestExportPath(t *testing.T) {
	tests := []struct {
		d    capability.Definition
		want string
	}{
		{capability.Definition{URI: "mcp:github/list_issues@1.0", Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "github", Tool: "list_issues"}}},
			"discovered/mcp/github/list_issues.rtfs"},
		{capability.Definition{URI: "mcp:slack/chat.postMessage@2.0"}, "discovered/mcp/slack/chat.postMessage.rtfs"},
		{capability.Definition{URI: "ossa:io/println@1.0", Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "println"}}}, "core/io/println.rtfs"},
		{capability.Definition{URI: "ossa:memory/kg_query@1.0", Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "agent-brain", Tool: "kg_query"}}}, "user/memory/kg_query.rtfs"},
		{capability.Definition{URI: "ossa:com-whatsapp/send_message@1.0", Provenance: &capability.Provenance{Method: "agentos_manifest"}}, "discovered/agentos/com-whatsapp/send_message.rtfs"},
		{capability.Definition{URI: "ossa:github/repo@1.0", Provenance: &capability.Provenance{Method: "graphql_introspection"}}, "discovered/graphql/github/repo.rtfs"},
		{capability.Definition{URI: "ossa:openweather-api/get_forecast@2.5", Metadata: map[string]any{"openapi": map[string]any{}}}, "discovered/openapi/openweather-api/get_forecast.rtfs"},
		{capability.Definition{URI: "ossa:petstore/list_pets@1.0", Provenance: &capability.Provenance{Method: "api_introspection"}}, "discovered/openapi/petstore/list_pets.rtfs"},
		{capability.Definition{URI: "ossa:text/summarize@1.0", Provenance: &capability.Provenance{Method: "llm_synthesis"}}, "generated/text/summarize.rtfs"},
		{capability.Definition{URI: "ossa:demo/hello@1.0", Provenance: &capability.Provenance{Method: "manual"}}, "user/demo/hello.rtfs"},
		{capability.Definition{URI: "ossa:security/scan@1.0"}, "user/security/scan.rtfs"},
		{capability.Definition{URI: "bad", Domain: "../..", Name: "a/b"}, "user/.._../a_b.rtfs"},
	}
	for _, tt := range tests {
		if got := ExportPath(tt.d); got != tt.want {
			t.Errorf("ExportPath(%s) = %s, want %s", tt.d.URI, got, tt.want)
		}
	}
}
