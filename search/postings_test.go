package search

import (
	"math/rand"
	"slices"
	"testing"
)

// TestPostingListRoundTrips checks that a packed posting list gives back
// every posting as added (documents far apart and close, frequencies in any
// fields, up to 255), in order, and that find reaches each one through the
// skips and misses the documents it does not hold.
func TestPostingListRoundTrips(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var pl postingList
	var want []posting
	doc := int32(-1)
	for range 5*skipEvery + 17 {
		gap := int32(1 + r.Intn(3))
		if r.Intn(10) == 0 {
			gap = int32(1 + r.Intn(1<<22)) // a varint of several bytes
		}
		doc += gap
		p := posting{doc: doc}
		for f := range p.tf {
			if r.Intn(3) == 0 {
				p.tf[f] = uint8(1 + r.Intn(255))
			}
		}
		pl.add(&p)
		want = append(want, p)
	}
	if int(pl.n) != len(want) || pl.last != doc {
		t.Fatalf("the list counts %d postings, last %d; want %d, last %d", pl.n, pl.last, len(want), doc)
	}
	var got []posting
	var p posting
	for it := pl.iter(); it.next(&p); {
		got = append(got, p)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d postings, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("posting %d decodes as %+v, want %+v", i, got[i], want[i])
		}
		if p, ok := pl.find(want[i].doc); !ok || p != want[i] {
			t.Fatalf("find(%d) = %+v, %v; want %+v", want[i].doc, p, ok, want[i])
		}
		if i > 0 && want[i].doc > want[i-1].doc+1 {
			if p, ok := pl.find(want[i].doc - 1); ok {
				t.Fatalf("find(%d) found %+v in a list without it", want[i].doc-1, p)
			}
		}
	}
	if _, ok := pl.find(doc + 1); ok {
		t.Fatalf("find past the last document found one")
	}
	if len(pl.skips) != (len(want)-1)/skipEvery {
		t.Errorf("%d skips for %d postings, want one every %d", len(pl.skips), len(want), skipEvery)
	}
}

// TestObjectWords checks the reading of a document's object terms, kept
// as one string: none for an empty object, each term once otherwise.
func TestObjectWords(t *testing.T) {
	for object, want := range map[string][]string{"": nil, "comment": {"comment"}, "pull request review": {"pull", "request", "review"}} {
		var got []string
		for w := range objectWords(object) {
			got = append(got, w)
		}
		if !slices.Equal(got, want) {
			t.Errorf("objectWords(%q) = %q, want %q", object, got, want)
		}
	}
}
