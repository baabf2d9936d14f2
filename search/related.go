package search

import (
	"math/bits"
	"sort"
	"sync"

	"github.com/caphub/caphub/search/internal/wordvec"
)

// Related words: a query's word also looks for the index's words whose
// English word vectors (package wordvec, from GloVe) are nearest to its own,
// so that "song" finds an API that says "track" and "picture" one that
// says "image". Each is weighed by its similarity, below the word itself
// and below a synonym.
const (
	relatedMin    = 0.5  // the least cosine similarity of a related word
	relatedMax    = 4    // related words per query word
	relatedWeight = 0.55 // × the similarity: the weight of a related word
	// A word the query has that is in at most one document in rareShare
	// also looks for its related words, at rareRelatedWeight × their
	// weight.
	rareShare         = 256
	rareRelatedWeight = 0.5
	// relatedSignBits is how many of the dimensions' signs two vectors
	// may disagree on and still be compared in full: a vector within
	// relatedMin of another disagrees on about a third of them, so the
	// signs rule out most of the vocabulary at the cost of a popcount.
	relatedSignBits = 40
	maxRelatedCache = 4096 // query words whose related words an index remembers
)

// vecVocab is the index's terms that have a word vector, laid out for
// scanning, and the related words found so far.
type vecVocab struct {
	terms []string
	q     []int8 // dims bytes per term
	scale []float32
	signs [][2]uint64 // the signs of each term's first 128 dimensions
	dims  int

	mu    sync.Mutex
	cache map[string][]relatedTerm
}

type relatedTerm struct {
	term string
	sim  float32
}

// vectorVocabulary returns the index's terms with vectors; the caller holds
// at least the read lock. It is rebuilt when stale (a term was added or
// dropped), and nil when there are no word vectors.
func (ix *Index) vectorVocabulary() *vecVocab {
	if v := ix.vecs.Load(); v != nil {
		return v
	}
	tab, err := wordvec.Builtin()
	if err != nil || tab.Len() == 0 {
		return nil
	}
	v := &vecVocab{dims: tab.Dims(), cache: map[string][]relatedTerm{}}
	for _, t := range ix.vocabulary() {
		vec, ok := tab.Lookup(t)
		if !ok {
			continue
		}
		v.terms = append(v.terms, t)
		v.q = append(v.q, vec.Q...)
		v.scale = append(v.scale, vec.Scale)
		v.signs = append(v.signs, signsOf(vec.Q))
	}
	ix.vecs.Store(v)
	return v
}

// signsOf packs the signs of the first 128 dimensions of q.
func signsOf(q []int8) [2]uint64 {
	var s [2]uint64
	for i, x := range q[:min(len(q), 128)] {
		if x < 0 {
			s[i/64] |= 1 << (i % 64)
		}
	}
	return s
}

// related returns up to relatedMax terms of the index nearest to stem
// (other than stem), most similar first.
func (v *vecVocab) related(stem string) []relatedTerm {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	r, ok := v.cache[stem]
	v.mu.Unlock()
	if ok {
		return r
	}
	tab, _ := wordvec.Builtin()
	vec, ok := tab.Lookup(stem)
	if ok {
		r = v.scan(stem, vec)
	}
	v.mu.Lock()
	if len(v.cache) >= maxRelatedCache {
		clear(v.cache)
	}
	v.cache[stem] = r
	v.mu.Unlock()
	return r
}

// scan compares vec with every term's vector whose signs mostly agree.
func (v *vecVocab) scan(stem string, vec wordvec.Vec) []relatedTerm {
	var out []relatedTerm
	sg := signsOf(vec.Q)
	for i, s := range v.signs {
		if bits.OnesCount64(s[0]^sg[0])+bits.OnesCount64(s[1]^sg[1]) > relatedSignBits {
			continue
		}
		sim := float32(wordvec.DotQ(vec.Q, v.q[i*v.dims:(i+1)*v.dims])) * vec.Scale * v.scale[i]
		if sim < relatedMin || v.terms[i] == stem {
			continue
		}
		out = append(out, relatedTerm{v.terms[i], sim})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].sim != out[j].sim {
			return out[i].sim > out[j].sim
		}
		return out[i].term < out[j].term
	})
	return out[:min(len(out), relatedMax)]
}
