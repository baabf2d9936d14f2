package httpbind_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/invoke/binding/httpbind"
)

// petSpec exercises every parameter location the OpenAPI importer records.
const petSpec = `
openapi: 3.0.3
info: {title: Pets, version: 1.2.0}
servers: [{url: https://pets.example.com/v1}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Pet-Key}
security: [{key: []}]
paths:
  /owners/{owner}/pets:
    post:
      operationId: createPet
      parameters:
        - {name: owner, in: path, required: true, schema: {type: string}}
        - {name: dry-run, in: query, schema: {type: boolean}}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Request-Id, in: header, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string}
                age: {type: integer}
      responses:
        "201":
          description: created
          content: {application/json: {schema: {type: object}}}
        "404": {description: owner not found}
        "429": {description: slow down}
`

func TestOpenAPIImportedBinding(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() == "/v1/owners/nobody/pets" {
			http.Error(w, `{"message": "no such owner"}`, http.StatusNotFound)
			return
		}
		if r.URL.EscapedPath() == "/v1/owners/busy/pets" {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id": 1}`))
	})
	res, err := openapi.Import(context.Background(), "pets.yaml", []byte(petSpec), openapi.Options{BaseURL: rec.srv.URL + "/v1"})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(res.Definitions) != 1 {
		t.Fatalf("imported %d definitions (failures %v), want 1", len(res.Definitions), res.Failures)
	}
	d := &res.Definitions[0]
	hb := d.Bindings.HTTP
	if hb == nil || hb.Auth == nil {
		t.Fatalf("the imported definition has no http binding with auth: %+v", d.Bindings)
	}
	env := map[string]string{hb.Auth.Env: "pet-secret"}
	b := httpbind.New(httpbind.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})

	// Field names as the importer chose them, by parameter.
	fields := map[string]string{}
	for f, loc := range hb.Extra[httpbind.ExtraParameters].(map[string]any) {
		m := loc.(map[string]any)
		name, _ := m["name"].(string)
		fields[m["in"].(string)+":"+name] = f
	}
	for _, k := range []string{"path:owner", "query:dry-run", "query:tags", "header:X-Request-Id", "cookie:session", "body:name", "body:age"} {
		if fields[k] == "" {
			t.Fatalf("x-parameters records no field for %s: %v", k, hb.Extra[httpbind.ExtraParameters])
		}
	}
	input := map[string]any{
		fields["path:owner"]:          "ada/../x",
		fields["query:dry-run"]:       true,
		fields["query:tags"]:          []any{"cute", "small dog"},
		fields["header:X-Request-Id"]: "req-1",
		fields["cookie:session"]:      "s1",
		fields["body:name"]:           `Rex", "admin": true`,
		fields["body:age"]:            int64(3),
	}
	out := mustInvoke(t, b, d, input)
	if !reflect.DeepEqual(out.Output, map[string]any{"id": int64(1)}) || out.Meta["status"] != 201 {
		t.Errorf("outcome = %v %v", out.Output, out.Meta)
	}
	s := rec.got(t)
	if s.method != "POST" || s.rawPath != "/v1/owners/ada%2F..%2Fx/pets" {
		t.Errorf("request = %s %s", s.method, s.rawPath)
	}
	if want := (url.Values{"dry-run": {"true"}, "tags": {"cute", "small dog"}}); !reflect.DeepEqual(s.query, want) {
		t.Errorf("query = %v, want %v", s.query, want)
	}
	if s.header.Get("X-Request-Id") != "req-1" || s.header.Get("Cookie") != "session=s1" || s.header.Get("X-Pet-Key") != "pet-secret" {
		t.Errorf("headers = %v", s.header)
	}
	if got, want := decodeJSON(t, s.body), map[string]any{"name": `Rex", "admin": true`, "age": 3.0}; !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}

	// The importer's declared errors are what non-2xx statuses map to.
	input[fields["path:owner"]] = "nobody"
	_, err = invokeHTTP(t, b, d, input)
	if e := invokeError(t, err); e.Code != declaredCode(d, "HTTP_404") || e.Retryable {
		t.Errorf("404: %v, want the declared %s", e, declaredCode(d, "HTTP_404"))
	}
	input[fields["path:owner"]] = "busy"
	_, err = invokeHTTP(t, b, d, input)
	if e := invokeError(t, err); e.Code != declaredCode(d, "HTTP_429") || !e.Retryable {
		t.Errorf("429: %v, want the declared retryable %s", e, declaredCode(d, "HTTP_429"))
	}
}

// declaredCode returns the first declared code starting with prefix.
func declaredCode(d *capability.Definition, prefix string) string {
	for _, e := range d.Errors {
		if len(e.Code) >= len(prefix) && e.Code[:len(prefix)] == prefix {
			return e.Code
		}
	}
	return "(none declared with prefix " + prefix + ")"
}
