package storetest

import (
	"slices"
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

// testVersionsOf checks that VersionsOf answers each capability asked,
// in the order asked, as Versions does: registered ones in precedence,
// unknown ones empty.
func testVersionsOf(t *testing.T, s registry.Store) {
	latestFixture(t, s)
	put(t, s, def("mcp", "zoo", "a", "9.0.0"))
	ctx := t.Context()
	caps := []registry.Key{
		{Scheme: "ossa", Domain: "zoo", Name: "e"}, {Scheme: "ossa", Domain: "zoo", Name: "nothing"},
		{Scheme: "mcp", Domain: "zoo", Name: "a"}, {Scheme: "ossa", Domain: "zoo", Name: "a", Version: "7.0.0"},
		{Scheme: "ossa", Domain: "zoo", Name: "b"},
	}
	got, err := s.VersionsOf(ctx, caps)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(caps) {
		t.Fatalf("VersionsOf returned %d lists for %d capabilities", len(got), len(caps))
	}
	for i, c := range caps {
		want, err := s.Versions(ctx, c.Scheme, c.Domain, c.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] == nil || !slices.Equal(keyStrings(got[i]), keyStrings(want)) {
			t.Errorf("VersionsOf: %s:%s/%s has %v, Versions %v", c.Scheme, c.Domain, c.Name, keyStrings(got[i]), keyStrings(want))
		}
		for _, r := range got[i] {
			if r.Definition.Version != r.Key.Version || r.Digest == "" {
				t.Errorf("VersionsOf returned a partial record: %+v", r)
			}
		}
	}
	if len(got[1]) != 0 || len(got[4]) != 2 {
		t.Errorf("VersionsOf: %d versions of an unknown capability and %d of zoo/b, want 0 and 2", len(got[1]), len(got[4]))
	}
	if none, err := s.VersionsOf(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("VersionsOf(nil) = %v, %v; want nothing", none, err)
	}
}
