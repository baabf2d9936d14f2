package read

import (
	"slices"
	"strings"
	"unicode"
)

// maxSearchTerms bounds the words of a search text that are used.
const maxSearchTerms = 32

// SearchTerms splits text into lower-case words (runs of letters, digits
// and marks; everything else, including either store's query syntax, only
// separates them), keeping at most maxSearchTerms distinct ones that are
// not stop words. A text of stop words only gives none, as PostgreSQL's
// english configuration does.
func SearchTerms(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	var out []string
	for _, f := range fields {
		if stopWords[f] || slices.Contains(out, f) {
			continue
		}
		out = append(out, f)
		if len(out) == maxSearchTerms {
			break
		}
	}
	return out
}

// stopWords are PostgreSQL's english stop words, left out of searches so
// that both stores treat "scan for vulnerabilities" alike.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves what which
		who whom this that these those am is are was were be been being have has had having do does did doing
		a an the and but if or because as until while of at by for with about against between into through
		during before after above below to from up down in out on off over under again further then once here
		there when where why how all any both each few more most other some such no nor not only own same so
		than too very s t can will just don should now`) {
		m[w] = true
	}
	return m
}()
