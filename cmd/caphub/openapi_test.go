package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const openapiTestdata = "../../format/openapi/testdata/"

func TestImportOpenAPICommand(t *testing.T) {
	db := []string{"--db", filepath.Join(t.TempDir(), "caphub.db")}
	cli := func(args ...string) (int, string, string) {
		return caphub(t, append(args, db...)...)
	}

	code, out, errOut := cli("import", "openapi", openapiTestdata+"petstore30.yaml", "--domain", "pets")
	if code != 0 || !strings.Contains(out, "8 imported, 0 failed") || !strings.Contains(out, "registered ossa:pets/list_pets@1.2 (1.2.0)") {
		t.Fatalf("import petstore: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli("capability", "show", "ossa:pets/list_pets")
	for _, want := range []string{
		"ossa:pets/list_pets — List all pets",
		"resolves to: ossa:pets/list_pets@1.2 (1.2.0)",
		"bindings: http GET https://api.petstore.example/v1/pets",
		"domains: pets, pets.pets; categories: crud.read",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, want %q in\n%s", code, want, out)
		}
	}
	code, out, _ = cli("capability", "show", "ossa:pets/get_tree_nodes", "--format", "json")
	if code != 0 || !strings.Contains(out, `"url": "https://api.petstore.example/v1/trees/{tree_id}/nodes"`) || !strings.Contains(out, `"$ref": "#/$defs/Node"`) {
		t.Errorf("show --format json: exit %d\n%s", code, out)
	}

	// A broken operation is reported with its position; the others register.
	code, out, _ = cli("import", "openapi", openapiTestdata+"broken.yaml")
	abs, _ := filepath.Abs(openapiTestdata + "broken.yaml")
	if code != 1 || !strings.Contains(out, "2 imported, 1 failed") ||
		!strings.Contains(out, "failed: "+abs+`:19:5: GET /b (getB): responses.200: $ref "#/components/schemas/Nope" points at nothing`) {
		t.Errorf("import broken: exit %d\n%s", code, out)
	}

	// A relative server in a file: the operation imports, a warning on
	// stderr says to pass --base-url, and invoking it sends nothing and
	// says what to configure.
	code, out, errOut = cli("import", "openapi", openapiTestdata+"weather31.json")
	if code != 0 || !strings.Contains(out, "1 imported, 0 failed") ||
		!strings.Contains(errOut, `warning: the API's address is unknown: server URL "/api"`) || !strings.Contains(errOut, "pass --base-url") {
		t.Errorf("import without --base-url: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli("invoke", "ossa:weather-3-1/get_forecast@2.0", "--input", `{"city": "Oslo"}`)
	if code == 0 || !strings.Contains(out+errOut, "NO_BINDING") ||
		!strings.Contains(out+errOut, `ossa:weather-3-1/get_forecast@2.0 has no API address, so no request was sent: its OpenAPI server URL \"/api\" could not give one`) ||
		!strings.Contains(out+errOut, "caphub import openapi SPEC --base-url https://<api-host>/api --set-version <a new version>") {
		t.Errorf("invoke with an unknown base: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli("import", "openapi", openapiTestdata+"weather31.json", "--base-url", "https://weather.example", "--domain", "weather")
	if code != 0 || !strings.Contains(out, "1 imported, 0 failed") || !strings.Contains(errOut, "warning: webhooks ignored (1)") {
		t.Errorf("import with --base-url: exit %d\n%s%s", code, out, errOut)
	}

	// Swagger 2.0 over HTTP.
	spec, err := os.ReadFile(openapiTestdata + "files20.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(spec) }))
	defer srv.Close()
	code, out, _ = cli("import", "openapi", srv.URL+"/swagger.yaml")
	if code != 0 || !strings.Contains(out, "3 imported, 0 failed") || !strings.Contains(out, "registered ossa:files-api/upload_content@1.0 (1.0.0)") {
		t.Errorf("import from a URL: exit %d\n%s", code, out)
	}

	// Not a spec at all, a bad flag, and --help.
	notSpec := writeFile(t, "x.yaml", "title: not a spec\n")
	code, _, errOut = cli("import", "openapi", notSpec)
	if code != 1 || !strings.Contains(errOut, `not an OpenAPI or Swagger document: expected a top-level "openapi" field`) {
		t.Errorf("import of a non-spec: exit %d\n%s", code, errOut)
	}
	code, _, errOut = cli("import", "openapi", notSpec, "--domain", "Not Valid")
	if code != 2 || !strings.Contains(errOut, `domain "Not Valid" is not valid`) {
		t.Errorf("bad --domain: exit %d\n%s", code, errOut)
	}
	code, out, _ = caphub(t, "import", "openapi", "--help")
	if code != 0 || !strings.Contains(out, "caphub import openapi ./petstore.yaml --domain pets") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}
