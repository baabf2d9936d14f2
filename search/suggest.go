package search

import (
	"sort"
	"unicode/utf8"
)

// nearest returns up to n known terms within a small edit distance of t
// (one edit for words of up to five letters, two for longer ones), nearest
// and most common first; the caller holds the read lock.
func (ix *Index) nearest(vocab []string, t string, n int) []string {
	limit := 1
	if utf8.RuneCountInString(t) > 5 {
		limit = 2
	}
	type cand struct {
		term string
		dist int
		df   int
	}
	var cands []cand
	for _, v := range vocab {
		if d := len(v) - len(t); d > limit || -d > limit {
			continue
		}
		// A misspelling seldom changes the first letter (or swaps the
		// first two): the rest of the vocabulary is not compared.
		if v == "" || t == "" || v[0] != t[0] && !(len(v) > 1 && len(t) > 1 && v[0] == t[1] && v[1] == t[0]) {
			continue
		}
		if d := distance(t, v, limit); d <= limit {
			cands = append(cands, cand{v, d, ix.df(v)})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		if a.df != b.df {
			return a.df > b.df
		}
		return a.term < b.term
	})
	var out []string
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.term)
	}
	return out
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance
// between a and b in bytes, or limit+1 once it is sure to exceed limit.
func distance(a, b string, limit int) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
