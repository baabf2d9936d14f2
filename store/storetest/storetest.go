// Package storetest is the behaviour suite every registry.Store must pass,
// run by the tests of store/sqlite and store/postgres, and a generator of
// synthetic capabilities for their benchmarks.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// Run runs the behaviour suite. open must return a new, empty store and
// arrange for it to be closed when the test ends (t.Cleanup); the suite may
// call Close itself too, so Close must be safe to call twice.
func Run(t *testing.T, open func(t *testing.T) registry.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s registry.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"RegisteredAtDefault", testRegisteredAtDefault},
		{"IdempotentPut", testIdempotentPut},
		{"Conflict", testConflict},
		{"BatchAtomicity", testBatchAtomicity},
		{"BatchDuplicates", testBatchDuplicates},
		{"InvalidKeys", testInvalidKeys},
		{"NotFound", testNotFound},
		{"Versions", testVersions},
		{"PrecedingVersions", testPrecedingVersions},
		{"BatchLatest", testBatchLatest},
		{"ListFilters", testListFilters},
		{"ListPagination", testListPagination},
		{"InvalidCursor", testInvalidCursor},
		{"SearchRanking", testSearchRanking},
		{"SearchFilters", testSearchFilters},
		{"SearchHostileText", testSearchHostileText},
		{"SearchPagination", testSearchPagination},
		{"Deprecate", testDeprecate},
		{"GetRaw", testGetRaw},
		{"PutEncoded", testPutEncoded},
		{"KeysWithPrefix", testKeysWithPrefix},
		{"Watch", testWatch},
		{"WatchClosedOnClose", testWatchClosedOnClose},
		{"ConcurrentSameKey", testConcurrentSameKey},
		{"ConcurrentDifferentKeys", testConcurrentDifferentKeys},
		{"AuditedPutRollsBack", testAuditedPutRollsBack},
		{"AuditedPutAtomic", testAuditedPutAtomic},
		{"AuditedConcurrent", testAuditedConcurrent},
		{"AuditedDeprecate", testAuditedDeprecate},
		{"AuditedDocs", testAuditedDocs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

// def returns a small valid definition.
func def(scheme, domain, name, version string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI:         capability.NewURI(scheme, domain, name, v).String(),
		Name:        name,
		Domain:      domain,
		Version:     version,
		Title:       strings.ReplaceAll(name, "_", " "),
		Description: "Test capability " + name + ".",
		Stability:   capability.StabilityStable,
		Input:       capability.Schema{"type": "object"},
		Bindings:    capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

func key(scheme, domain, name, version string) registry.Key {
	return registry.Key{Scheme: scheme, Domain: domain, Name: name, Version: version}
}

func put(t *testing.T, s registry.Store, defs ...capability.Definition) []registry.PutResult {
	t.Helper()
	recs := make([]registry.Record, len(defs))
	for i, d := range defs {
		recs[i] = NewRecord(d)
	}
	res, err := s.Put(t.Context(), recs)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if len(res) != len(recs) {
		t.Fatalf("Put returned %d results for %d records", len(res), len(recs))
	}
	for i, r := range res {
		if r.Key != recs[i].Key {
			t.Fatalf("Put result %d is for %s, want %s (results must be in input order)", i, r.Key, recs[i].Key)
		}
	}
	return res
}

func keyStrings(recs []registry.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Key.String()
	}
	return out
}

// normalized returns d as the model holds it after decoding: free-form
// values in canonical form.
func normalized(d capability.Definition) capability.Definition {
	d.Normalize()
	return d
}

// fullDefinition sets every field of the model, including the Extra maps,
// nested schemas and whole numbers up to 2^53-1.
func fullDefinition() capability.Definition {
	return capability.Definition{
		URI:              "ossa:security/scan_vulnerabilities@1.2",
		Name:             "scan_vulnerabilities",
		Domain:           "security",
		Version:          "1.2.3-rc.1+build.7",
		Title:            "Scan vulnerabilities",
		Description:      "Scans a repository for known vulnerabilities. Ünïcödé ✓ and \"quotes\", <tags> & \\ backslashes.",
		DocumentationURL: "https://docs.example.com/scan",
		Stability:        capability.StabilityBeta,
		DeprecatedBy:     "ossa:security/scan@2.0",
		SunsetDate:       "2030-01-01",
		MigrationGuide:   "Use scan 2.0.",
		Input: capability.Schema{
			"$schema":  "https://json-schema.org/draft/2020-12/schema",
			"type":     "object",
			"required": []any{"repo"},
			"properties": map[string]any{
				"repo":  map[string]any{"type": "string", "minLength": int64(1), "pattern": "^[a-z]+/[a-z]+$"},
				"depth": map[string]any{"type": "integer", "minimum": int64(-42), "maximum": int64(9007199254740991), "default": int64(3)},
				"ratio": map[string]any{"type": "number", "multipleOf": 0.25, "default": 1.5},
				"opts": map[string]any{
					"type":    "object",
					"default": map[string]any{"deep": map[string]any{"list": []any{int64(1), "two", 3.5, true, nil, map[string]any{}}}},
				},
				"flag": map[string]any{"type": "boolean", "default": false},
				"none": map[string]any{"default": nil},
			},
			"additionalProperties": false,
		},
		Output: capability.Schema{"type": "object", "properties": map[string]any{"findings": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
		Errors: []capability.ErrorDef{
			{Code: "NOT_FOUND", Description: "no such repo", Retryable: false},
			{Code: "RATE_LIMITED", Retryable: true, Extra: map[string]any{"http_status": int64(429)}},
		},
		Bindings: capability.Bindings{
			Native: &capability.NativeBinding{Handler: "scan", Extra: map[string]any{"pool": "big"}},
			MCP: &capability.MCPBinding{Server: "scanner", Tool: "scan", Mapping: map[string]string{"repo": "repository"},
				OutputMapping: map[string]string{"results": "findings"}, ErrorMapping: map[string]string{"404": "NOT_FOUND"}, Extra: map[string]any{"timeout_ms": int64(30000)}},
			HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://scan.example.com/{repo}", Headers: map[string]string{"Accept": "application/json"},
				BodyTemplate: `{"depth": {depth}}`, Auth: &capability.HTTPAuth{Type: "bearer", Location: "header", ParamName: "Authorization", Env: "SCAN_TOKEN", Extra: map[string]any{"scopes": []any{"read"}}}},
			GRPC:       &capability.GRPCBinding{Target: "scan:443", Service: "scan.v1.Scanner", Method: "Scan", Mapping: map[string]string{"repo": "repo_name"}},
			CLI:        &capability.CLIBinding{Command: "scan --repo {repo}", Parser: "json", Env: map[string]string{"NO_COLOR": "1"}},
			Delegation: &capability.DelegationBinding{Agent: "security-agent", URL: "https://agents.example.com", Capability: "ossa:security/scan@1.0"},
			Extra:      map[string]any{"wasm": map[string]any{"module": "scan.wasm", "memory_pages": int64(16)}},
		},
		Permissions: []string{"network.http", "filesystem.read"},
		Effects:     []string{"network_request"},
		Domains:     []string{"security", "security.code"},
		Categories:  []string{"analysis", "search"},
		Intents:     []string{"security.scan"},
		Keywords:    []string{"cve", "vulnerability"},
		UIRequired:  true,
		Display:     &capability.Display{Icon: "shield", Category: "Security", Extra: map[string]any{"color": "red"}},

		SystemPromptAddition: "You can scan repositories.",
		Tools:                []string{"ossa:security/scan_file@1.0"},
		Attestation:          &capability.Attestation{KeyID: "key-1", Algorithm: "ed25519", Signature: "c2lnbmF0dXJl", Extra: map[string]any{"signed_at": "2025-01-01T00:00:00Z"}},
		Provenance: &capability.Provenance{Method: "mcp_introspection", SourceURL: "stdio://scanner", CreatedAt: "2025-01-01T00:00:00Z",
			CapabilityType: "mcp_tool", IntrospectorVersion: "0.3.0", Extra: map[string]any{"server_version": "1.4.2"}},
		Metadata: map[string]any{"mcp": map[string]any{"annotations": map[string]any{"readOnlyHint": true}, "count": int64(7)}, "openapi": map[string]any{"operationId": "scanRepo"},
			"odd": map[string]any{"nul": "a\x00b", "empty": "", "emptyList": []any{}, "emptyMap": map[string]any{}, "float": -0.5, "exp": 1e300}},
		Examples: []capability.Example{{Description: "simple", Input: map[string]any{"repo": "a/b", "depth": int64(1)}, Output: []any{"ok", int64(0)}, Extra: map[string]any{"note": "n"}}},
		Extra:    map[string]any{"x-vendor": map[string]any{"tier": int64(2), "tags": []any{"a", "b"}}, "x-flag": true},
	}
}

// checkRoundTripped checks that got, read back from the store, is rec (a
// verified record of fullDefinition) with its time in UTC.
func checkRoundTripped(t *testing.T, got, rec registry.Record) {
	t.Helper()
	if got.Key != rec.Key || got.Digest != rec.Digest || got.TrustTier != "verified" || got.DeprecatedAt != nil {
		t.Errorf("Get = key %s digest %s tier %q deprecated %v; want %s %s verified nil", got.Key, got.Digest, got.TrustTier, got.DeprecatedAt, rec.Key, rec.Digest)
	}
	if !got.RegisteredAt.Equal(rec.RegisteredAt) || got.RegisteredAt.Location() != time.UTC {
		t.Errorf("RegisteredAt = %v, want %v in UTC", got.RegisteredAt, rec.RegisteredAt)
	}
	want := normalized(fullDefinition())
	if !reflect.DeepEqual(normalized(got.Definition), want) {
		t.Errorf("definition changed on the way through the store:\n got %#v\nwant %#v", got.Definition, want)
	}
}

// testRoundTrip checks that a record with every field set comes back from
// Get as it was put, and that the store keeps its own copy.
func testRoundTrip(t *testing.T, s registry.Store) {
	ctx := t.Context()
	d := fullDefinition()
	rec := NewRecord(d)
	rec.TrustTier = "verified"
	rec.RegisteredAt = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.FixedZone("X", 3600))
	res, err := s.Put(ctx, []registry.Record{rec})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if len(res) != 1 || !res[0].Created || res[0].Key != rec.Key {
		t.Fatalf("Put = %+v, want one Created result for %s", res, rec.Key)
	}
	got, err := s.Get(ctx, rec.Key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkRoundTripped(t, got, rec)
	// The stored definition is a copy: changing the caller's value later
	// changes nothing.
	d.Input["type"] = "changed"
	if again, _ := s.Get(ctx, rec.Key); again.Definition.Input["type"] != "object" {
		t.Errorf("the store kept a reference to the caller's definition")
	}
	// An empty batch is not an error.
	if res, err := s.Put(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("Put(nil) = %v, %v; want no results and no error", res, err)
	}
}

func testRegisteredAtDefault(t *testing.T, s registry.Store) {
	before := time.Now().Add(-time.Second)
	put(t, s, def("ossa", "a", "b", "1.0.0"))
	got, err := s.Get(t.Context(), key("ossa", "a", "b", "1.0.0"))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.RegisteredAt.Before(before) || got.RegisteredAt.After(time.Now().Add(time.Second)) {
		t.Errorf("RegisteredAt = %v; want about now when Put is given a zero time", got.RegisteredAt)
	}
}

func testIdempotentPut(t *testing.T, s registry.Store) {
	d := def("ossa", "text", "echo", "1.0.0")
	rec := NewRecord(d)
	rec.RegisteredAt = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if res, err := s.Put(t.Context(), []registry.Record{rec}); err != nil || !res[0].Created {
		t.Fatalf("first Put = %+v, %v; want Created", res, err)
	}
	rec2 := NewRecord(d)
	rec2.RegisteredAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rec2.TrustTier = "other"
	res, err := s.Put(t.Context(), []registry.Record{rec2})
	if err != nil {
		t.Fatalf("second Put of identical content: %v; want no error", err)
	}
	if res[0].Created {
		t.Errorf("second Put of identical content: Created = true, want false")
	}
	got, err := s.Get(t.Context(), rec.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RegisteredAt.Equal(rec.RegisteredAt) || got.TrustTier != "" {
		t.Errorf("idempotent Put changed the stored record: RegisteredAt %v tier %q", got.RegisteredAt, got.TrustTier)
	}
	if p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, CountTotal: true}); err != nil || p.Total != 1 {
		t.Errorf("List after idempotent Put: total %d, %v; want 1", p.Total, err)
	}
}

func testConflict(t *testing.T, s registry.Store) {
	d := def("ossa", "text", "echo", "1.0.0")
	put(t, s, d)
	changed := d
	changed.Description = "Different content under the same version."
	rec := NewRecord(changed)
	res, err := s.Put(t.Context(), []registry.Record{rec})
	if err == nil {
		t.Fatalf("Put of changed content under a registered version = %+v, nil; want a conflict", res)
	}
	if !errors.Is(err, registry.ErrConflict) {
		t.Errorf("errors.Is(%v, ErrConflict) = false", err)
	}
	var ce *registry.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("errors.As(%v, *ConflictError) = false", err)
	}
	if ce.Key != rec.Key || ce.ExistingDigest != Digest(d) || ce.NewDigest != rec.Digest {
		t.Errorf("ConflictError = %+v; want key %s existing %s new %s", ce, rec.Key, Digest(d), rec.Digest)
	}
	if !strings.Contains(err.Error(), rec.Key.String()) {
		t.Errorf("error %q does not name the key", err)
	}
	got, err := s.Get(t.Context(), rec.Key)
	if err != nil || got.Definition.Description != d.Description || got.Digest != Digest(d) {
		t.Errorf("after the conflict the stored record is %q %s, %v; want the original", got.Definition.Description, got.Digest, err)
	}
}

// checkRolledBack checks that none of the records of a rolled-back batch
// (among them ossa:text/upper) can be read, listed or found, and that the
// store holds only the one record put before it.
func checkRolledBack(t *testing.T, s registry.Store, recs ...registry.Record) {
	t.Helper()
	ctx := t.Context()
	for _, r := range recs {
		if _, err := s.Get(ctx, r.Key); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("Get(%s) after a rolled-back batch: %v; want ErrNotFound", r.Key, err)
		}
	}
	p, err := s.List(ctx, registry.ListFilter{AllVersions: true, CountTotal: true})
	if err != nil || p.Total != 1 || len(p.Items) != 1 {
		t.Errorf("List after a rolled-back batch: %v (total %d), %v; want only the original", keyStrings(p.Items), p.Total, err)
	}
	if r, err := s.Search(ctx, registry.SearchQuery{Text: "upper"}); err != nil || r.Total != 0 {
		t.Errorf("Search finds %v (%v) from a rolled-back batch", keyStrings(r.Items), err)
	}
	if vs, err := s.Versions(ctx, "ossa", "text", "upper"); err != nil || len(vs) != 0 {
		t.Errorf("Versions of a rolled-back record = %v, %v", keyStrings(vs), err)
	}
}

// testBatchAtomicity checks that a batch with a conflict writes nothing and
// sends no events, and that the same batch without it goes in whole.
func testBatchAtomicity(t *testing.T, s registry.Store) {
	ctx := t.Context()
	existing := def("ossa", "text", "echo", "1.0.0")
	put(t, s, existing)
	events := watch(t, s)

	changed := existing
	changed.Description = "changed"
	batch := []registry.Record{
		NewRecord(def("ossa", "text", "upper", "1.0.0")),
		NewRecord(def("ossa", "text", "lower", "1.0.0")),
		NewRecord(changed),
		NewRecord(def("ossa", "text", "reverse", "1.0.0")),
	}
	if _, err := s.Put(ctx, batch); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("Put of a batch with a conflict in the middle: %v; want ErrConflict", err)
	}
	checkRolledBack(t, s, batch[0], batch[1], batch[3])
	// The rolled-back batch sent no events: the next one is for the next Put.
	put(t, s, def("ossa", "text", "after", "1.0.0"))
	expectEvent(t, events, registry.Event{Kind: registry.EventRegistered, Key: key("ossa", "text", "after", "1.0.0")})

	// The same batch without the conflict goes in whole.
	batch[2] = NewRecord(existing)
	res, err := s.Put(ctx, batch)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	for i, want := range []bool{true, true, false, true} {
		if res[i].Key != batch[i].Key || res[i].Created != want {
			t.Errorf("result %d = %+v, want %s Created=%v", i, res[i], batch[i].Key, want)
		}
	}
}

func testBatchDuplicates(t *testing.T, s registry.Store) {
	d := def("ossa", "text", "echo", "1.0.0")
	res := put(t, s, d, d)
	if !res[0].Created || res[1].Created {
		t.Errorf("Put of the same record twice in one batch = %+v; want Created then not", res)
	}
	changed := d
	changed.Version = "1.0.1"
	other := changed
	other.Description = "other"
	_, err := s.Put(t.Context(), []registry.Record{NewRecord(changed), NewRecord(other)})
	if !errors.Is(err, registry.ErrConflict) {
		t.Errorf("Put of two contents under one new key in one batch: %v; want ErrConflict", err)
	}
	if _, err := s.Get(t.Context(), key("ossa", "text", "echo", "1.0.1")); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get after the conflicting batch: %v; want ErrNotFound", err)
	}
}

func testInvalidKeys(t *testing.T, s registry.Store) {
	good := NewRecord(def("ossa", "text", "echo", "1.0.0"))
	for name, mutate := range map[string]func(r *registry.Record){
		"empty scheme":       func(r *registry.Record) { r.Key.Scheme = "" },
		"empty name":         func(r *registry.Record) { r.Key.Name = "" },
		"empty domain":       func(r *registry.Record) { r.Key.Domain = "" },
		"bad version":        func(r *registry.Record) { r.Key.Version = "one" },
		"short version":      func(r *registry.Record) { r.Key.Version = "1.0" },
		"empty digest":       func(r *registry.Record) { r.Digest = "" },
		"unencodable schema": func(r *registry.Record) { r.Definition.Input = capability.Schema{"bad": make(chan int)} },
	} {
		r := good
		r.Definition.Input = capability.Schema{"type": "object"}
		mutate(&r)
		res, err := s.Put(t.Context(), []registry.Record{NewRecord(def("ossa", "text", "first", "1.0.0")), r})
		if err == nil {
			t.Errorf("%s: Put = %+v, nil; want an error", name, res)
			continue
		}
		if errors.Is(err, registry.ErrConflict) {
			t.Errorf("%s: Put: %v; want an error other than a conflict", name, err)
		}
	}
	if p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, CountTotal: true}); err != nil || p.Total != 0 {
		t.Errorf("invalid batches wrote %v, %v", keyStrings(p.Items), err)
	}
}

func testNotFound(t *testing.T, s registry.Store) {
	k := key("ossa", "nowhere", "nothing", "1.0.0")
	_, err := s.Get(t.Context(), k)
	if !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v; want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), k.String()) {
		t.Errorf("error %q does not say which key", err)
	}
	if _, err := s.Deprecate(t.Context(), []registry.Deprecation{{Key: k, DeprecatedBy: "x"}}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Deprecate of a missing key: %v; want ErrNotFound", err)
	}
	put(t, s, def("ossa", "nowhere", "nothing", "1.0.1"))
	if _, err := s.Get(t.Context(), k); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get of a missing version of a stored capability: %v; want ErrNotFound", err)
	}
	vs, err := s.Versions(t.Context(), "ossa", "nowhere", "other")
	if err != nil || vs == nil || len(vs) != 0 {
		t.Errorf("Versions of a missing capability = %#v, %v; want an empty, non-nil slice and no error", vs, err)
	}
}

func testVersions(t *testing.T, s registry.Store) {
	ordered := []string{"0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0", "1.2.0", "1.9.0", "1.10.0", "1.10.1", "2.0.0-rc.1", "2.0.0", "10.0.0"}
	shuffled := slices.Clone(ordered)
	rand.New(rand.NewSource(7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, v := range shuffled {
		put(t, s, def("ossa", "math", "add", v))
	}
	put(t, s, def("ossa", "math", "sub", "5.0.0"), def("ossa", "math2", "add", "7.0.0"), def("mcp", "math", "add", "8.0.0"))
	vs, err := s.Versions(t.Context(), "ossa", "math", "add")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range vs {
		got = append(got, r.Key.Version)
		if r.Definition.Version != r.Key.Version || r.Digest == "" {
			t.Errorf("Versions returned a partial record: %+v", r)
		}
	}
	if !slices.Equal(got, ordered) {
		t.Errorf("Versions =\n%v\nwant (semver precedence)\n%v", got, ordered)
	}
	p, err := s.List(t.Context(), registry.ListFilter{Domain: "math", Name: "add"})
	if err != nil || !slices.Equal(keyStrings(p.Items), []string{"mcp:math/add@8.0.0", "ossa:math/add@10.0.0"}) {
		t.Errorf("latest of math/add = %v, %v; want 10.0.0 (and the mcp one)", keyStrings(p.Items), err)
	}
}

// filterFixture is a set of capabilities chosen to tell apart every
// ListFilter field.
func filterFixture() []capability.Definition {
	createIssue := def("ossa", "github", "create_issue", "1.0.0")
	createIssue.Domains = []string{"github.issues"}
	createIssue.Categories = []string{"crud.create"}
	createIssue.Intents = []string{"issues.create"}
	createIssue.Bindings = capability.Bindings{MCP: &capability.MCPBinding{Server: "github", Tool: "create_issue"}}
	createIssue.Provenance = &capability.Provenance{Method: "mcp_introspection"}

	listRepos := def("ossa", "github", "list_repos", "1.0.0")
	listRepos.Domains = []string{"github", "github.repos"}
	listRepos.Categories = []string{"crud.read", "search"}
	listRepos.Stability = capability.StabilityBeta
	listRepos.Bindings = capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://api.github.com/user/repos"}}

	listProjects := def("ossa", "gitlab", "list_projects", "1.0.0")
	listProjects.Categories = []string{"crud.read"}
	listProjects.Intents = []string{"projects.list"}
	listProjects.Stability = capability.StabilityExperimental
	listProjects.Bindings = capability.Bindings{CLI: &capability.CLIBinding{Command: "glab project list"}}
	listProjects.Provenance = &capability.Provenance{Method: "openapi"}

	commit1 := def("ossa", "git", "commit", "1.0.0")
	commit1.Domains = []string{"git"}
	commit1.Categories = []string{"vcs.write"}
	commit1.Intents = []string{"vcs.commit"}
	commit1.Bindings.Extra = map[string]any{"wasm": map[string]any{"module": "git.wasm"}}
	commit2 := commit1
	commit2.Version = "2.0.0"
	commit2.URI = "ossa:git/commit@2.0"
	commit2.Intents = nil

	readFile := def("mcp", "filesystem", "read_file", "1.0.0")
	readFile.Domains = []string{"filesystem.read"}
	readFile.Categories = []string{"crud.read"}
	readFile.Intents = []string{"files.read"}
	readFile.Bindings = capability.Bindings{MCP: &capability.MCPBinding{Server: "filesystem", Tool: "read_file"}}
	readFile.Provenance = &capability.Provenance{Method: "mcp_introspection"}

	send1 := def("ossa", "messaging", "send_text", "1.0.0")
	send1.Categories = []string{"messaging.send"}
	send1.Intents = []string{"messaging.send_text"}
	send1.Bindings = capability.Bindings{Delegation: &capability.DelegationBinding{Agent: "messenger"}}
	send1.Provenance = &capability.Provenance{SourceURL: "https://example.com"} // no method: manual
	send2 := send1
	send2.Version = "1.1.0-beta.1"
	send2.URI = "ossa:messaging/send_text@1.1"
	send2.Stability = capability.StabilityBeta

	pipeline := def("ossa", "devops", "run_pipeline", "1.0.0")
	pipeline.Domains = []string{"ci.pipelines"}
	pipeline.Categories = []string{"automation.run.pipeline"}

	return []capability.Definition{createIssue, listRepos, listProjects, commit1, commit2, readFile, send1, send2, pipeline}
}

func testListFilters(t *testing.T, s registry.Store) {
	defs := filterFixture()
	recs := make([]registry.Record, len(defs))
	tiers := map[string]string{"ossa:github/create_issue@1.0.0": "verified", "ossa:git/commit@1.0.0": "verified",
		"ossa:github/list_repos@1.0.0": "community", "ossa:git/commit@2.0.0": "trusted"}
	for i, d := range defs {
		recs[i] = NewRecord(d)
		recs[i].TrustTier = tiers[recs[i].Key.String()]
	}
	if _, err := s.Put(t.Context(), recs); err != nil {
		t.Fatalf("Put: %v", err)
	}
	const (
		createIssue  = "ossa:github/create_issue@1.0.0"
		listRepos    = "ossa:github/list_repos@1.0.0"
		listProjects = "ossa:gitlab/list_projects@1.0.0"
		commit1      = "ossa:git/commit@1.0.0"
		commit2      = "ossa:git/commit@2.0.0"
		readFile     = "mcp:filesystem/read_file@1.0.0"
		send1        = "ossa:messaging/send_text@1.0.0"
		send2        = "ossa:messaging/send_text@1.1.0-beta.1"
		pipeline     = "ossa:devops/run_pipeline@1.0.0"
	)
	tests := []struct {
		name string
		f    registry.ListFilter
		want []string // in List order
	}{
		{"all latest", registry.ListFilter{}, []string{readFile, pipeline, commit2, createIssue, listRepos, listProjects, send2}},
		{"all versions", registry.ListFilter{AllVersions: true}, []string{readFile, pipeline, commit1, commit2, createIssue, listRepos, listProjects, send1, send2}},
		{"scheme", registry.ListFilter{Scheme: "mcp"}, []string{readFile}},
		{"name", registry.ListFilter{Name: "commit", AllVersions: true}, []string{commit1, commit2}},
		{"domain exact", registry.ListFilter{Domain: "github"}, []string{createIssue, listRepos}},
		{"domain sub matches parent", registry.ListFilter{Domain: "github.issues"}, []string{createIssue, listRepos}},
		{"domain deeper", registry.ListFilter{Domain: "github.issues.comments"}, []string{createIssue, listRepos}},
		{"domain is not a string prefix", registry.ListFilter{Domain: "git"}, []string{commit2}},
		{"domain gith", registry.ListFilter{Domain: "gith"}, nil},
		{"domain parent matches sub only", registry.ListFilter{Domain: "ci"}, []string{pipeline}},
		{"domain child of sub", registry.ListFilter{Domain: "ci.pipelines.jobs"}, []string{pipeline}},
		{"domain partial segment", registry.ListFilter{Domain: "ci.pipe"}, nil},
		{"domain of mcp", registry.ListFilter{Domain: "filesystem.read"}, []string{readFile}},
		{"category parent", registry.ListFilter{Category: "crud"}, []string{readFile, createIssue, listRepos, listProjects}},
		{"category child", registry.ListFilter{Category: "crud.read.single"}, []string{readFile, listRepos, listProjects}},
		{"category partial segment", registry.ListFilter{Category: "crud.rea"}, nil},
		{"category deep", registry.ListFilter{Category: "automation.run"}, []string{pipeline}},
		{"category exact", registry.ListFilter{Category: "search"}, []string{listRepos}},
		{"stability beta latest", registry.ListFilter{Stability: "beta"}, []string{listRepos, send2}},
		{"stability stable latest", registry.ListFilter{Stability: "stable"}, []string{readFile, pipeline, commit2, createIssue}},
		{"stability stable all", registry.ListFilter{Stability: "stable", AllVersions: true}, []string{readFile, pipeline, commit1, commit2, createIssue, send1}},
		{"binding mcp", registry.ListFilter{BindingType: "mcp"}, []string{readFile, createIssue}},
		{"binding http", registry.ListFilter{BindingType: "http"}, []string{listRepos}},
		{"binding native", registry.ListFilter{BindingType: "native"}, []string{pipeline, commit2}},
		{"binding extra", registry.ListFilter{BindingType: "wasm", AllVersions: true}, []string{commit1, commit2}},
		{"binding none", registry.ListFilter{BindingType: "grpc"}, nil},
		{"source manual", registry.ListFilter{Source: "manual"}, []string{pipeline, commit2, listRepos, send2}},
		{"source mcp", registry.ListFilter{Source: "mcp_introspection"}, []string{readFile, createIssue}},
		{"source openapi", registry.ListFilter{Source: "openapi"}, []string{listProjects}},
		{"intent", registry.ListFilter{Intent: "issues.create"}, []string{createIssue}},
		{"intent is exact", registry.ListFilter{Intent: "issues"}, nil},
		{"intent of an older version, latest only", registry.ListFilter{Intent: "vcs.commit"}, nil},
		{"intent of an older version, all versions", registry.ListFilter{Intent: "vcs.commit", AllVersions: true}, []string{commit1}},
		{"trust latest", registry.ListFilter{TrustTier: "verified"}, []string{createIssue}},
		{"trust all versions", registry.ListFilter{TrustTier: "verified", AllVersions: true}, []string{commit1, createIssue}},
		{"trust of a newer version", registry.ListFilter{TrustTier: "trusted"}, []string{commit2}},
		{"trust none", registry.ListFilter{TrustTier: "untrusted"}, nil},
		{"trust combined", registry.ListFilter{Domain: "github", TrustTier: "community"}, []string{listRepos}},
		{"combined", registry.ListFilter{Domain: "github", BindingType: "http", Category: "crud", Stability: "beta"}, []string{listRepos}},
		{"combined none", registry.ListFilter{Domain: "github", BindingType: "cli"}, nil},
		{"nothing matches", registry.ListFilter{Scheme: "nope"}, nil},
	}
	for _, tt := range tests {
		if p, err := s.List(t.Context(), tt.f); err != nil || p.Total != registry.NotCounted {
			t.Errorf("%s: List(%+v) without CountTotal: Total %d, %v; want NotCounted", tt.name, tt.f, p.Total, err)
		}
		tt.f.CountTotal = true
		p, err := s.List(t.Context(), tt.f)
		if err != nil {
			t.Errorf("%s: List(%+v): %v", tt.name, tt.f, err)
			continue
		}
		if got := keyStrings(p.Items); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("%s: List(%+v) =\n%v\nwant\n%v", tt.name, tt.f, got, tt.want)
		}
		if p.Total != len(tt.want) || p.NextCursor != "" {
			t.Errorf("%s: Total %d, NextCursor %q; want %d, \"\"", tt.name, p.Total, p.NextCursor, len(tt.want))
		}
		checkListRaw(t, s, tt.f, p)
	}
}

// checkListRaw checks that ListRaw answers what List does, the stored
// JSON not decoded.
func checkListRaw(t *testing.T, s registry.Store, f registry.ListFilter, want registry.Page) {
	t.Helper()
	raw, err := s.ListRaw(t.Context(), f)
	if err != nil {
		t.Fatalf("ListRaw(%+v): %v", f, err)
	}
	if raw.Total != want.Total || raw.NextCursor != want.NextCursor || len(raw.Items) != len(want.Items) {
		t.Fatalf("ListRaw(%+v): %d items, total %d, cursor %q; List said %d, %d, %q", f, len(raw.Items), raw.Total, raw.NextCursor, len(want.Items), want.Total, want.NextCursor)
	}
	for i, r := range raw.Items {
		got, err := r.Decode()
		if err != nil {
			t.Fatalf("ListRaw(%+v) item %d: %v", f, i, err)
		}
		if !reflect.DeepEqual(got, want.Items[i]) {
			t.Errorf("ListRaw(%+v) item %d decodes to\n%+v\nList gave\n%+v", f, i, got, want.Items[i])
		}
	}
}

// walk reads every page of a query with the given page size, checking that
// Total stays the same and that every page but the last is full.
func walk(t *testing.T, limit int, query func(cursor string) (registry.Page, error)) (items []string, total int) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("limit %d: more than 1000 pages; the cursor does not advance", limit)
		}
		p, err := query(cursor)
		if err != nil {
			t.Fatalf("limit %d, page %d: %v", limit, pages, err)
		}
		if pages == 0 {
			total = p.Total
		} else if p.Total != total {
			t.Errorf("limit %d, page %d: Total %d, first page said %d", limit, pages, p.Total, total)
		}
		if len(p.Items) > limit {
			t.Fatalf("limit %d: page of %d items", limit, len(p.Items))
		}
		items = append(items, keyStrings(p.Items)...)
		if p.NextCursor == "" {
			return items, total
		}
		if len(p.Items) != limit {
			t.Errorf("limit %d, page %d: %d items but a next cursor", limit, pages, len(p.Items))
		}
		cursor = p.NextCursor
	}
}

// testListPagination checks that List pages add up to the whole list for
// several filters and page sizes, also when records are added between pages.
func testListPagination(t *testing.T, s registry.Store) {
	put(t, s, filterFixture()...)
	put(t, s, def("ossa", "git", "commit", "1.5.0-rc.1"), def("ossa", "git", "commit", "1.10.0"), def("ossa", "git", "commit", "1.9.0"))
	for _, f := range []registry.ListFilter{{}, {AllVersions: true}, {Domain: "github"}, {Category: "crud", AllVersions: true}, {Name: "commit", AllVersions: true}} {
		full, err := s.List(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		want := keyStrings(full.Items)
		for _, limit := range []int{1, 2, 3, 100} {
			got, total := walk(t, limit, func(cursor string) (registry.Page, error) {
				f := f
				f.Limit, f.Cursor, f.CountTotal = limit, cursor, true
				p, err := s.List(t.Context(), f)
				if err == nil {
					checkListRaw(t, s, f, p)
				}
				return p, err
			})
			if !slices.Equal(got, want) || total != len(want) {
				t.Errorf("filter %+v limit %d: pages gave %v (total %d); want %v", f, limit, got, total, want)
			}
		}
	}
	testListCursorSurvivesPuts(t, s)
}

// testListCursorSurvivesPuts checks that a cursor survives new records: the
// walk continues after the last item seen, and records added before it are
// not repeated.
func testListCursorSurvivesPuts(t *testing.T, s registry.Store) {
	first, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, def("ossa", "aaa", "x", "1.0.0"), def("ossa", "zzz", "x", "1.0.0"))
	rest, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	seen := keyStrings(first.Items)
	for _, k := range keyStrings(rest.Items) {
		if slices.Contains(seen, k) || k == "ossa:aaa/x@1.0.0" {
			t.Errorf("after a cursor, %s comes again or out of order", k)
		}
	}
	if got := keyStrings(rest.Items); len(got) == 0 || got[len(got)-1] != "ossa:zzz/x@1.0.0" {
		t.Errorf("after a cursor, new records later in the order are missing: %v", got)
	}
}

// testInvalidCursor checks that List and Search refuse cursors that are
// not theirs, and the limits they accept.
func testInvalidCursor(t *testing.T, s registry.Store) {
	put(t, s, filterFixture()...)
	p, err := s.List(t.Context(), registry.ListFilter{Limit: 1})
	if err != nil || p.NextCursor == "" {
		t.Fatalf("List: %v, cursor %q", err, p.NextCursor)
	}
	for name, f := range map[string]registry.ListFilter{
		"garbage":        {Cursor: "not a cursor!"},
		"base64 garbage": {Cursor: "eyJ4IjoxfQ"},
		"other filter":   {Cursor: p.NextCursor, Domain: "github"},
	} {
		if _, err := s.List(t.Context(), f); !errors.Is(err, registry.ErrInvalidCursor) {
			t.Errorf("%s: List: %v; want ErrInvalidCursor", name, err)
		}
	}
	if _, err := s.Search(t.Context(), registry.SearchQuery{Text: "commit", Filter: registry.ListFilter{Cursor: p.NextCursor}}); !errors.Is(err, registry.ErrInvalidCursor) {
		t.Errorf("Search with a List cursor: %v; want ErrInvalidCursor", err)
	}
	testLimits(t, s)
}

// testLimits checks that a negative limit and one above
// registry.MaxPageSize are refused, that the largest gives every result of
// filterFixture on one page, and that no limit gives a page of
// registry.DefaultPageSize.
func testLimits(t *testing.T, s registry.Store) {
	for _, limit := range []int{-1, registry.MaxPageSize + 1, math.MaxInt} {
		if _, err := s.List(t.Context(), registry.ListFilter{Limit: limit}); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("List with limit %d: %v; want ErrInvalid", limit, err)
		}
		if _, err := s.Search(t.Context(), registry.SearchQuery{Text: "list", Filter: registry.ListFilter{Limit: limit}}); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Search with limit %d: %v; want ErrInvalid", limit, err)
		}
	}
	if p, err := s.List(t.Context(), registry.ListFilter{Limit: registry.MaxPageSize}); err != nil || len(p.Items) != 7 || p.NextCursor != "" {
		t.Errorf("List with the largest limit = %d items, cursor %q, %v; want all 7", len(p.Items), p.NextCursor, err)
	}
	if p, err := s.Search(t.Context(), registry.SearchQuery{Text: "list", Filter: registry.ListFilter{Limit: registry.MaxPageSize}}); err != nil || len(p.Items) == 0 || p.NextCursor != "" {
		t.Errorf("Search with the largest limit = %d items, cursor %q, %v; want all", len(p.Items), p.NextCursor, err)
	}
	more := Synthetic(registry.DefaultPageSize+20, 1)
	put(t, s, more...)
	want := len(more) + len(filterFixture())
	p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true})
	if err != nil || len(p.Items) != registry.DefaultPageSize || p.NextCursor == "" {
		t.Errorf("List without a limit = %d items, cursor %q, %v; want the default page of %d and a cursor", len(p.Items), p.NextCursor, err, registry.DefaultPageSize)
	}
	if all, err := registry.ListAll(t.Context(), s, registry.ListFilter{AllVersions: true}); err != nil || len(all) != want {
		t.Errorf("ListAll = %d records, %v; want %d", len(all), err, want)
	}
}

func searchFixture() []capability.Definition {
	scanCode := def("ossa", "security", "scan_code", "1.0.0")
	scanCode.Title = "Scan code"
	scanCode.Description = "Looks at source files for known problems."

	audit := def("ossa", "security", "audit_logs", "1.0.0")
	audit.Title = "Audit logs"
	audit.Description = "Reads the logs. It can scan archives too: scan everything, scan again."

	probe := def("ossa", "network", "port_probe", "1.0.0")
	probe.Title = "Probe ports"
	probe.Description = "Opens connections to find services."
	probe.Keywords = []string{"scanner", "ports"}
	probe.Stability = capability.StabilityBeta

	weather := def("ossa", "weather", "forecast", "1.0.0")
	weather.Description = "Weather forecast for a city."
	weather.Intents = []string{"weather.forecast"}

	send := def("ossa", "messaging", "send_whatsapp", "2.1.0")
	send.Title = "Send a WhatsApp message"
	send.Description = "Sends a text message to a contact."
	send.Keywords = []string{"whatsapp", "chat"}
	send.Categories = []string{"messaging.send"}
	send.Intents = []string{"messaging.send_text"}
	return []capability.Definition{scanCode, audit, probe, weather, send}
}

// testSearchRanking checks the order of search results: name matches before
// description matches, the best match first, and no unrelated results.
func testSearchRanking(t *testing.T, s registry.Store) {
	put(t, s, searchFixture()...)
	ctx := t.Context()
	p, err := s.Search(ctx, registry.SearchQuery{Text: "scan"})
	if err != nil {
		t.Fatal(err)
	}
	got := keyStrings(p.Items)
	if len(got) < 2 || got[0] != "ossa:security/scan_code@1.0.0" || !slices.Contains(got, "ossa:security/audit_logs@1.0.0") {
		t.Fatalf("Search(scan) = %v; want scan_code (name match) first and audit_logs (description) after it", got)
	}
	if p.Total != len(got) {
		t.Errorf("Total %d for %d items", p.Total, len(got))
	}
	if slices.Contains(got, "ossa:weather/forecast@1.0.0") {
		t.Errorf("Search(scan) found the weather forecast: %v", got)
	}
	testSearchFirst(t, s)
	testSearchNothingAndEmpty(t, s)
}

// testSearchFirst checks which capability comes first for texts that match
// a name, title, keyword, intent, description or the prefix of a word.
func testSearchFirst(t *testing.T, s registry.Store) {
	ctx := t.Context()
	for _, tt := range []struct{ text, first string }{
		{"whatsapp", "ossa:messaging/send_whatsapp@2.1.0"},
		{"WhatsApp message", "ossa:messaging/send_whatsapp@2.1.0"},
		{"send_whatsapp", "ossa:messaging/send_whatsapp@2.1.0"},
		{"messaging.send_text", "ossa:messaging/send_whatsapp@2.1.0"},
		{"forecast", "ossa:weather/forecast@1.0.0"},
		{"scan code", "ossa:security/scan_code@1.0.0"},
		{"weath", "ossa:weather/forecast@1.0.0"},         // prefix of the last word
		{"probe ports", "ossa:network/port_probe@1.0.0"}, // title
		{"scanner", "ossa:network/port_probe@1.0.0"},     // keyword
		{"sends messages", "ossa:messaging/send_whatsapp@2.1.0"},
	} {
		p, err := s.Search(ctx, registry.SearchQuery{Text: tt.text})
		if err != nil {
			t.Errorf("Search(%q): %v", tt.text, err)
			continue
		}
		if len(p.Items) == 0 || p.Items[0].Key.String() != tt.first {
			t.Errorf("Search(%q) = %v; want %s first", tt.text, keyStrings(p.Items), tt.first)
		}
	}
}

// testSearchNothingAndEmpty checks that text matching nothing finds
// nothing, and that empty text lists in List order.
func testSearchNothingAndEmpty(t *testing.T, s registry.Store) {
	ctx := t.Context()
	if p, err := s.Search(ctx, registry.SearchQuery{Text: "zebra"}); err != nil || len(p.Items) != 0 || p.Total != 0 || p.NextCursor != "" {
		t.Errorf("Search(zebra) = %v total %d cursor %q, %v; want nothing", keyStrings(p.Items), p.Total, p.NextCursor, err)
	}
	// Empty text lists in List order.
	all, err := s.Search(ctx, registry.SearchQuery{})
	list, err2 := s.List(ctx, registry.ListFilter{})
	if err != nil || err2 != nil || !slices.Equal(keyStrings(all.Items), keyStrings(list.Items)) || all.Total != 5 {
		t.Errorf("Search(\"\") = %v (%v); want List order %v (%v)", keyStrings(all.Items), err, keyStrings(list.Items), err2)
	}
}

func testSearchFilters(t *testing.T, s registry.Store) {
	put(t, s, searchFixture()...)
	older := searchFixture()[0]
	older.Version = "0.9.0"
	older.URI = "ossa:security/scan_code@0.9"
	put(t, s, older)
	for _, tt := range []struct {
		q    registry.SearchQuery
		want []string
	}{
		{registry.SearchQuery{Text: "scan", Filter: registry.ListFilter{Domain: "network"}}, []string{"ossa:network/port_probe@1.0.0"}},
		{registry.SearchQuery{Text: "scan", Filter: registry.ListFilter{Stability: "beta"}}, []string{"ossa:network/port_probe@1.0.0"}},
		{registry.SearchQuery{Text: "scan", Filter: registry.ListFilter{Name: "scan_code"}}, []string{"ossa:security/scan_code@1.0.0"}},
		{registry.SearchQuery{Text: "scan", Filter: registry.ListFilter{Name: "scan_code", AllVersions: true}}, []string{"ossa:security/scan_code@0.9.0", "ossa:security/scan_code@1.0.0"}},
		{registry.SearchQuery{Text: "text", Filter: registry.ListFilter{Intent: "messaging.send_text"}}, []string{"ossa:messaging/send_whatsapp@2.1.0"}},
		{registry.SearchQuery{Text: "scan", Filter: registry.ListFilter{Domain: "weather"}}, nil},
	} {
		p, err := s.Search(t.Context(), tt.q)
		if err != nil {
			t.Errorf("Search(%+v): %v", tt.q, err)
			continue
		}
		got := keyStrings(p.Items)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) || p.Total != len(tt.want) {
			t.Errorf("Search(%+v) = %v total %d; want %v", tt.q, got, p.Total, tt.want)
		}
	}
}

func testSearchHostileText(t *testing.T, s registry.Store) {
	put(t, s, searchFixture()...)
	for _, text := range []string{
		`"foo`, `AND OR (`, `OR`, `NOT`, `NEAR(scan`, `*`, `scan*`, `"`, `""`, `'`, `''`, `\`, `-`, `--`, `-scan`, `+scan`,
		`:*`, `scan:*`, `scan & code | !x`, `!!!`, `a:b`, `title:scan`, `{scan code}`, `^scan`, `(`, `)`, `scan)`, `NEAR/2`,
		`'; DROP TABLE capabilities; --`, `%`, `_`, `scan%`, "\x00", "scan\x00code", "\xff\xfe", "日本語 検索", "🚀 scan",
		strings.Repeat("scan ", 2000), strings.Repeat("(", 500), "the", "the and of", "\t\n ",
	} {
		p, err := s.Search(t.Context(), registry.SearchQuery{Text: text, Filter: registry.ListFilter{Limit: 2}})
		if err != nil {
			t.Errorf("Search(%.40q): %v", text, err)
			continue
		}
		if p.NextCursor != "" {
			if _, err := s.Search(t.Context(), registry.SearchQuery{Text: text, Filter: registry.ListFilter{Limit: 2, Cursor: p.NextCursor}}); err != nil {
				t.Errorf("Search(%.40q) second page: %v", text, err)
			}
		}
	}
	// Operators in the text are words, not syntax: "-scan" still finds scan.
	for _, text := range []string{`-scan`, `"scan`, `scan OR`, `NOT scan`} {
		p, err := s.Search(t.Context(), registry.SearchQuery{Text: text})
		if err != nil || len(p.Items) == 0 || p.Items[0].Key.Name != "scan_code" {
			t.Errorf("Search(%q) = %v, %v; want scan_code first", text, keyStrings(p.Items), err)
		}
	}
	// The table is still there.
	if p, err := s.List(t.Context(), registry.ListFilter{CountTotal: true}); err != nil || p.Total != 5 {
		t.Errorf("List after hostile searches: %d, %v", p.Total, err)
	}
}

// widgetFixture is nine capabilities that match "widget" in their title,
// keywords or description, across three domains, and one that does not.
func widgetFixture() []capability.Definition {
	var defs []capability.Definition
	for i := 0; i < 9; i++ {
		d := def("ossa", fmt.Sprintf("d%d", i%3), fmt.Sprintf("tool_%d", i), "1.0.0")
		switch i % 3 {
		case 0:
			d.Title = "Widget maker"
		case 1:
			d.Keywords = []string{"widget"}
		default:
			d.Description = "Works with a widget."
		}
		defs = append(defs, d)
	}
	return append(defs, def("ossa", "other", "gadget", "1.0.0"))
}

// testSearchPagination checks that search pages add up to the whole result,
// that a cursor only works for its own search, and that results can shrink
// between pages.
func testSearchPagination(t *testing.T, s registry.Store) {
	put(t, s, widgetFixture()...)
	q := registry.SearchQuery{Text: "widget"}
	full, err := s.Search(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	want := keyStrings(full.Items)
	if len(want) != 9 || full.Total != 9 {
		t.Fatalf("Search(widget) = %v (total %d); want 9", want, full.Total)
	}
	for _, limit := range []int{1, 2, 3, 4} {
		got, total := walk(t, limit, func(cursor string) (registry.Page, error) {
			q := q
			q.Filter.Limit, q.Filter.Cursor = limit, cursor
			return s.Search(t.Context(), q)
		})
		if !slices.Equal(got, want) || total != 9 {
			t.Errorf("limit %d: pages gave %v (total %d); want %v", limit, got, total, want)
		}
	}
	testSearchForeignCursor(t, s)
	testSearchShrinks(t, s)
}

// testSearchForeignCursor checks that a search cursor is refused by a
// search of other text and by List.
func testSearchForeignCursor(t *testing.T, s registry.Store) {
	p, err := s.Search(t.Context(), registry.SearchQuery{Text: "widget", Filter: registry.ListFilter{Limit: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(t.Context(), registry.SearchQuery{Text: "gadget", Filter: registry.ListFilter{Cursor: p.NextCursor}}); !errors.Is(err, registry.ErrInvalidCursor) {
		t.Errorf("cursor of another search text: %v; want ErrInvalidCursor", err)
	}
	if _, err := s.List(t.Context(), registry.ListFilter{Cursor: p.NextCursor}); !errors.Is(err, registry.ErrInvalidCursor) {
		t.Errorf("Search cursor given to List: %v; want ErrInvalidCursor", err)
	}
}

// testSearchShrinks checks that results can shrink between pages (new
// versions replace matching ones): a cursor past the end gives an empty
// last page with the current Total.
func testSearchShrinks(t *testing.T, s registry.Store) {
	var sprockets []capability.Definition
	for i := 0; i < 3; i++ {
		d := def("ossa", "parts", fmt.Sprintf("part_%d", i), "1.0.0")
		d.Description = "A sprocket."
		sprockets = append(sprockets, d)
	}
	put(t, s, sprockets...)
	q := registry.SearchQuery{Text: "sprocket", Filter: registry.ListFilter{Limit: 2}}
	p, err := s.Search(t.Context(), q)
	if err != nil || len(p.Items) != 2 || p.Total != 3 || p.NextCursor == "" {
		t.Fatalf("Search(sprocket) = %v total %d cursor %q, %v", keyStrings(p.Items), p.Total, p.NextCursor, err)
	}
	for i := range sprockets {
		sprockets[i].Version = "2.0.0"
		sprockets[i].URI = fmt.Sprintf("ossa:parts/part_%d@2.0", i)
		sprockets[i].Description = "Replaced."
	}
	put(t, s, sprockets[0], sprockets[1])
	q.Filter.Cursor = p.NextCursor
	p, err = s.Search(t.Context(), q)
	if err != nil || len(p.Items) != 0 || p.Total != 1 || p.NextCursor != "" {
		t.Errorf("second page after results shrank = %v total %d cursor %q, %v; want empty, total 1", keyStrings(p.Items), p.Total, p.NextCursor, err)
	}
}

// testDeprecate checks Deprecate: one version with every field, a zero At,
// and batches of several versions, which are all or nothing.
func testDeprecate(t *testing.T, s registry.Store) {
	d := def("ossa", "text", "echo", "1.0.0")
	put(t, s, d, def("ossa", "text", "echo", "2.0.0"))
	testDeprecateOne(t, s, d)
	testDeprecateZeroAt(t, s)
	testDeprecateBatch(t, s)
}

// deprecatedAt is the time testDeprecate's deprecations give.
var deprecatedAt = time.Date(2025, 6, 1, 12, 0, 0, 500000000, time.UTC)

// checkDeprecated checks that r is d (under k) deprecated by
// testDeprecateOne's deprecation at deprecatedAt.
func checkDeprecated(t *testing.T, where string, r registry.Record, d capability.Definition, k registry.Key) {
	t.Helper()
	def := r.Definition
	if def.Stability != capability.StabilityDeprecated || def.DeprecatedBy != "ossa:text/echo@2.0" || def.SunsetDate != "2026-01-01" || def.MigrationGuide != "Call 2.0." {
		t.Errorf("%s: definition %q %q %q %q; want the deprecation", where, def.Stability, def.DeprecatedBy, def.SunsetDate, def.MigrationGuide)
	}
	if r.DeprecatedAt == nil || !r.DeprecatedAt.Equal(deprecatedAt) {
		t.Errorf("%s: DeprecatedAt = %v, want %v", where, r.DeprecatedAt, deprecatedAt)
	}
	if r.Digest != Digest(d) || r.Key != k || def.Description != d.Description {
		t.Errorf("%s: deprecation changed the record's identity: %+v", where, r)
	}
}

// testDeprecateOne deprecates the stored d with every field set and checks
// the result, Get, List and that re-putting d stays idempotent.
func testDeprecateOne(t *testing.T, s registry.Store, d capability.Definition) {
	ctx := t.Context()
	k := key("ossa", "text", "echo", "1.0.0")
	got, err := s.Deprecate(ctx, []registry.Deprecation{{Key: k, DeprecatedBy: "ossa:text/echo@2.0", SunsetDate: "2026-01-01", MigrationGuide: "Call 2.0.", At: deprecatedAt}})
	if err != nil || len(got) != 1 {
		t.Fatalf("Deprecate: %v, %d records", err, len(got))
	}
	checkDeprecated(t, "Deprecate result", got[0], d, k)
	stored, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	checkDeprecated(t, "Get", stored, d, k)
	p, err := s.List(ctx, registry.ListFilter{Stability: capability.StabilityDeprecated, AllVersions: true})
	if err != nil || !slices.Equal(keyStrings(p.Items), []string{k.String()}) {
		t.Errorf("List(deprecated) = %v, %v; want %s", keyStrings(p.Items), err, k)
	}
	// Re-registering the original content is still idempotent: the digest
	// is of what was registered.
	if res := put(t, s, d); res[0].Created {
		t.Errorf("re-Put of a deprecated version: Created = true")
	}
}

// testDeprecateZeroAt checks that a zero At means now.
func testDeprecateZeroAt(t *testing.T, s registry.Store) {
	before := time.Now().Add(-time.Second)
	got, err := s.Deprecate(t.Context(), []registry.Deprecation{{Key: key("ossa", "text", "echo", "2.0.0")}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].DeprecatedAt == nil || got[0].DeprecatedAt.Before(before) || got[0].Definition.Stability != capability.StabilityDeprecated {
		t.Errorf("Deprecate with zero At: DeprecatedAt %v stability %q", got[0].DeprecatedAt, got[0].Definition.Stability)
	}
}

// testDeprecateBatch deprecates several versions in one call: all or
// nothing. A missing version among them leaves the others as they were, and
// the error names it.
func testDeprecateBatch(t *testing.T, s registry.Store) {
	ctx := t.Context()
	put(t, s, def("ossa", "text", "shout", "1.0.0"), def("ossa", "text", "shout", "1.1.0"))
	k10, k11 := key("ossa", "text", "shout", "1.0.0"), key("ossa", "text", "shout", "1.1.0")
	testDeprecateBatchMissing(t, s, k10, k11)
	got, err := s.Deprecate(ctx, []registry.Deprecation{{Key: k11, MigrationGuide: "stop", At: deprecatedAt}, {Key: k10, MigrationGuide: "stop", At: deprecatedAt}})
	if err != nil || len(got) != 2 || got[0].Key != k11 || got[1].Key != k10 {
		t.Fatalf("Deprecate of two versions: %v %+v", err, got)
	}
	for _, k := range []registry.Key{k10, k11} {
		if r, err := s.Get(ctx, k); err != nil || r.Definition.MigrationGuide != "stop" || r.DeprecatedAt == nil {
			t.Errorf("%s after the batch: %+v %v", k, r.Definition, err)
		}
	}
	if got, err := s.Deprecate(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Deprecate of nothing: %v %v", got, err)
	}
}

// testDeprecateBatchMissing deprecates the stored k10 and k11 together with
// a missing version: the call fails naming it and leaves both as they were.
func testDeprecateBatchMissing(t *testing.T, s registry.Store, k10, k11 registry.Key) {
	ctx := t.Context()
	missing := key("ossa", "text", "shout", "1.2.0")
	_, err := s.Deprecate(ctx, []registry.Deprecation{{Key: k10, MigrationGuide: "stop"}, {Key: missing, MigrationGuide: "stop"}, {Key: k11, MigrationGuide: "stop"}})
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), missing.String()) {
		t.Fatalf("Deprecate with a missing version: %v; want ErrNotFound naming %s", err, missing)
	}
	for _, k := range []registry.Key{k10, k11} {
		if r, err := s.Get(ctx, k); err != nil || r.DeprecatedAt != nil || r.Definition.Stability == capability.StabilityDeprecated {
			t.Errorf("%s was deprecated by a refused batch: %+v %v", k, r.DeprecatedAt, err)
		}
	}
}

// testGetRaw checks GetRaw: the stored JSON decodes to the definition Get
// returns, with its digest and tier.
func testGetRaw(t *testing.T, s registry.Store) {
	ctx := t.Context()
	rec := NewRecord(fullDefinition())
	rec.TrustTier = "trusted"
	if _, err := s.Put(ctx, []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetRaw(ctx, rec.Key)
	if err != nil {
		t.Fatalf("GetRaw: %v", err)
	}
	got, err := s.Get(ctx, rec.Key)
	if err != nil {
		t.Fatal(err)
	}
	var d capability.Definition
	if err := json.Unmarshal(raw.Definition, &d); err != nil {
		t.Fatalf("GetRaw's definition is not JSON of a definition: %v", err)
	}
	if !reflect.DeepEqual(d, got.Definition) || raw.Digest != rec.Digest || raw.TrustTier != "trusted" {
		t.Errorf("GetRaw = digest %s tier %q, definition equal %v; want %s trusted, equal", raw.Digest, raw.TrustTier, reflect.DeepEqual(d, got.Definition), rec.Digest)
	}
	missing := rec.Key
	missing.Version = "9.9.9"
	if _, err := s.GetRaw(ctx, missing); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), missing.String()) {
		t.Errorf("GetRaw of a missing version: %v; want ErrNotFound naming it", err)
	}
}

// testPutEncoded checks that a record's JSON, when set, is the stored
// document as it is (the service encodes each definition once, and the
// store does not encode it again), and that the results do not carry it.
func testPutEncoded(t *testing.T, s registry.Store) {
	ctx := t.Context()
	rec := NewRecord(fullDefinition())
	d := rec.Definition
	d.Description = "encoded by the caller"
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	rec.JSON = b
	if _, err := s.Put(ctx, []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetRaw(ctx, rec.Key)
	if err != nil {
		t.Fatalf("GetRaw: %v", err)
	}
	if !bytes.Equal(raw.Definition, b) {
		t.Errorf("stored document:\n%s\nwant the record's JSON as it is:\n%s", raw.Definition, b)
	}
	got, err := s.Get(ctx, rec.Key)
	if err != nil || got.Definition.Description != d.Description || got.JSON != nil {
		t.Errorf("Get = description %q, JSON %d bytes, %v; want %q from the stored JSON, no JSON", got.Definition.Description, len(got.JSON), err, d.Description)
	}
}

// watch subscribes to s until the test ends.
func watch(t *testing.T, s registry.Store) <-chan registry.Event {
	t.Helper()
	ch, err := s.Watch(t.Context())
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	return ch
}

// expectEvent waits up to 10 seconds for the next event and checks it.
func expectEvent(t *testing.T, ch <-chan registry.Event, want registry.Event) {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel closed; want %+v", want)
		}
		if e != want {
			t.Fatalf("event %+v, want %+v", e, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event within 10s; want %+v", want)
	}
}

// testWatch checks that watchers get an event for every record created or
// deprecated, none for an idempotent Put, and that the channel closes when
// the context ends.
func testWatch(t *testing.T, s registry.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	other := watch(t, s) // a second watcher sees the same events
	a, b := def("ossa", "w", "a", "1.0.0"), def("ossa", "w", "b", "1.0.0")
	put(t, s, a)
	ka, kb := key("ossa", "w", "a", "1.0.0"), key("ossa", "w", "b", "1.0.0")
	expectEvent(t, ch, registry.Event{Kind: registry.EventRegistered, Key: ka})
	put(t, s, a) // idempotent: no event
	put(t, s, b)
	expectEvent(t, ch, registry.Event{Kind: registry.EventRegistered, Key: kb})
	if _, err := s.Deprecate(ctx, []registry.Deprecation{{Key: ka, DeprecatedBy: "ossa:w/b@1.0"}}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, ch, registry.Event{Kind: registry.EventDeprecated, Key: ka})
	for _, want := range []registry.Event{{Kind: registry.EventRegistered, Key: ka}, {Kind: registry.EventRegistered, Key: kb}, {Kind: registry.EventDeprecated, Key: ka}} {
		expectEvent(t, other, want)
	}
	// A batch reports each created record.
	put(t, s, def("ossa", "w", "c", "1.0.0"), def("ossa", "w", "d", "1.0.0"), b)
	expectBatchEvents(t, ch)
	cancel()
	expectClosed(t, ch)
}

// expectBatchEvents waits up to 10 seconds for the events of a batch that
// created ossa:w/c and ossa:w/d, in any order.
func expectBatchEvents(t *testing.T, ch <-chan registry.Event) {
	t.Helper()
	seen := map[string]bool{}
	for range 2 {
		select {
		case e := <-ch:
			seen[e.Key.String()] = e.Kind == registry.EventRegistered
		case <-time.After(10 * time.Second):
			t.Fatalf("batch events: got %v within 10s, want c and d", seen)
		}
	}
	if !seen["ossa:w/c@1.0.0"] || !seen["ossa:w/d@1.0.0"] {
		t.Errorf("batch events = %v, want c and d registered", seen)
	}
}

// expectClosed waits up to 10 seconds for ch, whose context has ended, to
// close, taking any events still on it.
func expectClosed(t *testing.T, ch <-chan registry.Event) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed within 10s of its context ending")
		}
	}
}

func testWatchClosedOnClose(t *testing.T, s registry.Store) {
	ch := watch(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("event after Close; want the channel closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch channel not closed within 10s of Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Get(t.Context(), key("ossa", "a", "b", "1.0.0")); err == nil || errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get after Close: %v; want an error saying the store is closed", err)
	}
}

// racedPut is the outcome of one of testConcurrentSameKey's Puts: which
// content it put, and whether it created the version.
type racedPut struct {
	group   int
	created bool
	err     error
}

// racePuts puts recs[i%2] from n goroutines at once and returns every outcome.
func racePuts(t *testing.T, s registry.Store, recs [2]registry.Record, n int) []racedPut {
	results := make(chan racedPut, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(group int) {
			defer wg.Done()
			<-start
			res, err := s.Put(t.Context(), []registry.Record{recs[group]})
			r := racedPut{group: group, err: err}
			if err == nil {
				r.created = res[0].Created
			}
			results <- r
		}(i % 2)
	}
	close(start)
	wg.Wait()
	close(results)
	var all []racedPut
	for r := range results {
		all = append(all, r)
	}
	return all
}

// raceWinner returns the group of the one Put that created the version,
// failing the test when none or more than one did.
func raceWinner(t *testing.T, all []racedPut) int {
	t.Helper()
	winner := -1
	for _, r := range all {
		if r.created {
			if winner >= 0 {
				t.Errorf("more than one Put created the version")
			}
			winner = r.group
		}
	}
	if winner < 0 {
		t.Fatalf("no Put created the version: %+v", all)
	}
	return winner
}

// checkRaceLosers checks the Puts that did not create the version: those
// of the winner's content succeeded, the others got a ConflictError naming
// the winner's digest.
func checkRaceLosers(t *testing.T, all []racedPut, recs [2]registry.Record, winner int) {
	t.Helper()
	for _, r := range all {
		switch {
		case r.group == winner && r.err != nil:
			t.Errorf("Put with the winner's digest: %v; want Created=false and no error", r.err)
		case r.group != winner:
			var ce *registry.ConflictError
			if !errors.As(r.err, &ce) || ce.ExistingDigest != recs[winner].Digest || ce.NewDigest != recs[r.group].Digest {
				t.Errorf("Put with the other digest: %v; want a ConflictError naming the winner's digest", r.err)
			}
		}
	}
}

// testConcurrentSameKey races Puts of two contents under one version:
// exactly one creates it, the others of its content succeed, those of the
// other content get a ConflictError, and the store holds the winner's.
func testConcurrentSameKey(t *testing.T, s registry.Store) {
	const n = 16
	d1 := def("ossa", "race", "same", "1.0.0")
	d2 := d1
	d2.Description = "the other content"
	recs := [2]registry.Record{NewRecord(d1), NewRecord(d2)}
	all := racePuts(t, s, recs, n)
	winner := raceWinner(t, all)
	checkRaceLosers(t, all, recs, winner)
	got, err := s.Get(t.Context(), recs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != recs[winner].Digest || !reflect.DeepEqual(normalized(got.Definition), normalized(recs[winner].Definition)) {
		t.Errorf("stored record %s %q is not the winner's", got.Digest, got.Definition.Description)
	}
	if vs, err := s.Versions(t.Context(), "ossa", "race", "same"); err != nil || len(vs) != 1 {
		t.Errorf("Versions = %d, %v; want exactly 1", len(vs), err)
	}
}

func testConcurrentDifferentKeys(t *testing.T, s registry.Store) {
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each goroutine writes a batch that shares a capability with
			// its neighbour (different versions), to exercise the latest
			// version bookkeeping under concurrency.
			batch := []registry.Record{
				NewRecord(def("ossa", "race", fmt.Sprintf("tool_%d", i), "1.0.0")),
				NewRecord(def("ossa", "race", "shared", fmt.Sprintf("1.%d.0", i))),
			}
			res, err := s.Put(t.Context(), batch)
			if err == nil && (!res[0].Created || !res[1].Created) {
				err = fmt.Errorf("results %+v, want both created", res)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Put of distinct keys: %v", err)
		}
	}
	p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, CountTotal: true})
	if err != nil || p.Total != 2*n {
		t.Errorf("List total = %d, %v; want %d", p.Total, err, 2*n)
	}
	latest, err := s.List(t.Context(), registry.ListFilter{Name: "shared"})
	if err != nil || !slices.Equal(keyStrings(latest.Items), []string{fmt.Sprintf("ossa:race/shared@1.%d.0", n-1)}) {
		t.Errorf("latest of shared = %v, %v; want exactly 1.%d.0", keyStrings(latest.Items), err, n-1)
	}
}
