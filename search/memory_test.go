package search_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/caphub/caphub/search"
)

// TestIndexKeepsNoText checks that the index holds its terms, not the
// texts they came from: a term can be a slice of its text (a word already
// lower-case), and an index that kept it would keep every definition's
// description alive, the registry's whole text in memory.
func TestIndexKeepsNoText(t *testing.T) {
	const docs, size = 30, 1 << 20
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	ix := search.NewIndex()
	before := heap()
	for i := range docs {
		// One word, then a megabyte of spaces: each text is its own
		// allocation, of which the index needs a few bytes.
		word := func(field string) string {
			return "zq" + field + strconv.Itoa(i) + strings.Repeat(" ", size)
		}
		scope := word("scope")
		// The scope is the document's API name, kept whole: here a short
		// slice of a large text.
		d := search.Doc{ID: "ossa:big/doc" + strconv.Itoa(i) + "@1.0.0", Object: word("object"), Scope: scope[:strings.IndexByte(scope, ' ')]}
		d.Text[search.FieldDescription] = word("description")
		ix.Put(d)
	}
	grown := int64(heap()) - int64(before)
	if ix.Len() != docs {
		t.Fatalf("the index has %d documents, want %d", ix.Len(), docs)
	}
	if r := ix.Search(search.Query{Text: "zqdescription7", Limit: 1}); len(r.Hits) != 1 || r.Hits[0].ID != "ossa:big/doc7@1.0.0" {
		t.Fatalf("search for a document's word: %+v", r.Hits)
	}
	// The texts are 3×30 MiB; the index's own data is a few KiB.
	if grown > 4<<20 {
		t.Errorf("after indexing %d documents of 3 texts of %d bytes each, the heap holds %d bytes more: the index keeps the texts", docs, size, grown)
	}
	runtime.KeepAlive(ix)
}
