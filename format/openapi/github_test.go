package openapi

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
)

// githubSpec returns GitHub's OpenAPI document (npm @octokit/openapi), or
// skips the test.
func githubSpec(t testing.TB) (string, []byte) {
	t.Helper()
	p := filepath.Join(testpeers.NPMPackage(t, "@octokit/openapi"), "generated", "api.github.com.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("GitHub's OpenAPI spec is not readable at %s: %v", p, err)
	}
	return p, data
}

// countOperations counts the operations of a decoded document the way a
// reader of the spec would: every HTTP method key of every path item.
func countOperations(t *testing.T, data []byte) int {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range doc.Paths {
		for _, m := range methods {
			if _, ok := item[m]; ok {
				n++
			}
		}
	}
	return n
}

// TestImportGitHub imports GitHub's whole REST API: every operation imports,
// every schema is valid JSON Schema 2020-12 whose $refs point into its own $defs, names are unique
// and every definition passes capability.Validate without errors.
func TestImportGitHub(t *testing.T) {
	src, data := githubSpec(t)
	want := countOperations(t, data)
	start := time.Now()
	res, err := Import(context.Background(), src, data, Options{Domain: "github"})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d of %d operations in %v; peak RSS so far %s", len(res.Definitions), want, elapsed, peakRSS())
	for _, f := range res.Failures {
		t.Errorf("failure: %s", f)
	}
	if res.Operations != want || len(res.Definitions) != want {
		t.Fatalf("operations %d, definitions %d, want %d", res.Operations, len(res.Definitions), want)
	}
	if res.SpecVersion != "3.0.3" || res.Version != "23.0.2" {
		t.Errorf("spec version %q, version %q", res.SpecVersion, res.Version)
	}
	names := map[string]bool{}
	for i := range res.Definitions {
		d := &res.Definitions[i]
		if names[d.Name] {
			t.Errorf("duplicate name %s", d.Name)
		}
		names[d.Name] = true
		if p := badRef(d.Input, "input"); p != "" {
			t.Errorf("%s: bad $ref at %s", d.Name, p)
		}
		if p := badRef(d.Output, "output"); p != "" {
			t.Errorf("%s: bad $ref at %s", d.Name, p)
		}
		for _, s := range []capability.Schema{d.Input, d.Output} {
			if _, issues := capability.CompileSchema(s); len(issues) > 0 {
				t.Errorf("%s: schema does not compile: %v", d.Name, issues)
			}
		}
		for _, is := range capability.Validate(d) {
			if is.Severity == capability.SeverityError {
				t.Errorf("%s: %s", d.Name, is)
			}
		}
		if t.Failed() && i > 20 {
			t.FailNow()
		}
	}
	d := find(t, res.Definitions, "issues_create")
	if d.Bindings.HTTP.URL != "https://api.github.com/repos/{owner}/{repo}/issues" || d.Bindings.HTTP.Method != "POST" {
		t.Errorf("issues_create binding: %+v", d.Bindings.HTTP)
	}
	if d.URI != "ossa:github/issues_create@23.0" || d.Version != "23.0.2" {
		t.Errorf("issues_create identity: %s %s", d.URI, d.Version)
	}
	req := d.Input["required"].([]any)
	if len(req) < 3 || req[0] != "owner" || req[1] != "repo" {
		t.Errorf("issues_create required: %v", req)
	}
	if _, ok := d.Input["properties"].(map[string]any)["title"]; !ok {
		t.Errorf("issues_create: body property title not merged into the input: %v", keysOf(d.Input["properties"]))
	}
	if d.Bindings.HTTP.Extra[extraBody].(map[string]any)["content_type"] != "application/json" {
		t.Errorf("issues_create x-body: %v", d.Bindings.HTTP.Extra[extraBody])
	}
	if d.Domains[0] != "github" {
		t.Errorf("issues_create domains: %v", d.Domains)
	}
}

// badRef returns the path of the first "$ref" of a capability schema
// that is not "#/$defs/<name>" with name under the schema's own $defs, or
// of a $defs entry that nothing references, "" when every one is right:
// each schema stands alone and carries only the shared schemas it uses.
func badRef(s capability.Schema, path string) string {
	defs, _ := s["$defs"].(map[string]any)
	used := map[string]bool{}
	var walk func(v any, path string) string
	walk = func(v any, path string) string {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "$ref" {
					name, ok := strings.CutPrefix(str(e), "#/$defs/")
					if _, defined := defs[name]; !ok || !defined {
						return path + ".$ref"
					}
					used[name] = true
					continue
				}
				if k == "$defs" && path != "" && !strings.Contains(path, ".") {
					continue // the root's $defs, walked below
				}
				if p := walk(e, path+"."+k); p != "" {
					return p
				}
			}
		case []any:
			for _, e := range x {
				if p := walk(e, path+"[]"); p != "" {
					return p
				}
			}
		}
		return ""
	}
	if p := walk(map[string]any(s), path); p != "" {
		return p
	}
	for name, d := range defs {
		if p := walk(d, path+".$defs."+name); p != "" {
			return p
		}
	}
	for name := range defs {
		if !used[name] {
			return path + ".$defs." + name + " (not referenced)"
		}
	}
	return ""
}

func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

func find(t *testing.T, defs []capability.Definition, name string) *capability.Definition {
	t.Helper()
	for i := range defs {
		if defs[i].Name == name {
			return &defs[i]
		}
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	t.Fatalf("no definition %s among %s", name, strings.Join(names, ", "))
	return nil
}

// peakRSS reads the process's peak resident set size (Linux).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown (" + runtime.GOOS + ")"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func BenchmarkImportGitHub(b *testing.B) {
	src, data := githubSpec(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Import(context.Background(), src, data, Options{Domain: "github"})
		if err != nil || len(res.Failures) > 0 {
			b.Fatal(err, res.Failures)
		}
	}
	b.Logf("peak RSS %s", peakRSS())
}
