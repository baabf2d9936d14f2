package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Budgets of the analyser: a text is read up to maxTextBytes, a word longer
// than maxWordBytes is cut, and a query keeps at most maxQueryWords words.
const (
	maxTextBytes  = 64 << 10
	maxWordBytes  = 64
	maxQueryWords = 32
)

// Words splits text into lower-case words: runs of letters and digits,
// with identifiers split where their case changes (reposCreateFork →
// repos create fork, HTTPServer → http server) and at every other
// character (issues/create, pulls_list, get-zen, /repos/{owner}/forks).
// A letter run and a digit run are separate words (oauth2 → oauth 2).
func Words(text string) []string {
	if len(text) > maxTextBytes {
		text = text[:maxTextBytes]
	}
	var out []string
	start := -1
	prev := rune(0)
	flush := func(end int) {
		if start >= 0 && end > start {
			w := strings.ToLower(text[start:end])
			if len(w) > maxWordBytes {
				w = w[:maxWordBytes]
				for !utf8.ValidString(w) {
					w = w[:len(w)-1]
				}
			}
			out = append(out, w)
		}
		start = -1
	}
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = 0
			continue
		}
		if start >= 0 && boundary(prev, r, text[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(text))
	return out
}

// boundary reports whether a new word starts at r, after prev and before
// rest: lower to upper (fooBar), the last capital of a run followed by a
// lower-case letter (HTTPServer: the S; but PRs is one word), and letter
// to digit or back.
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, size := utf8.DecodeRuneInString(rest)
		if next == 's' {
			// A plural of capitals (PRs, URLs) is one word.
			after, _ := utf8.DecodeRuneInString(rest[size:])
			return unicode.IsLower(after)
		}
		return unicode.IsLower(next)
	}
	return false
}

// Terms analyses text for the index: its words, abbreviations written out
// (repo → repository), stop words dropped, each word stemmed (English
// Snowball), in order and with repeats.
func Terms(text string) []string {
	var out []string
	for _, w := range Words(text) {
		out = appendTerms(out, w)
	}
	return out
}

// appendTerms appends the terms of one word w.
func appendTerms(out []string, w string) []string {
	if full, ok := abbreviations[w]; ok {
		for _, f := range strings.Fields(full) {
			out = append(out, Stem(f))
		}
		return out
	}
	if stopWords[w] {
		return out
	}
	return append(out, Stem(w))
}

// Stem is the English Snowball stem of a lower-case word; words of digits
// and words of two letters or fewer are kept as they are. A person named
// for what is done to them (assignee, invitee, trustee) stems as the verb
// does: Snowball keeps "assigne" apart from "assign", so that "assign a
// ticket" never found the operation that adds assignees.
func Stem(w string) string {
	if len(w) <= 2 || w[0] >= '0' && w[0] <= '9' {
		return w
	}
	stems.mu.Lock()
	s, ok := stems.m[w]
	stems.mu.Unlock()
	if ok {
		return s
	}
	// The cache keeps its own copy: w can be a slice of a large text.
	w = strings.Clone(w)
	if base := strings.TrimSuffix(w, "s"); strings.HasSuffix(base, "ee") && len(base) >= minEeBase+2 {
		s = english.Stem(base[:len(base)-2], true)
	} else {
		s = english.Stem(w, true)
	}
	stems.mu.Lock()
	if len(stems.m) >= maxCachedStems {
		clear(stems.m)
	}
	stems.m[w] = s
	stems.mu.Unlock()
	return s
}

// stems remembers recent stems: stemming is the costliest step of
// analysis, and a catalog repeats its words.
var stems = struct {
	mu sync.Mutex
	m  map[string]string
}{m: map[string]string{}}

const maxCachedStems = 1 << 16

// minEeBase is the shortest verb Stem reads in a word ending in -ee: not
// the "thr" of three or the "agr" of agree.
const minEeBase = 4

// stopWords are left out of both documents and queries: PostgreSQL's
// english stop words, which carry no meaning for a search, but for "me"
// (APIs name the caller's own resources /me), and a few words of requests.
var stopWords = wordSet(`i my myself we our ours ourselves you your yours yourself yourselves
	he him his himself she her hers herself it its itself they them their theirs themselves what which
	who whom this that these those am is are was were be been being have has had having do does did doing
	a an the and but if or because as until while of at by for with about against between into through
	during before after above below to from up down in out on off over under again further then once here
	there when where why how all any both each few more most other some such no nor not only own same so
	than too very s t can will just don should now please want need would like could let`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
