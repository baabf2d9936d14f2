package openapi

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
)

// FuzzImportOpenAPI feeds arbitrary bytes to Import: it must never panic nor
// hang, and whatever it imports must be valid (schemas compile, every $ref
// into the schema's own $defs, no validation error), so that the registry accepts it.
func FuzzImportOpenAPI(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"openapi: 3.0.0\npaths: {/a: {get: {responses: {'200': {content: {application/json: {schema: {$ref: '#'}}}}}}}}\n",
		"openapi: 3.1.0\nservers: [{url: 'http://x'}]\npaths: {/a/{b}: {post: {requestBody: {content: {a/json: {schema: {$ref: '#/paths'}}}}}}}}\n",
		"swagger: '2.0'\nhost: h\npaths: {/f: {get: {parameters: [{in: body, name: b, schema: {$ref: '#/definitions/X'}}]}}}\ndefinitions: {X: {items: {$ref: '#/definitions/X'}}}\n",
		"openapi: 3.0.0\nx: &a [*a, *a]\npaths: {/a: {get: {parameters: [{name: p, in: query, schema: {enum: *a}}]}}}\n",
		"openapi: 3.0.3\nservers: [{url: 'https://{h}.x/{p}', variables: {h: {enum: [a]}}}]\npaths: {'/{x}{y}': {get: {}}}\n",
		`{"openapi": "3.0.0", "paths": {"/": {"get": {"responses": {"200": {"$ref": "#/paths/~1/get/responses/200"}}}}}}`,
		`{"openapi": "3.0.0", "servers": [{"url": "https://x"}], "paths": {"/a": {"get": {"operationId": "a", "operationId": "b"}}}}`,
		"openapi: 3.0.0\nservers: [{url: 'https://x'}]\npaths: {/a: {get: {}}, /a: {post: {}}}\n",
		"{\"openapi\": \"3.0.0\", \"info\": {\"title\": \"\xff\\ud800\"}, \"paths\": {}}",
		refBomb(22),
		"openapi: 3.0.0\ninfo: {x-origin: [{format: openapi, url: 'https://h.x/a/b.json'}]}\nservers: [{url: '../v1/'}, {url: '//h.y'}, {url: ','}, {url: 'h.z:8/p'}]\npaths: {/a: {trace: {parameters: [{in: query, name: ''}, {in: header}]}}}\n",
		"openapi: 3.0.0\nservers: [{url: '/api/{v}'}]\ncomponents: {securitySchemes: {s: {type: apiKey, in: header, name: Authorization, x-amazon-apigateway-authtype: awsSigv4}, m: {type: mutualTLS}}}\nsecurity: [{s: [], m: []}, {m: []}]\npaths: {/a: {get: {}}}\n",
		"swagger: '2.0'\nbasePath: '/b a/%'\nschemes: [wss]\npaths: {/a: {get: {operationId: getHTTPThing}}}\n",
		"openapi: 3.1.0\nservers: [{url: 'https://x'}]\npaths: {/a: {post: {requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}, responses: {'200': {content: {application/json: {schema: {$ref: '#/components/schemas/L1', nullable: true}}}}}}}}\ncomponents: {schemas: {A: {properties: {s: {$ref: '#/components/schemas/A'}, t: {$ref: '#/components/schemas/A/properties/s', type: object}, 'a b/c~': {$ref: '#/components/schemas/a b~1c~0'}}}, 'a b/c~': {enum: [1]}, L1: {$ref: '#/components/schemas/L2'}, L2: {$ref: '#/components/schemas/L1'}}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			t.Skip("larger than the fuzz size guard (1 MiB)")
		}
		type outcome struct {
			res *Result
			err error
		}
		done := make(chan outcome, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		go func() {
			res, err := Import(ctx, "fuzz.yaml", data, Options{})
			done <- outcome{res, err}
		}()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("Import hangs on %q", data)
		}
		if o.err != nil {
			return
		}
		if !utf8.Valid(data) && !bytes.HasPrefix(data, []byte{0xfe, 0xff}) && !bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
			t.Fatalf("imported a document that is not valid UTF-8 (nor UTF-16 with a byte order mark): %q", data)
		}
		for i := range o.res.Definitions {
			d := &o.res.Definitions[i]
			if p := badRef(d.Input, "input"); p != "" {
				t.Fatalf("%s: bad $ref at %s", d.Name, p)
			}
			if p := badRef(d.Output, "output"); p != "" {
				t.Fatalf("%s: bad $ref at %s", d.Name, p)
			}
			for _, is := range capability.Validate(d) {
				if is.Severity == capability.SeverityError {
					t.Fatalf("%s: %s\ninput %q", d.Name, is, data)
				}
			}
		}
	})
}
