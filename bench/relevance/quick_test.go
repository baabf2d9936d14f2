package relevance

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	searchpkg "github.com/caphub/caphub/search"
)

// Ranking work without the catalog's import: TestDumpCatalog writes the
// SQLite catalog's versions to a file once (-relevance.dump), then
// TestQuick (-relevance.quick) indexes that file straight into a
// searchpkg.Index, as the registry does, and scores every set in a second or
// two instead of the minute an import takes. TestRelevance stays the
// measure: the quick figures only guide.
var (
	dumpFile    = flag.String("relevance.dump", "", "write the SQLite catalog's versions to this file (JSON lines) for -relevance.quick")
	quickFile   = flag.String("relevance.quick", "", "score every query set on a searchpkg.Index built from this file of -relevance.dump, without importing the catalog")
	quickMisses = flag.String("relevance.quickmisses", "", "with -relevance.quick, print the misses of the named sets (comma-separated file names)")
	quickWhy    = flag.String("relevance.why", "", "with -relevance.quick, print why each of this query's top 10 ranked where it did")
)

// maxDumpLine bounds one line of a dump: one definition.
const maxDumpLine = 16 << 20

// A dumped is one version of a dump.
type dumped struct {
	Key registry.Key          `json:"key"`
	Def capability.Definition `json:"def"`
}

// TestDumpCatalog writes every version of the SQLite catalog, in the
// store's list order, to *dumpFile.
func TestDumpCatalog(t *testing.T) {
	if *dumpFile == "" {
		t.Skip("set -relevance.dump=FILE to write the catalog for -relevance.quick")
	}
	cat := catalogFor(t, storeSQLite)
	f, err := os.Create(*dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	filter := registry.ListFilter{AllVersions: true, Limit: 500}
	n := 0
	for {
		page, err := cat.svc.List(context.Background(), filter)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			if err := enc.Encode(dumped{Key: r.Key, Def: r.Definition}); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if page.NextCursor == "" {
			break
		}
		filter.Cursor = page.NextCursor
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d versions to %s", n, *dumpFile)
}

// TestQuick scores every query set on an index of the dump *quickFile.
func TestQuick(t *testing.T) {
	if *quickFile == "" {
		t.Skip("set -relevance.quick=FILE (written by -relevance.dump) to score the sets without importing the catalog")
	}
	ix := quickIndex(t, *quickFile)
	if *quickWhy != "" {
		for i, h := range ix.Search(searchpkg.Query{Text: *quickWhy, Limit: topK, CurrentOnly: true, Explain: true}).Hits {
			t.Logf("%d. %s %.3f\n\t%s", i+1, h.ID, h.Score, strings.Join(h.Why, "\n\t"))
		}
		return
	}
	show := map[string]bool{}
	for _, s := range strings.Split(*quickMisses, ",") {
		show[s] = true
	}
	for _, set := range loadSets(t) {
		outs := make([]outcome, 0, len(set.queries))
		for _, q := range set.queries {
			o := outcome{q: q}
			for _, h := range ix.Search(searchpkg.Query{Text: q.Q, Limit: topK, CurrentOnly: true}).Hits {
				base, _, _ := strings.Cut(h.ID, "@")
				o.top = append(o.top, base)
				if o.rank == 0 && slices.Contains(q.Want, base) {
					o.rank = len(o.top)
				}
			}
			outs = append(outs, o)
		}
		if *ranksFile != "" {
			writeRanks(t, "quick", set.name, outs)
		}
		all := scores(outs)["all"]
		t.Logf("%-14s r@1 %.3f  r@5 %.3f  MRR %.3f", set.name, all.recall1(), all.recall5(), all.mrr())
		if show[set.name] {
			t.Logf("%s, answers not in the top 5:\n%s", set.name, misses(outs))
		}
	}
}

// quickIndex indexes the dump in path as the registry's buildIndex does:
// in list order, the last version of each capability current.
func quickIndex(t testing.TB, path string) *searchpkg.Index {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix := searchpkg.NewIndex()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxDumpLine)
	var prev string
	for sc.Scan() {
		var d dumped
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		base := d.Key.Scheme + ":" + d.Key.Domain + "/" + d.Key.Name
		if prev != "" && !strings.HasPrefix(prev, base+"@") {
			ix.SetCurrent(prev, true)
		}
		ix.Put(searchpkg.DocOf(d.Key.String(), &d.Def, nil))
		prev = d.Key.String()
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if prev != "" {
		ix.SetCurrent(prev, true)
	}
	return ix
}

// BenchmarkQuick times one search (ten results) on the index of the dump
// *quickFile, as BenchmarkSearch does through the registry: each op is one
// query of the files, in turn. It compares rankings' costs without
// importing the catalog.
func BenchmarkQuick(b *testing.B) {
	if *quickFile == "" {
		b.Skip("set -relevance.quick=FILE (written by -relevance.dump)")
	}
	ix := quickIndex(b, *quickFile)
	timeSearches(b, allQueries(b), func(text string) error {
		ix.Search(searchpkg.Query{Text: text, Limit: topK, CurrentOnly: true})
		return nil
	})
}
