package rtfs

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReadRTFS feeds arbitrary bytes to the reader: it must never panic;
// every failure must say where it is; every type it reads must be written
// back by SchemaToType as a type that reads the same; and every capability
// it reads must survive a write and a second read unchanged.
func FuzzReadRTFS(f *testing.F) {
	// Seeds stay small (the fuzzer minimises what it finds interesting, and
	// minimising a 46 KB module takes minutes): whole small files, and the
	// first form of each module.
	corpus := filepath.Join("..", "..", "..", "shared", "corpus", "ccos")
	for _, rel := range []string{
		"brace-map/discovered/mcp/github/github-mcp_list_issues.rtfs",
		"brace-map/generated/demo.hello/capability.rtfs",
	} {
		if b, err := os.ReadFile(filepath.Join(corpus, filepath.FromSlash(rel))); err == nil {
			f.Add(b)
		}
	}
	for _, rel := range []string{"module/capabilities.rtfs", "paired/capabilities.rtfs"} {
		b, err := os.ReadFile(filepath.Join(corpus, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		if forms, err := Parse(rel, b); err == nil && len(forms) == 1 && len(forms[0].Items) > 1 {
			f.Add([]byte("(do\n  " + forms[0].Items[1].Text(b) + ")\n"))
		}
	}
	f.Add([]byte(`(capability "mcp.github.list_issues"
  :name "list_issues" :version "1.0.0" :provider "MCP" :permissions [:network.http] :effects [:network_request :mcp_call]
  :metadata {:mcp {:server_url "https://api.githubcopilot.com/mcp/" :server_name "github" :tool_name "list_issues"}
             :discovery {:method "mcp_introspection" :created_at "2025-10-23T21:35:43Z"}}
  :input-schema {
    :owner :string
    :labels [:vector :string] ;; optional
  }
  :output-schema [:vector :map]
  :implementation (fn [input] (call :ccos.capabilities.mcp.call :input input)))`))
	f.Add([]byte(`(do {:type "capability" :id "mcp.github.x" :metadata {:mcp_server_name "gh"} :input-schema [:map [:a :int?] [:* :any]]})`))
	f.Add([]byte(`(capability "demo.x" :uri "ossa:demo/x@1.0" :bindings {:cli {:command "x"}} :metadata {:json-schema {:input {:type "object"}}} :input-schema :map)`))
	f.Add([]byte(`(capability "a.b" :input-schema [:and [:union :string :nil] [:min-length 1]] :output-schema [:tuple :int [:enum 1 "x"]] :x '(1 2) :y #(+ % 1))`))
	f.Add([]byte(`(capability "a.b" :source_url "u" :metadata {:discovery {:source_url "v"} :mcp_x 1} :errors [{:code "E"}])`))
	f.Add([]byte("{:a \"\\u00e9\" :b ##Inf :c 1e5 #| c |# :d 2025-01-01T00:00:00Z}"))
	f.Add([]byte(`[:and [:map [:a :int] [:b [:union :string :nil]?] [:* :any]] [:non-empty]] [:map-of :uuid [:tuple :timestamp [:enum :x 1 nil]]] [:and :float [:in-range 0 1] [:= 0.5]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if forms, err := Parse("fuzz.rtfs", data); err == nil {
			for _, form := range forms {
				s, err := TypeToSchema(form)
				if err != nil {
					continue
				}
				// SchemaToType inverts TypeToSchema.
				text := SchemaToType(s)
				v, err := parseType(text)
				if err != nil {
					t.Fatalf("SchemaToType wrote %q, which does not parse: %v", text, err)
				}
				back, err := TypeToSchema(v)
				if err != nil || !reflect.DeepEqual(back, s) {
					t.Fatalf("type %s reads as %v; written back as %s it reads as %v (%v)", form.Text(data), s, text, back, err)
				}
			}
		}
		defs, failures, err := ReadCapabilities("fuzz.rtfs", data)
		if err != nil {
			return
		}
		for _, fl := range failures {
			if fl.File != "fuzz.rtfs" || fl.Line < 1 || fl.Column < 1 || fl.Reason == "" {
				t.Fatalf("failure without a position or reason: %#v", fl)
			}
		}
		for _, d := range defs {
			var buf bytes.Buffer
			if err := WriteCapability(&buf, d); err != nil {
				t.Fatalf("cannot write what was read: %v\n%#v", err, d)
			}
			again, failures, err := ReadCapabilities("again.rtfs", buf.Bytes())
			if err != nil || len(failures) > 0 || len(again) != 1 {
				t.Fatalf("cannot read what was written: %v %v (%d definitions)\n%s", err, failures, len(again), buf.String())
			}
			if !reflect.DeepEqual(again[0], d) {
				t.Fatalf("round trip changed the definition: %s\nwritten:\n%s", diffJSON(d, again[0]), buf.String())
			}
		}
	})
}
