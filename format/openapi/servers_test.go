package openapi

import (
	"strings"
	"testing"
)

// TestServerResolution checks the API address each kind of server
// declaration gives, for a document read from a file (source "spec.yaml")
// or fetched from a URL.
func TestServerResolution(t *testing.T) {
	const paths = "paths: {/pets: {get: {operationId: listPets, responses: {'200': {description: ok}}}}}\n"
	oas := func(servers string) string {
		return "openapi: 3.0.3\ninfo: {title: T, version: 1.0.0}\n" + servers + "\n" + paths
	}
	swagger := func(fields string) string {
		return "swagger: '2.0'\ninfo: {title: T, version: 1.0.0}\n" + fields + "\n" + paths
	}
	const fetched = "https://docs.example.com/specs/v2/openapi.yaml"
	for _, tc := range []struct {
		name, source, doc string
		url               string // the binding's URL
		why               string // the reason, when the address is unknown
	}{
		{"absolute", "spec.yaml", oas("servers: [{url: 'https://api.example.com/v1/'}]"), "https://api.example.com/v1/pets", ""},
		{"variables", "spec.yaml", oas("servers: [{url: 'https://{region}.example.com/{v}', variables: {region: {default: eu}, v: {enum: [v3, v2]}}}]"),
			"https://eu.example.com/v3/pets", ""},
		{"variable without default", "spec.yaml", oas("servers: [{url: 'https://{region}.example.com', variables: {}}]"),
			"https://base-url-unknown.invalid/pets", "its variable {region} has no default"},
		{"https preferred", "spec.yaml", oas("servers: [{url: 'http://api.example.com'}, {url: '/v1'}, {url: 'https://api.example.com'}]"),
			"https://api.example.com/pets", ""},
		{"http over unknown", "spec.yaml", oas("servers: [{url: '/v1'}, {url: 'http://api.example.com'}]"), "http://api.example.com/pets", ""},
		{"relative, fetched", fetched, oas("servers: [{url: /v1}]"), "https://docs.example.com/v1/pets", ""},
		{"relative path, fetched", fetched, oas("servers: [{url: ../api}]"), "https://docs.example.com/specs/api/pets", ""},
		{"no servers, fetched", fetched, oas(""), "https://docs.example.com/pets", ""},
		{"relative, file", "spec.yaml", oas("servers: [{url: /v1/}]"), "https://base-url-unknown.invalid/v1/pets",
			"it is relative and the document was read from a file and its info.x-origin gives no web address"},
		{"relative, file with x-origin", "spec.yaml",
			strings.Replace(oas("servers: [{url: /v1}]"), "version: 1.0.0}", "version: 1.0.0, x-origin: [{format: openapi, url: 'http://api.example.org/doc.json'}]}", 1),
			"http://api.example.org/v1/pets", ""},
		{"relative, fetched from a file host", "https://raw.githubusercontent.com/o/r/main/openapi.yaml", oas("servers: [{url: /v1}]"),
			"https://base-url-unknown.invalid/v1/pets", "it is relative and the document comes from raw.githubusercontent.com, a file host, not the API"},
		{"scheme-relative", "spec.yaml", oas("servers: [{url: '//api.example.com/base'}]"), "https://api.example.com/base/pets", ""},
		{"not a URL", "spec.yaml", oas("servers: [{url: 'Your API URL'}]"), "https://base-url-unknown.invalid/pets", "it is not a URL"},
		{"websocket", "spec.yaml", oas("servers: [{url: 'wss://api.example.com'}]"), "https://base-url-unknown.invalid/pets", "its scheme wss is not http or https"},
		{"query", "spec.yaml", oas("servers: [{url: 'https://api.example.com/?key=1'}]"), "https://base-url-unknown.invalid/pets", "it has a query or fragment"},

		{"swagger https preferred", "spec.yaml", swagger("host: api.example.com\nbasePath: /v1/\nschemes: [http, https]"), "https://api.example.com/v1/pets", ""},
		{"swagger http only", "spec.yaml", swagger("host: api.example.com\nschemes: [HTTP]"), "http://api.example.com/pets", ""},
		{"swagger no schemes", "spec.yaml", swagger("host: api.example.com"), "https://api.example.com/pets", ""},
		{"swagger no schemes, fetched over http", "http://api.example.com/swagger.json", swagger("host: api.example.com"), "http://api.example.com/pets", ""},
		{"swagger no host, fetched", fetched, swagger("basePath: /v2"), "https://docs.example.com/v2/pets", ""},
		{"swagger no host, file", "spec.yaml", swagger("basePath: /v2"), "https://base-url-unknown.invalid/v2/pets",
			"the document has no host and the document was read from a file and its info.x-origin gives no web address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := importBytes(t, tc.source, []byte(tc.doc), Options{})
			if len(res.Definitions) != 1 {
				t.Fatalf("failures %v", res.Failures)
			}
			hb := res.Definitions[0].Bindings.HTTP
			if hb.URL != tc.url {
				t.Errorf("url %s, want %s", hb.URL, tc.url)
			}
			unknown, _ := hb.Extra[extraBaseUnknown].(map[string]any)
			if unknown["reason"] != nil || tc.why != "" {
				if unknown["reason"] != tc.why {
					t.Errorf("reason %q, want %q", unknown["reason"], tc.why)
				}
				if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.why) || !strings.Contains(res.Warnings[0], "--base-url") {
					t.Errorf("warnings %q", res.Warnings)
				}
			}
		})
	}
}

func TestHumanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"reposCreateFork": "Repos create fork",
		"issues/create":   "Issues create",
		"DeleteSubscriptionsSubscriptionExposedId": "Delete subscriptions subscription exposed id",
		"getHTTPServer":     "Get HTTP server",
		"get /pets/{petId}": "Get pets pet id",
		"oauth2Token":       "Oauth 2 token",
		"_":                 "",
		"éditerUnPoème":     "Éditer un poème",
	} {
		if got := humanTitle(in); got != want {
			t.Errorf("humanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
