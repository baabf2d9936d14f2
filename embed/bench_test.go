package embed_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/embed/embedtest"
	"github.com/caphub/caphub/registry"
)

// benchDims is the length of the benchmarks' vectors (OpenAI's
// text-embedding-3 models shortened, or a small local model).
const benchDims = 256

// randomVectors returns n vectors of benchDims from seed, for n
// capabilities over 50 domains, each with versions 1.0.0 and, for every
// fourth, 1.1.0.
func randomVectors(n int) []embed.Vector {
	r := rand.New(rand.NewSource(1))
	out := make([]embed.Vector, n)
	for i := range out {
		v := make([]float32, benchDims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		version := "1.0.0"
		if i%4 == 3 {
			version = "1.1.0"
		}
		out[i] = embed.Vector{Key: registry.Key{Scheme: "ossa", Domain: fmt.Sprintf("domain%d", i%50), Name: fmt.Sprintf("cap_%d", i-i%4/3), Version: version}, Vector: v}
	}
	return out
}

// BenchmarkRank ranks n vectors of 256 dimensions for a query whose vector
// is cached: the cost of the scan and the selection of the best 20.
func BenchmarkRank(b *testing.B) {
	srv := embedtest.New(b, embedtest.Options{Dimensions: benchDims})
	for _, n := range []int{10_000, 100_000} {
		c, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: srv.Model()})
		if err != nil {
			b.Fatal(err)
		}
		r := embed.NewRanker(c, embed.RankerOptions{})
		for _, v := range randomVectors(n) {
			if err := r.Add(v); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		for _, all := range []bool{false, true} {
			name := fmt.Sprintf("n=%d", n)
			if all {
				name += "/all_versions"
			}
			b.Run(name, func(b *testing.B) {
				if _, err := r.Rank(ctx, "send an email to a customer", 20); err != nil { // caches the query
					b.Fatal(err)
				}
				for b.Loop() {
					got, err := r.RankWith(ctx, "send an email to a customer", 20, embed.RankOptions{AllVersions: all})
					if err != nil || len(got) != 20 {
						b.Fatalf("%d results, %v", len(got), err)
					}
				}
			})
		}
	}
}

// BenchmarkLoad reads n stored vectors of 256 dimensions from SQLite into
// a ranker, as an indexer does at start.
func BenchmarkLoad(b *testing.B) {
	srv := embedtest.New(b, embedtest.Options{Dimensions: benchDims})
	c, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: srv.Model()})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	st := openSQLite(b)
	ctx := context.Background()
	vs := randomVectors(n)
	for i := 0; i < n; i += 1000 {
		if err := embed.PutVectors(ctx, st, c.Model(), vs[i:i+1000]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
		for b.Loop() {
			r := embed.NewRanker(c, embed.RankerOptions{})
			if _, err := r.Load(ctx, st); err != nil || r.Len() != n {
				b.Fatalf("loaded %d, %v", r.Len(), err)
			}
		}
	})
}
