package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// TestSearchViews: /registry/search answers summaries of at most 1 KB by
// default (view=compact) whatever the schemas, whole definitions with
// view=full, and a 400 problem naming the views for any other view.
func TestSearchViews(t *testing.T) {
	srv, _ := newTestServer(t)
	props := map[string]any{}
	for i := range 500 {
		props[fmt.Sprintf("option_%03d", i)] = map[string]any{"type": "string", "description": strings.Repeat("A long description. ", 10)}
	}
	def := map[string]any{"uri": "ossa:wide/configure@1.2", "name": "configure", "domain": "wide", "version": "1.2.0",
		"title": "Configure everything", "description": "Sets every option at once. Then it says so at length.",
		"input":    map[string]any{"type": "object", "required": []any{"option_007"}, "properties": props},
		"output":   map[string]any{"type": "object", "properties": props},
		"bindings": map[string]any{"http": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/configure"}}}
	body, _ := json.Marshal(map[string]any{"capability": def})
	expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", body), 201, "register")

	var compact, explicit struct {
		Items []json.RawMessage `json:"items"`
		Total int               `json:"total"`
	}
	a := call(t, srv, "GET", "/registry/search?q=configure+options", "", nil)
	expect(t, a, 200, "search")
	if err := json.Unmarshal(a.body, &compact); err != nil || len(compact.Items) != 1 || compact.Total != 1 {
		t.Fatalf("compact search: %v %s", err, a.body)
	}
	var s capability.Summary
	if err := json.Unmarshal(compact.Items[0], &s); err != nil {
		t.Fatal(err)
	}
	if len(compact.Items[0]) > capability.MaxSummaryBytes || s.URI != "ossa:wide/configure@1.2" || s.ToolName != "wide_configure" ||
		s.Description != "Sets every option at once." || !strings.HasPrefix(s.Params, "option_007*: string, option_000: string") || !strings.HasSuffix(s.Params, " more") {
		t.Errorf("compact item (%d bytes): %s", len(compact.Items[0]), compact.Items[0])
	}
	if strings.Contains(string(compact.Items[0]), `"input"`) || strings.Contains(string(compact.Items[0]), `"bindings"`) {
		t.Errorf("compact item carries the definition: %s", compact.Items[0])
	}
	t.Logf("one hit: %d bytes compact", len(a.body))
	a = call(t, srv, "GET", "/registry/search?q=configure+options&view=compact", "", nil)
	expect(t, a, 200, "view=compact")
	if err := json.Unmarshal(a.body, &explicit); err != nil || len(explicit.Items) != 1 || string(explicit.Items[0]) != string(compact.Items[0]) {
		t.Errorf("view=compact differs from the default: %s", a.body)
	}

	a = call(t, srv, "GET", "/registry/search?q=configure+options&view=full", "", nil)
	expect(t, a, 200, "view=full")
	var full ListResponse
	if err := json.Unmarshal(a.body, &full); err != nil || len(full.Items) != 1 {
		t.Fatalf("full search: %v %.300s", err, a.body)
	}
	if d := full.Items[0]; len(d.Input["properties"].(map[string]any)) != 500 || d.Bindings.HTTP == nil || d.Version != "1.2.0" {
		t.Errorf("view=full item lacks the definition: %.300s", a.body)
	}
	t.Logf("one hit: %d bytes full", len(a.body))

	for _, bad := range []string{"bogus", "FULL", "summary"} {
		a = call(t, srv, "GET", "/registry/search?q=x&view="+bad, "", nil)
		expect(t, a, 400, "view="+bad)
		if d, _ := a.json(t)["detail"].(string); !strings.Contains(d, fmt.Sprintf("view=%q", bad)) || !strings.Contains(d, "view=compact") || !strings.Contains(d, "view=full") {
			t.Errorf("view=%s: detail %q does not name the value and the allowed ones", bad, d)
		}
	}

	// The OpenAPI document describes the parameter.
	doc := call(t, srv, "GET", "/openapi.json", "", nil).json(t)
	op := doc["paths"].(map[string]any)["/registry/search"].(map[string]any)["get"].(map[string]any)
	found := false
	for _, p := range op["parameters"].([]any) {
		m := p.(map[string]any)
		if m["name"] == "view" {
			s := m["schema"].(map[string]any)
			found = s["default"] == "compact" && fmt.Sprint(s["enum"]) == "[compact full]"
		}
	}
	if !found {
		t.Errorf("/openapi.json does not document view (compact by default, or full): %v", op["parameters"])
	}
}

// TestSearchExplainsItsRanking: with the search index, a search says the
// action it understood, the words no capability has (with the nearest
// known), and with explain=true what each hit's score is made of.
func TestSearchExplainsItsRanking(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st, registry.WithSearchIndex(true))
	srv := httptest.NewServer(New(svc, nil))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	for _, name := range []string{"issues_create", "issues_list", "pulls_list"} {
		def := map[string]any{"uri": "ossa:github/" + name + "@1.0", "name": name, "domain": "github", "version": "1.0.0",
			"description": strings.ReplaceAll(name, "_", " "), "input": map[string]any{"type": "object"}, "output": map[string]any{"type": "object"},
			"bindings": map[string]any{"http": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/" + name}}}
		body, _ := json.Marshal(map[string]any{"capability": def})
		expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", body), 201, "register")
	}
	var got SummaryListResponse
	a := call(t, srv, "GET", "/registry/search?q=open+a+new+bug+report&explain=true", "", nil)
	expect(t, a, 200, "explain")
	if err := json.Unmarshal(a.body, &got); err != nil || len(got.Items) == 0 || got.Items[0].URI != "ossa:github/issues_create@1.0" ||
		got.Action != "crud.create" || len(got.Hits) != len(got.Items) || len(got.Hits[0].Why) == 0 {
		t.Fatalf("explained search: %v %s", err, a.body)
	}
	a = call(t, srv, "GET", "/registry/search?q=pul+reqests", "", nil)
	got = SummaryListResponse{}
	if err := json.Unmarshal(a.body, &got); err != nil || len(got.Unknown) != 2 || got.Unknown[0].Word != "pul" || len(got.Unknown[0].DidYouMean) == 0 || got.Unknown[0].DidYouMean[0] != "pull" || len(got.Items) != 1 || got.Hits != nil {
		t.Errorf("misspelt search: %v %s", err, a.body)
	}
	expect(t, call(t, srv, "GET", "/registry/search?q=x&explain=maybe", "", nil), 400, "explain=maybe")
}

// TestTrustFilter: trust=TIER keeps the versions stored with that tier, in
// a list and in a search, from the store and from the search index alike.
func TestTrustFilter(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
		if err != nil {
			t.Fatal(err)
		}
		tierOf := func(_ context.Context, d *capability.Definition) (string, error) {
			if strings.HasPrefix(d.Name, "signed_") {
				return "verified", nil
			}
			return "community", nil
		}
		svc := registry.NewService(st, registry.WithSearchIndex(indexed), registry.WithVerifier(tierOf))
		srv := httptest.NewServer(New(svc, nil))
		for _, name := range []string{"signed_report", "plain_report", "signed_export"} {
			def := map[string]any{"uri": "ossa:docs/" + name + "@1.0", "name": name, "domain": "docs", "version": "1.0.0",
				"description": strings.ReplaceAll(name, "_", " "), "input": map[string]any{"type": "object"}, "output": map[string]any{"type": "object"},
				"bindings": map[string]any{"http": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/" + name}}}
			body, _ := json.Marshal(map[string]any{"capability": def})
			expect(t, call(t, srv, "POST", "/registry/capabilities", "application/json", body), 201, "register")
		}
		tiers := map[string]string{} // of the search hits (compact summaries)
		uris := func(path string) []string {
			a := call(t, srv, "GET", path, "", nil)
			expect(t, a, 200, path)
			var got struct {
				Items []struct {
					URI  string `json:"uri"`
					Tier string `json:"trust_tier"`
				} `json:"items"`
			}
			if err := json.Unmarshal(a.body, &got); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var out []string
			for _, it := range got.Items {
				out = append(out, it.URI)
				if strings.HasPrefix(path, "/registry/search") {
					tiers[it.URI] = it.Tier
				}
			}
			return out
		}
		for path, want := range map[string]string{
			"/registry/capabilities?trust=verified":    "ossa:docs/signed_export@1.0 ossa:docs/signed_report@1.0",
			"/registry/capabilities?trust=community":   "ossa:docs/plain_report@1.0",
			"/registry/capabilities?trust=untrusted":   "",
			"/registry/search?q=report&trust=verified": "ossa:docs/signed_report@1.0",
			"/registry/search?q=report&trust=trusted":  "",
		} {
			got := uris(path)
			slices.Sort(got)
			if strings.Join(got, " ") != want {
				t.Errorf("index %v: %s = %v, want %q", indexed, path, got, want)
			}
		}
		// Each search hit says its tier (the catalog marks it).
		uris("/registry/search?q=report")
		if tiers["ossa:docs/signed_report@1.0"] != "verified" || tiers["ossa:docs/plain_report@1.0"] != "community" {
			t.Errorf("index %v: the search hits' tiers %v", indexed, tiers)
		}
		srv.Close()
		svc.Close()
	}
}
