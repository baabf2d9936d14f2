package search_test

import (
	"math/rand"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/search"
	"github.com/caphub/caphub/store/storetest"
)

// benchDocs is the size of the benchmarks' catalog: issue 15's target.
const benchDocs = 100_000

var (
	benchOnce  sync.Once
	benchIndex *search.Index
)

// synthetic returns an index of storetest.Synthetic(n), each capability's
// last version marked current, as the registry builds it.
func synthetic(n int) *search.Index {
	ix := search.NewIndex()
	defs := storetest.Synthetic(n, 1)
	for i := range defs {
		d := &defs[i]
		doc := search.DocOf(d.URI, d, nil)
		doc.Current = i == len(defs)-1 || defs[i+1].Name != d.Name || defs[i+1].Domain != d.Domain
		ix.Put(doc)
	}
	return ix
}

func benchIndex100k() *search.Index {
	benchOnce.Do(func() { benchIndex = synthetic(benchDocs) })
	return benchIndex
}

// BenchmarkSearch100k searches a 100k catalog with bench/registry's query
// mix, 10 results a page of current versions, and reports the latency
// percentiles besides the mean, in wall time and in the process's CPU
// time (GC included), which a loaded machine inflates less.
func BenchmarkSearch100k(b *testing.B) {
	ix := benchIndex100k()
	r := rand.New(rand.NewSource(1))
	var took, cpu []time.Duration
	for b.Loop() {
		q := search.Query{Text: storetest.SearchQuery(r), Limit: 10, CurrentOnly: true}
		c0, ok := storetest.CPUTime()
		start := time.Now()
		ix.Search(q)
		took = append(took, time.Since(start))
		if c1, _ := storetest.CPUTime(); ok {
			cpu = append(cpu, c1-c0)
		}
	}
	report := func(d []time.Duration, unit string) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		for _, p := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p95", 0.95}, {"p99", 0.99}} {
			b.ReportMetric(float64(d[int(p.q*float64(len(d)-1))].Microseconds()), p.name+"-"+unit)
		}
	}
	report(took, "µs")
	report(cpu, "cpu-µs")
}

// BenchmarkSearch100kQueries searches each query of the mix on its own.
func BenchmarkSearch100kQueries(b *testing.B) {
	ix := benchIndex100k()
	for _, q := range append(storetest.SearchQueries(), "scan invoice", "secure message") {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				ix.Search(search.Query{Text: q, Limit: 10, CurrentOnly: true})
			}
		})
	}
}

// syntheticDocs returns the documents of storetest.Synthetic(n), each
// capability's last version marked current, as the registry builds them.
func syntheticDocs(n int) []search.Doc {
	defs := storetest.Synthetic(n, 1)
	docs := make([]search.Doc, len(defs))
	for i := range defs {
		d := &defs[i]
		docs[i] = search.DocOf(d.URI, d, nil)
		docs[i].Current = i == len(defs)-1 || defs[i+1].Name != d.Name || defs[i+1].Domain != d.Domain
	}
	return docs
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkIndexBuild100k puts a 100k catalog's documents (analysed
// beforehand) into a new index: its allocations a build, and the live heap
// the built index holds a document (live-B/doc), which is what the
// registry's index costs at 100k capabilities.
func BenchmarkIndexBuild100k(b *testing.B) {
	docs := syntheticDocs(benchDocs)
	var held int64
	for b.Loop() {
		b.StopTimer()
		before := liveHeap()
		b.StartTimer()
		ix := search.NewIndex()
		for _, d := range docs {
			ix.Put(d)
		}
		b.StopTimer()
		held = liveHeap() - before
		runtime.KeepAlive(ix)
		b.StartTimer()
	}
	b.ReportMetric(float64(held)/float64(len(docs)), "live-B/doc")
	runtime.KeepAlive(docs)
}
