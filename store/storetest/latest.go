package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// latestFixture puts, in one batch after a first one, new capabilities
// (one with two first versions), versions above, below and equal to the
// stored latest, and a version differing from the latest only in build
// metadata. Every description has the word "zebra". It returns the latest
// version of each capability and every version, as keys.
func latestFixture(t *testing.T, s registry.Store) (latest, all []string) {
	d := func(name, version string) capability.Definition {
		c := def("ossa", "zoo", name, version)
		c.Description = "Feeds the zebra."
		return c
	}
	put(t, s, d("a", "1.0.0"), d("b", "2.0.0"), d("c", "1.0.0"), d("e", "1.0.0+b1"))
	res := put(t, s, d("d", "1.0.0"), d("a", "1.1.0"), d("d", "1.1.0"), d("b", "1.5.0"), d("c", "1.0.0"), d("e", "1.0.0+b2"), d("f", "3.0.0"))
	created := []bool{true, true, true, true, false, true, true}
	for i, r := range res {
		if r.Created != created[i] {
			t.Errorf("Put %s: Created %v, want %v", r.Key, r.Created, created[i])
		}
	}
	latest = []string{"ossa:zoo/a@1.1.0", "ossa:zoo/b@2.0.0", "ossa:zoo/c@1.0.0", "ossa:zoo/d@1.1.0", "ossa:zoo/e@1.0.0+b2", "ossa:zoo/f@3.0.0"}
	all = []string{"ossa:zoo/a@1.0.0", "ossa:zoo/a@1.1.0", "ossa:zoo/b@1.5.0", "ossa:zoo/b@2.0.0", "ossa:zoo/c@1.0.0",
		"ossa:zoo/d@1.0.0", "ossa:zoo/d@1.1.0", "ossa:zoo/e@1.0.0+b1", "ossa:zoo/e@1.0.0+b2", "ossa:zoo/f@3.0.0"}
	return latest, all
}

// testBatchLatest checks that a batch mixing first versions and new
// versions of stored capabilities leaves exactly the highest version of
// each one as its latest, for List and for Search (whose stores may keep
// a latest-only index).
func testBatchLatest(t *testing.T, s registry.Store) {
	latest, all := latestFixture(t, s)
	ctx := t.Context()
	for _, c := range []struct {
		name string
		all  bool
		want []string
	}{{"latest", false, latest}, {"all versions", true, all}} {
		p, err := s.List(ctx, registry.ListFilter{Domain: "zoo", AllVersions: c.all, CountTotal: true})
		if got := keyStrings(p.Items); err != nil || !slices.Equal(got, c.want) || p.Total != len(c.want) {
			t.Errorf("List %s = %v (total %d), %v; want %v", c.name, got, p.Total, err, c.want)
		}
		for _, f := range []registry.ListFilter{{AllVersions: c.all}, {Domain: "zoo", AllVersions: c.all}} {
			p, err := s.Search(ctx, registry.SearchQuery{Text: "zebra", Filter: f})
			got := keyStrings(p.Items)
			slices.Sort(got)
			if err != nil || !slices.Equal(got, c.want) || p.Total != len(c.want) {
				t.Errorf("Search(zebra) %s, filter %+v = %v (total %d), %v; want %v", c.name, f, got, p.Total, err, c.want)
			}
		}
	}
}

// testPrecedingVersions checks that PrecedingVersions answers each key
// asked, in the order asked, with the highest registered version of its
// capability not above it (level: the same precedence, whatever the build
// metadata), nil when there is none.
func testPrecedingVersions(t *testing.T, s registry.Store) {
	latestFixture(t, s)
	put(t, s, def("mcp", "zoo", "a", "9.0.0"), def("ossa", "zoo", "b", "2.1.0-rc.1"))
	ctx := t.Context()
	for _, c := range []struct{ key, want string }{
		{"ossa:zoo/a@1.0.5", "ossa:zoo/a@1.0.0"},
		{"ossa:zoo/a@2.0.0", "ossa:zoo/a@1.1.0"},
		{"ossa:zoo/a@0.9.0", ""},
		{"ossa:zoo/a@1.1.0", "ossa:zoo/a@1.1.0"},
		{"mcp:zoo/a@10.0.0", "mcp:zoo/a@9.0.0"},
		{"mcp:zoo/a@8.0.0", ""},
		{"ossa:zoo/nothing@1.0.0", ""},
		{"ossa:zoo/b@1.9.0", "ossa:zoo/b@1.5.0"},
		{"ossa:zoo/b@2.1.0-beta", "ossa:zoo/b@2.0.0"},
		{"ossa:zoo/b@2.1.0", "ossa:zoo/b@2.1.0-rc.1"},
		{"ossa:zoo/e@1.0.0+b3", "ossa:zoo/e@1.0.0+b2"},
		{"ossa:zoo/e@1.0.0", "ossa:zoo/e@1.0.0+b2"},
		{"ossa:zoo/e@1.0.1", "ossa:zoo/e@1.0.0+b2"},
		{"ossa:zoo/a@1.0.5", "ossa:zoo/a@1.0.0"}, // asked twice: answered twice
	} {
		scheme, rest, _ := strings.Cut(c.key, ":")
		dn, version, _ := strings.Cut(rest, "@")
		domain, name, _ := strings.Cut(dn, "/")
		k := registry.Key{Scheme: scheme, Domain: domain, Name: name, Version: version}
		got, err := s.PrecedingVersions(ctx, []registry.Key{{Scheme: "ossa", Domain: "zoo", Name: "f", Version: "1.0.0"}, k})
		if err != nil {
			t.Fatalf("PrecedingVersions(%s): %v", c.key, err)
		}
		if len(got) != 2 || got[0] != nil {
			t.Fatalf("PrecedingVersions(zoo/f@1.0.0, %s) = %d records, the first %v; want 2, the first nil", c.key, len(got), got[0])
		}
		switch r := got[1]; {
		case r == nil && c.want != "":
			t.Errorf("PrecedingVersions(%s) = none, want %s", c.key, c.want)
		case r != nil && r.Key.String() != c.want:
			t.Errorf("PrecedingVersions(%s) = %s, want %q", c.key, r.Key, c.want)
		case r != nil && (r.Definition.Version != r.Key.Version || r.Digest == ""):
			t.Errorf("PrecedingVersions(%s) returned a partial record: %+v", c.key, r)
		}
	}
	if none, err := s.PrecedingVersions(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("PrecedingVersions(nil) = %v, %v; want nothing", none, err)
	}
	if _, err := s.PrecedingVersions(ctx, []registry.Key{{Scheme: "ossa", Domain: "zoo", Name: "a", Version: "one"}}); err == nil {
		t.Error("PrecedingVersions of the version \"one\" succeeded, want an error")
	}
}
