package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
)

var testNow = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }

// importFile imports a testdata spec and checks what every import must
// give: valid JSON Schema 2020-12 whose $refs point into its own $defs,
// definitions without
// validation errors, unique names.
func importFile(t *testing.T, name string, opts Options) *Result {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return importBytes(t, "testdata/"+name, data, opts)
}

func importBytes(t *testing.T, source string, data []byte, opts Options) *Result {
	t.Helper()
	if opts.Now == nil {
		opts.Now = testNow
	}
	res, err := Import(context.Background(), source, data, opts)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	checkDefinitions(t, res.Definitions)
	return res
}

func checkDefinitions(t *testing.T, defs []capability.Definition) {
	t.Helper()
	names := map[string]bool{}
	for i := range defs {
		d := &defs[i]
		if names[d.Name] {
			t.Errorf("duplicate name %s", d.Name)
		}
		names[d.Name] = true
		for _, s := range []struct {
			name   string
			schema capability.Schema
		}{{"input", d.Input}, {"output", d.Output}} {
			if p := badRef(s.schema, s.name); p != "" {
				t.Errorf("%s: bad $ref at %s", d.Name, p)
			}
			if _, issues := capability.CompileSchema(s.schema); len(issues) > 0 {
				t.Errorf("%s: %s is not valid JSON Schema: %v", d.Name, s.name, issues)
			}
		}
		for _, is := range capability.Validate(d) {
			if is.Severity == capability.SeverityError {
				t.Errorf("%s: %s", d.Name, is)
			}
		}
	}
}

func names(defs []capability.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// asJSON renders v canonically, to compare schemas and bindings as JSON.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	var g any
	if err := json.Unmarshal([]byte(asJSON(t, got)), &g); err != nil {
		t.Fatal(err)
	}
	if asJSON(t, g) != asJSON(t, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, asJSON(t, g), asJSON(t, w))
	}
}

// Pet is NewPet and an id; every capability that returns pets carries
// them as $defs.
const (
	newPetSchema = `{"type": "object", "required": ["name"], "properties": {
		"name": {"type": "string", "examples": ["Rex"]},
		"tag": {"type": ["string", "null"]},
		"owner": {"anyOf": [{"allOf": [{"$ref": "#/$defs/Owner"}]}, {"type": "null"}]}}}`
	ownerSchema = `{"type": "object", "properties": {"name": {"type": "string"}}}`
	petSchema   = `{"allOf": [{"$ref": "#/$defs/NewPet"},
		{"type": "object", "required": ["id"], "properties": {"id": {"type": "integer", "format": "int64"}}}]}`
	petDefs = `"$defs": {"Pet": ` + petSchema + `, "NewPet": ` + newPetSchema + `, "Owner": ` + ownerSchema + `}`
)

func TestImportPetstore30(t *testing.T) {
	res := importFile(t, "petstore30.yaml", Options{})
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %v", res.Failures)
	}
	want := []string{"list_pets", "create_pet", "show_pet_by_id", "delete_pet", "update_pet", "upload_photo", "get_tree_nodes", "update_pet_2"}
	if got := names(res.Definitions); !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if res.Operations != 8 || res.Domain != "swagger-petstore" || res.Title != "Swagger Petstore" || res.Version != "1.2.0" || res.SpecVersion != "3.0.3" {
		t.Errorf("result: %+v", res)
	}
	auth := `{"type": "api_key", "location": "header", "param_name": "X-API-Key", "env": "SWAGGER_PETSTORE_API_KEY", "x-scheme": "api_key"}`

	list := find(t, res.Definitions, "list_pets")
	if list.URI != "ossa:swagger-petstore/list_pets@1.2" || list.Version != "1.2.0" || list.Title != "List all pets" || list.Stability != "stable" {
		t.Errorf("list_pets identity: %s %s %q %s", list.URI, list.Version, list.Title, list.Stability)
	}
	if list.DocumentationURL != "https://petstore.example/docs" {
		t.Errorf("list_pets documentation_url %q (the document's externalDocs)", list.DocumentationURL)
	}
	// The header parameter X-API-Key is the auth's: it is not an input.
	sameJSON(t, "list_pets input", list.Input, `{"type": "object", "properties": {
		"limit": {"type": "integer", "format": "int32", "minimum": 1, "exclusiveMaximum": 100, "description": "How many items to return at one time (max 100)"},
		"tags": {"type": "array", "items": {"type": "string"}},
		"X_Request_ID": {"type": "string", "description": "Correlates the request in the logs"}}}`)
	sameJSON(t, "list_pets output", list.Output, `{"type": "array", "items": {"$ref": "#/$defs/Pet"}, `+petDefs+`}`)
	sameJSON(t, "list_pets errors", list.Errors, `[
		{"code": "HTTP_429_TOO_MANY_REQUESTS", "description": "Too many requests", "retryable": true, "x-http-status": 429},
		{"code": "HTTP_ERROR", "description": "unexpected error", "retryable": false}]`)
	sameJSON(t, "list_pets http", list.Bindings.HTTP, `{"method": "GET", "url": "https://api.petstore.example/v1/pets",
		"headers": {"X-Request-ID": "{X_Request_ID}"}, "auth": `+auth+`,
		"x-parameters": {"limit": {"in": "query", "name": "limit"},
			"tags": {"in": "query", "name": "tags", "style": "form", "explode": true},
			"X_Request_ID": {"in": "header", "name": "X-Request-ID"}}}`)
	if !reflect.DeepEqual(list.Keywords, []string{"pets", "read"}) {
		t.Errorf("keywords %v", list.Keywords)
	}
	sameJSON(t, "list_pets metadata", list.Metadata, `{"openapi": {"base_url": "https://api.petstore.example/v1",
		"endpoint_method": "GET", "endpoint_path": "/pets", "api_version": "1.2.0", "openapi_version": "3.0.3",
		"operation_id": "listPets", "auth_type": "api_key", "auth_location": "header", "auth_param_name": "X-API-Key",
		"response_content_type": "application/json"}}`)
	sameJSON(t, "list_pets provenance", list.Provenance, `{"method": "api_introspection", "source_url": "testdata/petstore30.yaml",
		"created_at": "2025-01-02T03:04:05Z", "capability_type": "specialized_http_api", "introspector_version": "caphub-openapi/1"}`)
	if !reflect.DeepEqual(list.Effects, []string{"network_request", "auth_required"}) || !reflect.DeepEqual(list.Permissions, []string{"network.http"}) {
		t.Errorf("effects %v, permissions %v", list.Effects, list.Permissions)
	}
	if !reflect.DeepEqual(list.Domains, []string{"swagger.petstore", "swagger.petstore.pets"}) || !reflect.DeepEqual(list.Categories, []string{"crud.read"}) {
		t.Errorf("inferred domains %v, categories %v", list.Domains, list.Categories)
	}

	// A required JSON object body without clashes (the component NewPet)
	// is merged into the input; the output is the component Pet, hoisted.
	create := find(t, res.Definitions, "create_pet")
	sameJSON(t, "create_pet input", create.Input, `{"type": "object", "required": ["name"], "properties": {
		"name": {"type": "string", "examples": ["Rex"]},
		"tag": {"type": ["string", "null"]},
		"owner": {"anyOf": [{"allOf": [{"$ref": "#/$defs/Owner"}]}, {"type": "null"}]}},
		"$defs": {"Owner": `+ownerSchema+`}}`)
	sameJSON(t, "create_pet output", create.Output, petSchema[:len(petSchema)-1]+`, "$defs": {"NewPet": `+newPetSchema+`, "Owner": `+ownerSchema+`}}`)
	sameJSON(t, "create_pet http", create.Bindings.HTTP, `{"method": "POST", "url": "https://api.petstore.example/v1/pets",
		"headers": {"Content-Type": "application/json"}, "auth": `+auth+`,
		"x-body": {"content_type": "application/json", "fields": ["name", "owner", "tag"], "alternatives": ["application/xml"]},
		"x-parameters": {"name": {"in": "body", "name": "name"}, "owner": {"in": "body", "name": "owner"}, "tag": {"in": "body", "name": "tag"}}}`)
	sameJSON(t, "create_pet errors", create.Errors, `[
		{"code": "HTTP_400_BAD_REQUEST", "description": "Invalid pet", "retryable": false, "x-http-status": 400},
		{"code": "HTTP_503_SERVICE_UNAVAILABLE", "description": "Try again later", "retryable": true, "x-http-status": 503}]`)

	show := find(t, res.Definitions, "show_pet_by_id")
	sameJSON(t, "show_pet_by_id input", show.Input, `{"type": "object", "required": ["petId"], "properties": {"petId": {"type": "string", "description": "The id of the pet"}}}`)
	if show.DocumentationURL != "https://petstore.example/docs/pets#show" || show.Bindings.HTTP.URL != "https://api.petstore.example/v1/pets/{petId}" {
		t.Errorf("show_pet_by_id: %s %s", show.DocumentationURL, show.Bindings.HTTP.URL)
	}
	sameJSON(t, "show_pet_by_id errors", show.Errors, `[{"code": "HTTP_404_NOT_FOUND", "description": "The pet was not found", "retryable": false, "x-http-status": 404}]`)

	// deprecated: true, security: [] (no auth), 204 without body.
	del := find(t, res.Definitions, "delete_pet")
	if del.Stability != capability.StabilityDeprecated || del.MigrationGuide == "" || del.Bindings.HTTP.Auth != nil || len(del.Effects) != 1 {
		t.Errorf("delete_pet: stability %s, migration %q, auth %+v, effects %v", del.Stability, del.MigrationGuide, del.Bindings.HTTP.Auth, del.Effects)
	}
	sameJSON(t, "delete_pet output", del.Output, `{"description": "HTTP 204: the response has no body"}`)
	if _, ok := del.Metadata["openapi"].(map[string]any)["auth_type"]; ok {
		t.Errorf("delete_pet has auth metadata: %v", del.Metadata)
	}

	// A body property petId clashes with the path parameter: the body is one field.
	upd := find(t, res.Definitions, "update_pet")
	sameJSON(t, "update_pet input", upd.Input, `{"type": "object", "required": ["petId", "body"], "properties": {
		"petId": {"type": "string", "description": "The id of the pet"},
		"body": {"type": "object", "properties": {"petId": {"type": "string"}, "name": {"type": "string"}}}}}`)
	sameJSON(t, "update_pet x-body", upd.Bindings.HTTP.Extra[extraBody], `{"content_type": "application/json", "field": "body"}`)
	sameJSON(t, "update_pet x-parameters", upd.Bindings.HTTP.Extra[extraParameters], `{"petId": {"in": "path", "name": "petId"}, "body": {"in": "body"}}`)

	// A non-JSON optional body is one optional field.
	photo := find(t, res.Definitions, "upload_photo")
	sameJSON(t, "upload_photo input", photo.Input, `{"type": "object", "required": ["petId"], "properties": {
		"petId": {"type": "string"}, "body": {"type": "string", "format": "binary"}}}`)
	if photo.Bindings.HTTP.Headers["Content-Type"] != "application/octet-stream" {
		t.Errorf("upload_photo headers %v", photo.Bindings.HTTP.Headers)
	}

	// Node → children → Node: recursive, Node hoisted and in $defs.
	tree := find(t, res.Definitions, "get_tree_nodes")
	node := `{"type": "object", "properties": {
		"value": {"type": "string"},
		"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}`
	sameJSON(t, "get_tree_nodes output", tree.Output, node[:len(node)-1]+`, "$defs": {"Node": `+node+`}}`)
	// The path parameter tree-id becomes the field tree_id.
	if tree.Bindings.HTTP.URL != "https://api.petstore.example/v1/trees/{tree_id}/nodes" {
		t.Errorf("get_tree_nodes url %s", tree.Bindings.HTTP.URL)
	}
	sameJSON(t, "get_tree_nodes x-parameters", tree.Bindings.HTTP.Extra[extraParameters], `{"tree_id": {"in": "path", "name": "tree-id"}}`)

	// The second updatePet gets a suffix; its undeclared path variable is a required string.
	upd2 := find(t, res.Definitions, "update_pet_2")
	sameJSON(t, "update_pet_2 input", upd2.Input, `{"type": "object", "required": ["petId"], "properties": {
		"petId": {"type": "string", "description": "path parameter petId (not declared by the operation)"}}}`)
	if upd2.URI != "ossa:swagger-petstore/update_pet_2@1.2" {
		t.Errorf("update_pet_2 uri %s", upd2.URI)
	}
}

func TestImportOpenAPI31(t *testing.T) {
	// The server URL is relative and the document a file without
	// x-origin: the operation imports with a binding marked base-unknown,
	// and one warning says to pass --base-url.
	res := importFile(t, "weather31.json", Options{})
	if len(res.Definitions) != 1 || len(res.Failures) != 0 {
		t.Fatalf("without a base URL: %d definitions, failures %v", len(res.Definitions), res.Failures)
	}
	hb := res.Definitions[0].Bindings.HTTP
	sameJSON(t, "base unknown", hb.Extra[extraBaseUnknown], `{"server": "/api", "path": "/api",
		"reason": "it is relative and the document was read from a file and its info.x-origin gives no web address"}`)
	if hb.URL != "https://base-url-unknown.invalid/api/forecast/{city}" || res.Definitions[0].Metadata["openapi"].(map[string]any)["base_url"] != nil {
		t.Errorf("base unknown: url %s, metadata %v", hb.URL, res.Definitions[0].Metadata["openapi"])
	}
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[1], `the API's address is unknown: server URL "/api"`) ||
		!strings.Contains(res.Warnings[1], "1 operation was imported") || !strings.Contains(res.Warnings[1], "--base-url (Options.BaseURL) with the API's address, e.g. https://api.example.com/api") {
		t.Errorf("warnings %q", res.Warnings)
	}

	res = importFile(t, "weather31.json", Options{BaseURL: "https://weather.example/", Domain: "weather"})
	if len(res.Failures) != 0 || len(res.Definitions) != 1 {
		t.Fatalf("failures %v", res.Failures)
	}
	if !reflect.DeepEqual(res.Warnings, []string{"webhooks ignored (1): they describe requests the API sends, not operations to call"}) {
		t.Errorf("warnings %v", res.Warnings)
	}
	d := res.Definitions[0]
	if d.URI != "ossa:weather/get_forecast@2.0" || d.Version != "2.0.0" || res.SpecVersion != "3.1.0" {
		t.Errorf("identity %s %s (info.version v2)", d.URI, d.Version)
	}
	sameJSON(t, "input", d.Input, `{"type": "object", "required": ["city"], "properties": {
		"city": {"type": "string"},
		"days": {"type": ["integer", "null"], "minimum": 1, "examples": [3]}}}`)
	// The $ref's sibling description applies (3.1); Alert.parent refers
	// to Alert with its own sibling description.
	sameJSON(t, "output", d.Output, `{"type": "object", "description": "the forecast", "required": ["city"], "properties": {
		"city": {"type": "string"},
		"temperature": {"type": ["number", "null"], "exclusiveMinimum": -273.15},
		"unit": {"const": "celsius"},
		"alerts": {"type": "array", "items": {"$ref": "#/$defs/Alert"}}},
		"$defs": {"Alert": {"type": "object", "properties": {
			"level": {"enum": ["low", "high"]},
			"parent": {"$ref": "#/$defs/Alert", "description": "the alert this one refines"}}}}}`)
	sameJSON(t, "errors", d.Errors, `[
		{"code": "HTTP_404_NOT_FOUND", "description": "Unknown city", "retryable": false, "x-http-status": 404},
		{"code": "HTTP_5XX_SERVER_ERROR", "description": "Server trouble", "retryable": false, "x-http-status": "5XX"}]`)
	sameJSON(t, "http", d.Bindings.HTTP, `{"method": "GET", "url": "https://weather.example/forecast/{city}",
		"auth": {"type": "bearer", "location": "header", "param_name": "Authorization", "env": "WEATHER_TOKEN", "x-scheme": "bearer"},
		"x-parameters": {"city": {"in": "path", "name": "city"}, "days": {"in": "query", "name": "days"}}}`)
	if !reflect.DeepEqual(d.Keywords, []string{"weather", "forecast"}) {
		t.Errorf("keywords %v", d.Keywords)
	}
	sameJSON(t, "metadata", d.Metadata, `{"openapi": {"base_url": "https://weather.example", "endpoint_method": "GET",
		"endpoint_path": "/forecast/{city}", "api_version": "v2", "openapi_version": "3.1.0", "operation_id": "get-forecast",
		"auth_type": "bearer", "auth_location": "header", "auth_param_name": "Authorization", "response_content_type": "application/json"}}`)

	// Fetched from a URL, the relative server resolves against it.
	data, _ := os.ReadFile("testdata/weather31.json")
	res = importBytes(t, "https://specs.example/weather/openapi.json", data, Options{})
	if len(res.Definitions) != 1 || res.Definitions[0].Bindings.HTTP.URL != "https://specs.example/api/forecast/{city}" {
		t.Errorf("relative server against the document URL: %v %v", names(res.Definitions), res.Failures)
	}
}

func TestImportSwagger2(t *testing.T) {
	res := importFile(t, "files20.yaml", Options{})
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %v", res.Failures)
	}
	if got := names(res.Definitions); !reflect.DeepEqual(got, []string{"list_files", "create_file", "upload_content"}) {
		t.Fatalf("names %v", got)
	}
	auth := `{"type": "basic", "location": "header", "param_name": "Authorization", "env": "FILES_API_CREDENTIALS", "x-scheme": "basicAuth"}`
	file := `{"type": "object", "properties": {
		"id": {"type": "string"},
		"size": {"type": "integer", "exclusiveMinimum": 0},
		"owner": {"$ref": "#/$defs/User"},
		"checksum": {"type": ["string", "null"]}}}`
	userDef := `"User": {"type": "object", "properties": {"name": {"type": "string"}}}`

	list := res.Definitions[0]
	// info.version is a date: the capability version is 1.0.0.
	if list.URI != "ossa:files-api/list_files@1.0" || list.Version != "1.0.0" || res.SpecVersion != "2.0" {
		t.Errorf("identity %s %s", list.URI, list.Version)
	}
	sameJSON(t, "list_files input", list.Input, `{"type": "object", "required": ["X_Trace"], "properties": {
		"ids": {"type": "array", "items": {"type": "string"}},
		"X_Trace": {"type": "string"}}}`)
	sameJSON(t, "list_files output", list.Output, `{"type": "array", "items": {"$ref": "#/$defs/File"}, "$defs": {"File": `+file+`, `+userDef+`}}`)
	sameJSON(t, "list_files http", list.Bindings.HTTP, `{"method": "GET", "url": "https://files.example.com/v1/files",
		"headers": {"X-Trace": "{X_Trace}"}, "auth": `+auth+`,
		"x-parameters": {"ids": {"in": "query", "name": "ids", "style": "form", "explode": true}, "X_Trace": {"in": "header", "name": "X-Trace"}}}`)
	sameJSON(t, "list_files metadata", list.Metadata, `{"openapi": {"base_url": "https://files.example.com/v1", "endpoint_method": "GET",
		"endpoint_path": "/files", "api_version": "2023-05-01", "openapi_version": "2.0", "operation_id": "listFiles",
		"auth_type": "basic", "auth_location": "header", "auth_param_name": "Authorization", "response_content_type": "application/json"}}`)

	// in: body with an object schema: merged.
	create := res.Definitions[1]
	sameJSON(t, "create_file input", create.Input, `{"type": "object", "required": ["X_Trace"], "properties": {
		"X_Trace": {"type": "string"},
		"id": {"type": "string"},
		"size": {"type": "integer", "exclusiveMinimum": 0},
		"owner": {"$ref": "#/$defs/User"},
		"checksum": {"type": ["string", "null"]}}, "$defs": {`+userDef+`}}`)
	sameJSON(t, "create_file output", create.Output, file[:len(file)-1]+`, "$defs": {`+userDef+`}}`)
	sameJSON(t, "create_file errors", create.Errors, `[{"code": "HTTP_404_NOT_FOUND", "description": "No such file", "retryable": false, "x-http-status": 404}]`)
	sameJSON(t, "create_file x-body", create.Bindings.HTTP.Extra[extraBody], `{"content_type": "application/json", "fields": ["checksum", "id", "owner", "size"]}`)

	// formData with a file: multipart, fields merged, type: file → binary string.
	up := res.Definitions[2]
	sameJSON(t, "upload_content input", up.Input, `{"type": "object", "required": ["id", "data"], "properties": {
		"id": {"type": "string"},
		"data": {"type": "string", "format": "binary"},
		"note": {"type": "string", "maxLength": 200}}}`)
	sameJSON(t, "upload_content http", up.Bindings.HTTP, `{"method": "PUT", "url": "https://files.example.com/v1/files/{id}/content",
		"headers": {"Content-Type": "multipart/form-data"}, "auth": `+auth+`,
		"x-body": {"content_type": "multipart/form-data", "fields": ["data", "note"]},
		"x-parameters": {"id": {"in": "path", "name": "id"}, "data": {"in": "body", "name": "data"}, "note": {"in": "body", "name": "note"}}}`)
	sameJSON(t, "upload_content errors", up.Errors, `[{"code": "HTTP_502_BAD_GATEWAY", "description": "Bad gateway", "retryable": true, "x-http-status": 502}]`)
}

func TestImportBrokenOperation(t *testing.T) {
	res := importFile(t, "broken.yaml", Options{})
	if got := names(res.Definitions); !reflect.DeepEqual(got, []string{"get_a", "post_c"}) {
		t.Errorf("imported %v, want get_a and post_c", got)
	}
	want := capability.ImportFailure{
		Item:   "GET /b (getB)",
		Reason: `responses.200: $ref "#/components/schemas/Nope" points at nothing (no "Nope" there): define it, or fix the reference`,
		File:   "testdata/broken.yaml", Line: 19, Column: 5,
	}
	if len(res.Failures) != 1 || res.Failures[0] != want {
		t.Errorf("failures %+v\nwant %+v", res.Failures, want)
	}
	if res.Operations != 3 {
		t.Errorf("operations %d", res.Operations)
	}
}

// A JSON document's failures carry positions too.
func TestImportJSONFailurePosition(t *testing.T) {
	doc := `{
  "openapi": "3.0.1",
  "info": {"title": "J", "version": "1.0.0"},
  "servers": [{"url": "https://j.example"}],
  "paths": {
    "/ok": {"get": {"responses": {"200": {"description": "ok"}}}},
    "/bad": {
      "get": {"responses": {"200": {"description": "ok"}}},
      "post": {"requestBody": {"$ref": "#/components/requestBodies/Missing"}, "responses": {"204": {"description": "ok"}}}
    }
  }
}`
	res := importBytes(t, "j.json", []byte(doc), Options{})
	if len(res.Failures) != 1 {
		t.Fatalf("failures %v", res.Failures)
	}
	f := res.Failures[0]
	if f.Item != "POST /bad" || f.Line != 9 || f.Column != 7 || !strings.Contains(f.Reason, `requestBody: $ref "#/components/requestBodies/Missing" points at nothing`) {
		t.Errorf("failure %+v", f)
	}
	if got := names(res.Definitions); !reflect.DeepEqual(got, []string{"get_bad", "get_ok"}) {
		t.Errorf("names %v", got)
	}
}

// A document with a key written twice (json.Unmarshal kept the last, the
// YAML converter too), invalid UTF-8 or a lone surrogate is refused whole,
// naming the key's path and position; it is not "not OpenAPI".
func TestImportRefusesAmbiguousText(t *testing.T) {
	jsonDup := "{\n  \"openapi\": \"3.0.0\",\n  \"info\": {\"title\": \"D\", \"version\": \"1.0.0\"},\n  \"paths\": {\n    \"/a\": {\"get\": {\"operationId\": \"first\",\n      \"operationId\": \"second\", \"responses\": {}}}\n  }\n}"
	yamlDup := "openapi: 3.0.0\ninfo: {title: D, version: 1.0.0}\npaths:\n  /a:\n    get: {responses: {}}\ncomponents:\n  schemas:\n    A: {type: string}\n    B: {type: string}\n    A: {type: integer}\n"
	yamlSeq := "openapi: 3.0.0\ninfo: {title: D, version: 1.0.0}\npaths:\n  /a:\n    get:\n      parameters:\n        - {name: p, in: query}\n        - {name: q, in: query, name: r}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"JSON", jsonDup, `d.json:6:7: paths./a.get.operationId: key "operationId" is already defined at line 5: remove one of them`},
		{"escaped JSON key", `{"openapi": "3.0.0", "info": {}, "paths": {}, "paths": {}}`, `d.json:1:47: paths: key "paths" is already defined at line 1`},
		{"JSON invalid UTF-8", "{\"openapi\": \"3.0.0\", \"info\": {\"title\": \"\xff\"}}", `d.json:1:41: info.title: invalid UTF-8 byte 0xFF`},
		{"JSON lone surrogate", `{"openapi": "3.0.0", "info": {"title": "\ud800"}}`, `d.json:1:41: info.title: \uD800 is half of a UTF-16 surrogate pair`},
		{"YAML", yamlDup, `d.json:10:5: components.schemas.A: key "A" is already defined at line 8: remove one of them`},
		{"YAML in a list", yamlSeq, `d.json:8:32: paths./a.get.parameters[1].name: key "name" is already defined at line 8`},
		{"YAML invalid UTF-8", "openapi: 3.0.0\ninfo:\n  title: \"a\xfe\"\n", `d.json:3:12: invalid UTF-8 byte 0xFE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import(context.Background(), "d.json", []byte(tc.doc), Options{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || errors.Is(err, ErrNotOpenAPI) {
				t.Errorf("got %v\nwant %s…", err, tc.want)
			}
		})
	}
	// The same key in sibling mappings, and a merge key overriding one, are fine.
	ok := "openapi: 3.0.0\ninfo: {title: D, version: 1.0.0}\nservers: [{url: 'https://d.example'}]\nx-base: &b {description: ok}\npaths:\n  /a: {get: {responses: {'200': {<<: *b, description: mine}}}}\n  /b: {get: {responses: {'200': {description: ok}}}}\n"
	if res := importBytes(t, "ok.yaml", []byte(ok), Options{}); len(res.Definitions) != 2 {
		t.Errorf("definitions %v, failures %v", names(res.Definitions), res.Failures)
	}
}

func TestNotOpenAPI(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", "empty"},
		{"yaml list", "- a\n- b\n", "not a YAML mapping"},
		{"no version field", "info: {title: x}\npaths: {}\n", `expected a top-level "openapi" field (3.0.x or 3.1.x) or "swagger": "2.0"`},
		{"openapi 4", "openapi: 4.0.0\n", `openapi is "4.0.0"`},
		{"swagger 1.2", `{"swagger": "1.2"}`, `swagger is "1.2"`},
		{"bad json", `{"openapi": `, "not valid JSON"},
		{"bad yaml", "openapi: [\n", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import(context.Background(), "x.yaml", []byte(tc.doc), Options{})
			if !errors.Is(err, ErrNotOpenAPI) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.yaml: ") {
				t.Errorf("error %v, want ErrNotOpenAPI mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := Import(context.Background(), "x", []byte("openapi: 3.0.0\n"), Options{Domain: "Bad Domain"}); err == nil || !strings.Contains(err.Error(), "bad-domain") {
		t.Errorf("invalid --domain: %v", err)
	}
	if _, err := Import(context.Background(), "x", []byte("openapi: 3.0.0\n"), Options{BaseURL: "api.example.com"}); err == nil {
		t.Error("a relative base URL must be refused")
	}
	// A document with no operations is an import of nothing, not an error.
	res, err := Import(context.Background(), "x", []byte("openapi: 3.1.0\ninfo: {title: T, version: '1'}\n"), Options{})
	if err != nil || len(res.Definitions)+len(res.Failures) != 0 {
		t.Errorf("empty document: %v %v", res, err)
	}
}

// Circular references never hang and leave no $ref, whatever their shape.
func TestCircularReferences(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Cycles, version: 0.1.0}
servers: [{url: 'https://c.example'}]
paths:
  /x:
    post:
      operationId: x
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/A'}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Loop1'}
  /y:
    get:
      operationId: 'y'
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/B'}
components:
  schemas:
    A:
      type: object
      properties:
        b: {$ref: '#/components/schemas/B'}
        self: {$ref: '#/components/schemas/A'}
    B:
      type: array
      nullable: true
      items: {$ref: '#/components/schemas/A'}
    Loop1: {$ref: '#/components/schemas/Loop2'}
    Loop2: {$ref: '#/components/schemas/Loop1'}
`
	done := make(chan *Result)
	go func() { done <- importBytes(t, "cycles.yaml", []byte(doc), Options{}) }()
	var res *Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("import of circular references hangs")
	}
	if len(res.Failures) != 0 || len(res.Definitions) != 2 {
		t.Fatalf("failures %v", res.Failures)
	}
	// Recursive schemas stay recursive: each capability carries the
	// components it reaches under $defs. A loop of bare $refs (Loop1 →
	// Loop2 → Loop1) describes no value: it accepts any.
	x := res.Definitions[0]
	defsAB := `"$defs": {
		"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}, "self": {"$ref": "#/$defs/A"}}},
		"B": {"type": ["array", "null"], "items": {"$ref": "#/$defs/A"}}}`
	sameJSON(t, "x input", x.Input, `{"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}, "self": {"$ref": "#/$defs/A"}}, `+defsAB+`}`)
	sameJSON(t, "x output", x.Output, `{"$comment": "caphub: #/components/schemas/Loop1 is a loop of $refs that never reaches a schema: it accepts any value"}`)
	// An output that is a component is that component's schema, hoisted
	// to the root.
	y := res.Definitions[1]
	sameJSON(t, "y output", y.Output, `{"type": ["array", "null"], "items": {"$ref": "#/$defs/A"}, `+defsAB+`}`)
	// The recursion validates values of any depth.
	in, issues := capability.CompileSchema(x.Input)
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	for doc, ok := range map[string]bool{
		`{"self": {"self": {"b": [{"b": null, "self": {}}]}}}`: true,
		`{"self": {"self": {"b": [{"b": 3}]}}}`:                false,
	} {
		var v any
		json.Unmarshal([]byte(doc), &v)
		if err := in.Validate(v); (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", doc, err == nil, ok, err)
		}
	}
}

// Operations caphub cannot import are failures and the rest imports.
func TestImportFailuresAndWarnings(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Mixed, version: 2}
servers: [{url: 'https://m.example/{version}', variables: {version: {default: v1}}}]
components:
  securitySchemes:
    cookie: {type: apiKey, in: cookie, name: session}
    key: {type: apiKey, in: query, name: api_key}
    oauth: {type: oauth2, flows: {}}
security:
  - cookie: []
  - oauth: [read, write]
paths:
  /echo:
    trace:
      operationId: traceEcho
      parameters: [{name: hop, in: query, schema: {type: string}}]
      responses: {'200': {description: ok, content: {message/http: {schema: {type: string}}}}}
    get:
      security: [{key: []}]
      parameters:
        - {name: api_key, in: query, schema: {type: string}}
        - {name: q, in: query, required: true, schema: {type: string}}
      responses: {'201': {description: created}, '200': {description: ok, content: {text/plain: {schema: {type: string}}}}}
  /ext:
    get:
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: 'common.yaml#/Thing'}}}}
  /bad-param:
    get:
      parameters: [{in: query}, {in: header, name: ''}, {in: query, name: q, schema: {type: string}}]
      responses: {default: {description: whatever, content: {application/json: {schema: {type: object}}}}}
  /missing-in:
    get:
      parameters: [{name: q}]
      responses: {'204': {description: ok}}
  /cookie:
    get:
      security: [{cookie: []}]
      responses: {'204': {description: ok}}
  /default:
    get:
      responses: {default: {description: whatever, content: {application/json: {schema: {type: object}}}}}
  /bad-header:
    get:
      parameters: [{name: 'Bad Header', in: header, schema: {type: string}}]
      responses: {'204': {description: ok}}
    patch:
      parameters: [{name: 'Bad Header', in: header, schema: {type: string}}]
      responses: {'204': {description: ok}}
`
	res := importBytes(t, "mixed.yaml", []byte(doc), Options{})
	reasons := map[string]string{}
	for _, f := range res.Failures {
		reasons[f.Item] = f.Reason
	}
	for item, want := range map[string]string{
		"GET /ext":          `$ref "common.yaml#/Thing" points outside the document`,
		"GET /missing-in":   "parameters[0] (q) has no in",
		"GET /bad-header":   `parameters[0]: "Bad Header" is not a valid HTTP header name`,
		"PATCH /bad-header": `"Bad Header" is not a valid HTTP header name`,
	} {
		if !strings.Contains(reasons[item], want) {
			t.Errorf("failure of %s: %q, want it to mention %q", item, reasons[item], want)
		}
	}
	if len(res.Failures) != 4 || res.Operations != 9 {
		t.Errorf("failures %v, operations %d", res.Failures, res.Operations)
	}
	// The parameter without a name is skipped, saying where; the cookie
	// scheme is reported for the one operation left needing it (the
	// document's security offers oauth2 to the others).
	wantWarnings := []string{
		"GET /bad-param: parameters[0] (in query) has no name and was skipped: a parameter needs a name to be sent",
		"GET /bad-param: parameters[1] (in header) has no name and was skipped: a parameter needs a name to be sent",
		`security scheme cookie (apiKey in cookie "session") cannot be applied by caphub: 1 operation needs it and was imported without auth (metadata.openapi.auth_unsupported names it), so the API may refuse their calls: get_cookie`,
	}
	if !reflect.DeepEqual(res.Warnings, wantWarnings) {
		t.Errorf("warnings\n%q\nwant\n%q", res.Warnings, wantWarnings)
	}
	bad := find(t, res.Definitions, "get_bad_param")
	sameJSON(t, "get_bad_param input", bad.Input, `{"type": "object", "properties": {"q": {"type": "string"}}}`)
	cookie := find(t, res.Definitions, "get_cookie")
	if cookie.Bindings.HTTP.Auth != nil || cookie.Metadata["openapi"].(map[string]any)["auth_unsupported"] != "cookie" {
		t.Errorf("get_cookie: auth %+v, metadata %v", cookie.Bindings.HTTP.Auth, cookie.Metadata["openapi"])
	}
	// TRACE imports: no body, fields in the query.
	trace := find(t, res.Definitions, "trace_echo")
	if trace.Bindings.HTTP.Method != "TRACE" || trace.Title != "Trace echo" || capability.HasErrors(capability.Validate(trace)) {
		t.Errorf("trace_echo: %s %q %v", trace.Bindings.HTTP.Method, trace.Title, capability.Validate(trace))
	}
	echo := find(t, res.Definitions, "get_echo")
	// The query api_key is the auth's; the output is 200's text/plain.
	sameJSON(t, "get_echo input", echo.Input, `{"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}`)
	sameJSON(t, "get_echo output", echo.Output, `{"type": "string"}`)
	sameJSON(t, "get_echo auth", echo.Bindings.HTTP.Auth, `{"type": "api_key", "location": "query", "param_name": "api_key", "env": "MIXED_API_KEY", "x-scheme": "key"}`)
	if echo.URI != "ossa:mixed/get_echo@2.0" || echo.Bindings.HTTP.URL != "https://m.example/v1/echo" {
		t.Errorf("get_echo: %s %s", echo.URI, echo.Bindings.HTTP.URL)
	}
	if echo.Metadata["openapi"].(map[string]any)["response_content_type"] != "text/plain" {
		t.Errorf("get_echo metadata %v", echo.Metadata)
	}
	// Only default: it is the output; the document's security falls to oauth2.
	def := find(t, res.Definitions, "get_default")
	sameJSON(t, "get_default output", def.Output, `{"type": "object"}`)
	sameJSON(t, "get_default auth", def.Bindings.HTTP.Auth, `{"type": "oauth2", "location": "header", "param_name": "Authorization", "env": "MIXED_TOKEN", "x-scheme": "oauth", "x-scopes": ["read", "write"]}`)
	if len(def.Errors) != 0 {
		t.Errorf("get_default errors %v", def.Errors)
	}
}

// OpenAPI 3.0 and Swagger 2.0 schema dialects become valid 2020-12.
func TestSchemaConversion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version specVersion
		in      string
		want    string
	}{
		{"nullable type", oas30, `{"type": "string", "nullable": true, "enum": ["a", "b"]}`, `{"type": ["string", "null"], "enum": ["a", "b", null]}`},
		{"nullable oneOf", oas30, `{"nullable": true, "description": "d", "oneOf": [{"type": "string"}, {"type": "integer"}]}`,
			`{"description": "d", "anyOf": [{"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]}`},
		{"exclusive bounds", oas30, `{"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": false}`,
			`{"type": "number", "exclusiveMinimum": 0, "maximum": 10}`},
		{"example", oas30, `{"type": "integer", "example": 4}`, `{"type": "integer", "examples": [4]}`},
		{"openapi-only keywords dropped", oas30, `{"type": "object", "xml": {"name": "x"}, "externalDocs": {"url": "u"}, "x-foo": 1, "discriminator": {"propertyName": "kind", "mapping": {"a": "#/components/schemas/A"}}}`,
			`{"type": "object", "discriminator": {"propertyName": "kind"}}`},
		{"file", swagger2, `{"type": "file"}`, `{"type": "string", "format": "binary"}`},
		{"x-nullable", swagger2, `{"type": "integer", "x-nullable": true}`, `{"type": ["integer", "null"]}`},
		{"tuple items", oas30, `{"type": "array", "items": [{"type": "string"}], "additionalItems": false}`, `{"type": "array", "prefixItems": [{"type": "string"}], "items": false}`},
		{"malformed keywords dropped", oas30, `{"type": "strnig", "required": true, "minLength": -1, "pattern": "(?=x)", "enum": "a", "properties": [], "multipleOf": 0}`, `{}`},
		{"type aliases", oas30, `{"type": ["int", "String", "int"]}`, `{"type": ["integer", "string"]}`},
		{"dependencies", oas30, `{"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`, `{"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}}`},
		{"3.1 ref siblings", oas31, `{"$ref": "#/components/schemas/S", "maxLength": 3}`, `{"$ref": "#/$defs/S", "maxLength": 3, "$defs": {"S": {"type": "string"}}}`},
		{"3.0 ref siblings ignored", oas30, `{"$ref": "#/components/schemas/S", "maxLength": 3, "description": "kept"}`, `{"$ref": "#/$defs/S", "description": "kept", "$defs": {"S": {"type": "string"}}}`},
		{"3.0 nullable ref", oas30, `{"$ref": "#/components/schemas/S", "nullable": true, "title": "t"}`,
			`{"title": "t", "anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}], "$defs": {"S": {"type": "string"}}}`},
		{"ref to a schema inside another", oas30, `{"$ref": "#/components/schemas/T/properties/a b"}`,
			`{"$ref": "#/$defs/T.properties.a_b", "$defs": {"T.properties.a_b": {"$ref": "#/$defs/S"}, "S": {"type": "string"}}}`},
		{"ref in example", oas30, `{"type": "object", "example": {"$ref": "#/components/examples/E"}}`, `{"type": "object", "examples": [{"a": 1}]}`},
		{"boolean schema", oas31, `{"properties": {"a": true, "b": false}}`, `{"properties": {"a": true, "b": false}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := map[string]any{}
			json.Unmarshal([]byte(`{"components": {"schemas": {"S": {"type": "string"}, "T": {"properties": {"a b": {"$ref": "#/components/schemas/S"}}}}, "examples": {"E": {"value": {"a": 1}}}}}`), &root)
			var in any
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			c := newConverter(root, tc.version, 1000)
			out, _, err := c.schema(in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := out.(map[string]any); ok {
				if out, _, err = c.withDefs(m, 0); err != nil {
					t.Fatal(err)
				}
			}
			sameJSON(t, "schema", out, tc.want)
			if m, ok := out.(map[string]any); ok {
				if _, issues := capability.CompileSchema(m); len(issues) > 0 {
					t.Errorf("not valid 2020-12: %v", issues)
				}
			}
		})
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{
		"getPetById":                 "get_pet_by_id",
		"repos/list-for-org":         "repos_list_for_org",
		"HTTPServerGet":              "http_server_get",
		"get /pets/{petId}":          "get_pets_pet_id",
		"2fa/enable":                 "op_2fa_enable",
		"  __Weird--Name__  ":        "weird_name",
		"v2GetUser":                  "v2_get_user",
		"日本語":                        "",
		"get_all_repos":              "get_all_repos",
		"Users.ListUsers":            "users_list_users",
		"apps/create-from-manifest2": "apps_create_from_manifest2",
	} {
		if got := snakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"Swagger Petstore": "swagger-petstore",
		"GitHub's official OpenAPI spec + Octokit extension": "githubs-official-openapi-spec-octokit-extension",
		"3D Printing API":                      "api-3d-printing-api",
		"---":                                  "",
		"Weather 3.1":                          "weather-3-1",
		strings.Repeat("very long title ", 10): "very-long-title-very-long-title-very-long-title-very-long-title",
	} {
		if got := domainFromTitle(in); got != want {
			t.Errorf("domainFromTitle(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"1.2.3": "1.2.3", "1.2": "1.2.0", "v2": "2.0.0", "3.0.1-beta": "3.0.1-beta",
		"2023-05-01": "1.0.0", "latest": "1.0.0", "": "1.0.0", "1.02": "1.0.0",
	} {
		if got := semverOf(in); got != want {
			t.Errorf("semverOf(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range [][3]string{
		{"404", "", "HTTP_404_NOT_FOUND"},
		{"418", "", "HTTP_418_IM_A_TEAPOT"},
		{"499", "Client closed the request early", "HTTP_499_CLIENT_CLOSED_THE_REQUEST"},
		{"499", "", "HTTP_499"},
		{"4XX", "", "HTTP_4XX_CLIENT_ERROR"},
		{"DEFAULT", "", "HTTP_ERROR"},
	} {
		if got := errorCode(tc[0], tc[1]); got != tc[2] {
			t.Errorf("errorCode(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
	for in, want := range map[string]string{"team-slug": "team_slug", "X-Request-ID": "X_Request_ID", "per_page": "per_page", "filter[name]": "filter_name", "1st": "_1st", "--": "param"} {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFetch(t *testing.T) {
	data, err := Fetch(context.Background(), "testdata/broken.yaml")
	if err != nil || !strings.HasPrefix(string(data), "openapi: 3.0.0") {
		t.Errorf("Fetch file: %v", err)
	}
	if _, err := Fetch(context.Background(), "testdata/missing.yaml"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Fetch of a missing file: %v", err)
	}
}

// Documents that would expand exponentially once inlined import small:
// each shared schema is converted once and carried once per capability.
// Expansions caphub cannot share (a YAML alias bomb in data) fail operation
// by operation, quickly.
func TestLimits(t *testing.T) {
	// $ref fan-out: S0 has 10 fields of S1, … S7 of S8: 10^8 nodes inlined.
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: Fan, version: 1.0.0}\nservers: [{url: 'https://f.example'}]\n")
	b.WriteString("paths:\n  /fan:\n    get:\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}\n")
	b.WriteString("  /small:\n    get:\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S8'}}}}\n")
	b.WriteString("components:\n  schemas:\n")
	for i := 0; i < 8; i++ {
		b.WriteString("    S" + string(rune('0'+i)) + ":\n      properties:\n")
		for j := 0; j < 10; j++ {
			b.WriteString("        f" + string(rune('0'+j)) + ": {$ref: '#/components/schemas/S" + string(rune('1'+i)) + "'}\n")
		}
	}
	b.WriteString("    S8: {type: string}\n")
	start := time.Now()
	res := importBytes(t, "fan.yaml", []byte(b.String()), Options{})
	if len(res.Failures) != 0 || len(res.Definitions) != 2 {
		t.Fatalf("fan-out: failures %v, definitions %v", res.Failures, names(res.Definitions))
	}
	if defs := res.Definitions[0].Output["$defs"].(map[string]any); len(defs) != 8 || len(asJSON(t, res.Definitions[0].Output)) > 4000 {
		t.Errorf("fan-out: $defs %v, output %d bytes", slices.Sorted(maps.Keys(defs)), len(asJSON(t, res.Definitions[0].Output)))
	}

	// YAML alias bomb: 9^7 strings behind one enum.
	bomb := "openapi: 3.0.0\ninfo: {title: Bomb, version: 1.0.0}\nservers: [{url: 'https://b.example'}]\n" +
		"x:\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n" +
		"  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n" +
		"paths:\n  /bomb:\n    get:\n      parameters: [{name: p, in: query, schema: {enum: *g}}]\n      responses: {'204': {description: ok}}\n"
	res = importBytes(t, "bomb.yaml", []byte(bomb), Options{})
	if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Reason, "work budget is exhausted") {
		t.Errorf("alias bomb: failures %v", res.Failures)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the limits took %v to trip", d)
	}
}

// refBomb is a document whose one operation returns S0, where each of n
// schemas has 8 properties that $ref the next: 8^n nodes once inlined.
func refBomb(n int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: Bomb, version: 1.0.0}\nservers: [{url: 'https://b.example'}]\n")
	b.WriteString("paths:\n  /bomb:\n    get:\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}\n")
	b.WriteString("  /leaf:\n    get:\n      responses:\n        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S" + strconv.Itoa(n-2) + "'}}}}\n")
	b.WriteString("components:\n  schemas:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "    S%d:\n      type: object\n      properties:\n", i)
		for j := 0; j < 8; j++ {
			fmt.Fprintf(&b, "        f%d: {$ref: '#/components/schemas/S%d'}\n", j, i+1)
		}
	}
	fmt.Fprintf(&b, "    S%d: {type: string}\n", n)
	return b.String()
}

// 22 schemas of 8 $refs each expand into 8^22 nodes once inlined (which
// once overflowed a node count). Shared as $defs, each schema is there
// once: the operation imports small, allocating little, and
// Options.MaxSchemaNodes bounds the schemas with their $defs.
func TestRefBombShared(t *testing.T) {
	for _, n := range []int{4, 22, 30} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := importBytes(t, "bomb.yaml", []byte(refBomb(n)), Options{})
		runtime.ReadMemStats(&after)
		if len(res.Failures) != 0 || len(res.Definitions) != 2 {
			t.Fatalf("%d schemas: failures %v, definitions %v", n, res.Failures, names(res.Definitions))
		}
		// S0 is hoisted to the root; S1 … Sn are its $defs.
		if defs, _ := res.Definitions[0].Output["$defs"].(map[string]any); len(defs) != n {
			t.Errorf("%d schemas: %d $defs", n, len(defs))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 20<<20 {
			t.Errorf("%d schemas: the import allocated %d MB", n, alloc>>20)
		}
	}
	res := importBytes(t, "bomb.yaml", []byte(refBomb(22)), Options{MaxSchemaNodes: 300})
	if len(res.Failures) != 1 || res.Failures[0].Item != "GET /bomb" || !strings.Contains(res.Failures[0].Reason, "more than 300 nodes") {
		t.Errorf("MaxSchemaNodes 300: failures %v", res.Failures)
	}
}

func TestAddSizeSaturates(t *testing.T) {
	n := 1
	for range 30 {
		n = addSize(n*8, n*8) // would overflow within 21 rounds
	}
	if n != sizeCap {
		t.Errorf("addSize does not saturate: %d", n)
	}
}

func TestFetchURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/spec.yaml" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("openapi: 3.0.0\n"))
	}))
	defer srv.Close()
	data, err := Fetch(context.Background(), srv.URL+"/spec.yaml")
	if err != nil || string(data) != "openapi: 3.0.0\n" {
		t.Errorf("Fetch: %q %v", data, err)
	}
	if _, err := Fetch(context.Background(), srv.URL+"/nope"); err == nil || !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("Fetch of a missing URL: %v", err)
	}
}
