package registry

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/caphub/caphub/capability"
)

// storedRecords are n records as a store hands them to the search index:
// each decoded from its own JSON, so that no two share a string, over 50
// domains with a few categories, intents, binding types and sources.
func storedRecords(t testing.TB, n int) [][]byte {
	return records(t, n, 1, 7)
}

// records are storedRecords whose versions have one of subs subdomains of
// their domain and one of intents intents: with many (as
// storetest.Synthetic has), few versions have the same attributes, though
// each attribute is shared.
func records(t testing.TB, n, subs, intents int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	for i := range out {
		domain := fmt.Sprintf("domain%d", i%50)
		name := fmt.Sprintf("thing_%d", i/3)
		version := fmt.Sprintf("1.%d.0", i%3)
		d := capability.Definition{
			URI: "ossa:" + domain + "/" + name + "@" + version, Name: name, Domain: domain, Version: version,
			Description: "Reads a thing.", Stability: []string{"stable", "beta"}[i%2],
			Domains:    []string{fmt.Sprintf("%s.sub%d", domain, i%subs)},
			Categories: []string{[]string{"crud.read", "crud.create", "crud.update"}[i%3]},
			Intents:    []string{fmt.Sprintf("things.act_%d", i%intents)},
			Provenance: &capability.Provenance{Method: []string{"openapi_import", "mcp_introspection"}[i%2]},
		}
		if i%4 == 0 {
			d.Bindings.MCP = &capability.MCPBinding{Server: "srv", Tool: name}
		} else {
			d.Bindings.HTTP = &capability.HTTPBinding{Method: "GET", URL: "https://example.com/" + name}
		}
		data, err := json.Marshal(Record{Key: Key{Scheme: "ossa", Domain: domain, Name: name, Version: version}, Definition: d, TrustTier: "community"})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

func decodeRecord(t testing.TB, data []byte) *Record {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// liveHeap is the heap in use after two collections (the second empties
// the pools' victim caches).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestIndexedMemory bounds what the search index keeps of each version to
// filter it: at 100,000 capabilities it is held for every version (164k in
// bench/registry's registry), and it kept each decoded attribute string and
// slice of its record (about 330 bytes a version); the attributes many
// versions share are now held once.
func TestIndexedMemory(t *testing.T) {
	const n = 20000
	if per := indexedBytes(t, storedRecords(t, n)); per > 130 {
		t.Errorf("the index keeps %.0f bytes a version to filter it; at most 130 expected (its key, and the attributes versions share held once)", per)
	}
	// Each version's attributes a combination of their own (17 subdomains
	// and 13 intents over 50 domains, 3 categories and 2 sources: no two
	// of the 20000 alike): interning the whole combination held each one
	// apart (380 bytes a version).
	if per := indexedBytes(t, records(t, n, 17, 13)); per > 130 {
		t.Errorf("the index keeps %.0f bytes a version to filter it where no two versions have the same attributes; at most 130 expected (its key, and each attribute held once)", per)
	}
}

// indexedBytes is the live heap indexedOf keeps a record of blobs.
func indexedBytes(t *testing.T, blobs [][]byte) float64 {
	kept := make([]*indexed, len(blobs))
	before := liveHeap()
	for i, b := range blobs {
		kept[i] = indexedOf(decodeRecord(t, b))
	}
	per := float64(liveHeap()-before) / float64(len(blobs))
	runtime.KeepAlive(kept)
	runtime.KeepAlive(blobs)
	t.Logf("%.0f bytes a version", per)
	return per
}

// TestIndexedMatches checks the index's filter against what ListFilter
// says of every field it reads.
func TestIndexedMatches(t *testing.T) {
	d := capability.Definition{
		Domain: "github.issues", Domains: []string{"vcs.git"}, Stability: "beta",
		Categories: []string{"crud.read", "search"}, Intents: []string{"issues.list"},
		Provenance: &capability.Provenance{Method: "openapi_import"},
		Bindings:   capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://x"}, CLI: &capability.CLIBinding{Command: "gh"}},
	}
	k := Key{Scheme: "ossa", Domain: "github.issues", Name: "list", Version: "1.0.0"}
	m := indexedOf(&Record{Key: k, Definition: d, TrustTier: "verified"})
	if m.key() != k || m.id != k.String() {
		t.Fatalf("the indexed version's key is %+v (id %q), want %+v", m.key(), m.id, k)
	}
	for _, c := range []struct {
		f    ListFilter
		want bool
	}{
		{ListFilter{}, true},
		{ListFilter{Scheme: "ossa", Name: "list"}, true},
		{ListFilter{Scheme: "mcp"}, false},
		{ListFilter{Name: "lis"}, false},
		{ListFilter{Stability: "beta"}, true},
		{ListFilter{Stability: "stable"}, false},
		{ListFilter{Source: "openapi_import"}, true},
		{ListFilter{Source: "manual"}, false},
		{ListFilter{TrustTier: "verified"}, true},
		{ListFilter{TrustTier: "community"}, false},
		{ListFilter{Domain: "github"}, true},
		{ListFilter{Domain: "github.issues.comments"}, true},
		{ListFilter{Domain: "vcs"}, true},
		{ListFilter{Domain: "gitlab"}, false},
		{ListFilter{Category: "crud"}, true},
		{ListFilter{Category: "search"}, true},
		{ListFilter{Category: "crud.create"}, false},
		{ListFilter{Intent: "issues.list"}, true},
		{ListFilter{Intent: "issues"}, false},
		{ListFilter{BindingType: "cli"}, true},
		{ListFilter{BindingType: "http"}, true},
		{ListFilter{BindingType: "mcp"}, false},
	} {
		if got := m.matches(&c.f); got != c.want {
			t.Errorf("matches(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}
