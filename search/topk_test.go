package search

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestTopKIsTheSortedPrefix checks that topK keeps the first n of a full
// sort of what it is offered, ties in ID order, for any n.
func TestTopKIsTheSortedPrefix(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := range 500 {
		cands := make([]scored, r.Intn(60))
		for i := range cands {
			// Few distinct scores: many ties.
			cands[i] = scored{doc: int32(i), score: float64(r.Intn(5)), id: fmt.Sprintf("id%03d", r.Intn(1000))}
		}
		all := slices.Clone(cands)
		slices.SortFunc(all, func(a, b scored) int {
			if better(a, b) {
				return -1
			}
			if better(b, a) {
				return 1
			}
			return 0
		})
		n := r.Intn(len(cands)+3) - 1 // -1: all of them
		k := topK{n: n}
		for _, c := range cands {
			k.add(c)
		}
		want := all
		if n >= 0 {
			want = all[:min(n, len(all))]
		}
		got := k.sorted()
		if len(got) != len(want) {
			t.Fatalf("round %d: topK(%d) of %d kept %d", round, n, len(cands), len(got))
		}
		for i := range want {
			if got[i].score != want[i].score || got[i].id != want[i].id {
				t.Fatalf("round %d: topK(%d) hit %d is %+v, the full sort's %+v", round, n, i, got[i], want[i])
			}
		}
	}
}

// randomIndex is an index of randomDocs.
func randomIndex(r *rand.Rand, n int) *Index {
	ix := NewIndex()
	for _, d := range randomDocs(r, n) {
		ix.Put(d)
	}
	return ix
}

// randomDocs are n documents of random text from a small vocabulary
// (verbs, things, API names), so that queries match many documents with
// many equal scores; every third document is not current.
func randomDocs(r *rand.Rand, n int) []Doc {
	verbs := strings.Fields("create list get delete send update archive search")
	things := strings.Fields("issue message file user invoice ticket repository report channel")
	apis := strings.Fields("github slack box jira stripe")
	extra := strings.Fields("secure fast batch quota tenant webhook streaming")
	pick := func(l []string) string { return l[r.Intn(len(l))] }
	var docs []Doc
	for i := range n {
		verb, thing, api := pick(verbs), pick(things), pick(apis)
		d := Doc{ID: fmt.Sprintf("ossa:%s/%s_%s_%d@1.0.0", api, verb, thing, i), Scope: api, Object: thing + "s", Action: actionVerbs[verb], Current: i%3 != 0}
		d.Text[FieldName] = verb + "_" + thing
		d.Text[FieldTitle] = verb + " a " + thing
		if r.Intn(2) == 0 {
			d.Text[FieldDescription] = fmt.Sprintf("%s the %s %s of %s", verb, pick(extra), thing, api)
		}
		d.Text[FieldTags] = pick(extra)
		d.Text[FieldDomain] = api
		d.Many = Many(r.Intn(3))
		docs = append(docs, d)
	}
	return docs
}

// TestPagesAreTheFullRanking checks that every page of a search is the
// same slice of the whole ranking (Limit 0: every match scored, nothing
// left out early), with the same Total, on random catalogs whose queries
// match many documents with equal scores.
func TestPagesAreTheFullRanking(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	queries := []string{"issue", "create issue", "send a message in slack", "list my files", "secure quota", "archive the reports of a user", "github", "who am I", "delete tenant webhook", "repository"}
	for round := range 6 {
		ix := randomIndex(r, 300+r.Intn(400))
		for _, q := range queries {
			for _, current := range []bool{false, true} {
				keep := func(meta any) bool { return true }
				if round%2 == 1 {
					keep = func(meta any) bool { return meta.(int)%4 != 0 }
				}
				ix.mu.Lock()
				for i := range ix.docs {
					ix.docs[i].meta = i
				}
				ix.mu.Unlock()
				all := ix.Search(Query{Text: q, CurrentOnly: current, Keep: keep})
				for _, limit := range []int{1, 3, 10, 25} {
					for offset := 0; offset < all.Total+limit; offset += limit + r.Intn(2) {
						page := ix.Search(Query{Text: q, CurrentOnly: current, Keep: keep, Offset: offset, Limit: limit})
						if page.Total != all.Total {
							t.Fatalf("%q offset %d limit %d: Total %d, without a limit %d", q, offset, limit, page.Total, all.Total)
						}
						want := all.Hits[min(offset, len(all.Hits)):min(offset+limit, len(all.Hits))]
						if len(page.Hits) != len(want) {
							t.Fatalf("%q offset %d limit %d: %d hits, want %d", q, offset, limit, len(page.Hits), len(want))
						}
						for i := range want {
							if page.Hits[i].ID != want[i].ID || page.Hits[i].Score != want[i].Score {
								t.Fatalf("%q offset %d limit %d: hit %d is %s (%v), the full ranking's %s (%v)", q, offset, limit, i, page.Hits[i].ID, page.Hits[i].Score, want[i].ID, want[i].Score)
							}
						}
					}
				}
			}
		}
	}
}

// TestTiesRankInIDOrder checks that documents of equal scores rank in ID
// order whatever the order they were indexed in.
func TestTiesRankInIDOrder(t *testing.T) {
	docs := []string{"ossa:a/x@1.0.0", "ossa:a/y@1.0.0", "ossa:b/x@1.0.0", "ossa:c/x@1.0.0", "ossa:c/z@2.0.0"}
	r := rand.New(rand.NewSource(3))
	for range 20 {
		ix := NewIndex()
		for _, i := range r.Perm(len(docs)) {
			d := Doc{ID: docs[i], Scope: "same"}
			d.Text[FieldTitle] = "export the report"
			ix.Put(d)
		}
		for _, limit := range []int{0, 2, 5} {
			res := ix.Search(Query{Text: "export report", Limit: limit})
			want := docs
			if limit > 0 {
				want = docs[:limit]
			}
			if got := ids(res); !slices.Equal(got, want) {
				t.Fatalf("limit %d: %q, want %q", limit, got, want)
			}
		}
	}
}

// TestPutAgainChangesNoScore checks that putting documents again as they
// were (the registry re-reads a capability on each of its notifications,
// and again for its own big writes, as often as these race) leaves every
// score as it was: a replaced document's postings stay until compaction
// and counted in its words' document frequencies, so that rankings
// depended on how the notifications raced.
func TestPutAgainChangesNoScore(t *testing.T) {
	docs := randomDocs(rand.New(rand.NewSource(4)), 400)
	once, again := NewIndex(), NewIndex()
	for _, d := range docs {
		once.Put(d)
		again.Put(d)
	}
	r := rand.New(rand.NewSource(5))
	for range 3 {
		for _, i := range r.Perm(len(docs))[:200] {
			again.Put(docs[i])
		}
	}
	for _, q := range []string{"issue", "create issue", "send a message in slack", "secure quota"} {
		a, b := once.Search(Query{Text: q, Limit: 10}), again.Search(Query{Text: q, Limit: 10})
		if a.Total != b.Total || len(a.Hits) != len(b.Hits) {
			t.Fatalf("%q: %d hits of %d, after putting documents again %d of %d", q, len(a.Hits), a.Total, len(b.Hits), b.Total)
		}
		for i := range a.Hits {
			if a.Hits[i].ID != b.Hits[i].ID || a.Hits[i].Score != b.Hits[i].Score {
				t.Fatalf("%q: hit %d is %s (%v), after putting documents again %s (%v)", q, i, a.Hits[i].ID, a.Hits[i].Score, b.Hits[i].ID, b.Hits[i].Score)
			}
		}
	}
}

// TestCompactedRanksAsBuilt checks that an index that dropped its deleted
// documents (compaction renumbers them) ranks as one built from the
// documents left, current marks and all.
func TestCompactedRanksAsBuilt(t *testing.T) {
	docs := randomDocs(rand.New(rand.NewSource(6)), 2100)
	ix := NewIndex()
	for _, d := range docs {
		ix.Put(d)
	}
	// 1025 deletions compact: more than 1024, and than a third of the
	// rest.
	gone := map[int]bool{}
	for _, i := range rand.New(rand.NewSource(7)).Perm(len(docs))[:1025] {
		gone[i] = true
		ix.Delete(docs[i].ID)
	}
	built := NewIndex()
	for i, d := range docs {
		if !gone[i] {
			built.Put(d)
		}
	}
	if ix.dead != 0 || len(ix.docs) != len(ix.hot) || len(ix.docs) != built.Len() {
		t.Fatalf("after compaction: %d dead, %d docs, %d hot, want 0 dead and %d", ix.dead, len(ix.docs), len(ix.hot), built.Len())
	}
	for _, q := range []string{"issue", "create issue", "send a message in slack", "secure quota", "list my files"} {
		for _, current := range []bool{false, true} {
			a, b := ix.Search(Query{Text: q, Limit: 20, CurrentOnly: current}), built.Search(Query{Text: q, Limit: 20, CurrentOnly: current})
			if a.Total != b.Total || len(a.Hits) != len(b.Hits) {
				t.Fatalf("%q: %d hits of %d, built without the deleted %d of %d", q, len(a.Hits), a.Total, len(b.Hits), b.Total)
			}
			for i := range a.Hits {
				if a.Hits[i].ID != b.Hits[i].ID || a.Hits[i].Score != b.Hits[i].Score {
					t.Fatalf("%q: hit %d is %s (%v), built without the deleted %s (%v)", q, i, a.Hits[i].ID, a.Hits[i].Score, b.Hits[i].ID, b.Hits[i].Score)
				}
			}
		}
	}
}
