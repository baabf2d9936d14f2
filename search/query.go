package search

import (
	"fmt"
	"iter"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Query is one search.
type Query struct {
	Text string
	// Keep, when set, says whether a matching document may be returned
	// (the caller's filter); it is called with the document's Meta.
	Keep func(meta any) bool
	// CurrentOnly returns only documents marked Current.
	CurrentOnly bool
	// Offset and Limit select the page of hits; Limit <= 0 returns all.
	Offset, Limit int
	// Explain fills Hit.Why.
	Explain bool
}

// Result is the answer to a Query.
type Result struct {
	Hits []Hit
	// Total counts the documents that match and are kept.
	Total int
	// Unknown lists the words no document has, with the nearest words the
	// index knows.
	Unknown []Unknown
	// Action is the kind of operation the query asks for, "" when it names
	// none.
	Action string
}

// Hit is one ranked document.
type Hit struct {
	ID    string
	Meta  any
	Score float64
	// Why says what the score is made of, largest part first (with
	// Query.Explain).
	Why []string
}

// Unknown is a word of the query that no document has.
type Unknown struct {
	Word       string   `json:"word"`
	DidYouMean []string `json:"did_you_mean,omitempty"`
}

// Weights of what a query looks for besides its own words.
const (
	verbWeight        = 0.5  // a verb asked for: it says more of the action than of the thing
	actionTermWeight  = 0.35 // the usual names of the verb's action (open → create)
	firstPersonWeight = 0.5  // "my", "me": the caller's own resources
	questionWeight    = 0.5  // "who": a user
	suggestionWeight  = 0.5  // the nearest known word to an unknown one
	prefixWeight      = 0.5  // known words the last, unfinished word begins
	actionBoost       = 0.3  // a document doing the action asked for
	conflictPenalty   = 0.25 // ÷(1+this) a document that reads when asked to write, or writes when asked to read
	nameBoost         = 1.0  // a document whose whole name or title was asked for
	scopeBoost        = 1.0  // a document of the API the query names ("in slack"): asked for by name
	objectBoost       = 0.5  // a document acting on a thing the query names
	numberBoost       = 0.1  // a read of as many things as the query asks for
	qualifierObject   = 0    // × when the query names it in a qualifying phrase
	idfPower          = 0.6  // see idf
	maxPrefixTerms    = 16
	maxSuggestions    = 3
	pruneAbove        = 20000 // documents, past which common expansions are left out
)

// qterm is one index term a query looks for.
type qterm struct {
	term   string
	weight float64
	why    string // how it came from the query, for Explain
	// related marks a word found by its vector: it does not count as
	// naming a document (a name that says "review" is not asked for by
	// "requests").
	related bool
	// action marks a term that stands for the verb's action (or a
	// question's, or the caller's), not for a thing.
	action bool
	// verb marks the query's first verb when it is a usual name of its
	// action (remove, create, list): a document that does the action
	// half has it, whichever of the action's names it uses (see
	// verbCredit).
	verb bool
	// list marks one of the query's own words that asks for a list
	// (manyWords: "the commit history", "recent messages"): a document
	// that reads a list has it, whether its text says it or not.
	list bool
	// qualifier marks a term of a phrase that qualifies the thing asked
	// for (after "of", "on", "in", …), not the thing itself.
	qualifier bool
	// many is how many things the word as written asks for: a plural
	// ("commits") asks for a list, a word after "a", "one" or "this"
	// for one thing.
	many Many
}

// objectStarts are words that start the object of a verb, or its particle
// (kick off, look up), and not the rest of a noun phrase.
var objectStarts = wordSet("a an the my our your his her their its this that these those someone somebody something me us him them it up off on back out down with some every all each another")

// prepositions start a phrase that qualifies what a query asks for.
var prepositions = wordSet("of on to from in into for with by at about onto within via after before between over under inside")

// plan is an analysed query.
type plan struct {
	terms  []qterm
	action string
	also   string // another action the verb may ask for (close: update)
	lead   string // the word the action was learned from, "" for the lexicon's
	// origin says how the action was learned from lead, for Explain.
	origin  string
	scope   string // a stem naming an API ("slack"), "" when none is named
	objects []objectTerm
	unknown []Unknown
}

// analyse turns text into the terms to look for; the caller holds the read
// lock.
func (ix *Index) analyse(text string) plan {
	a := analyser{ix: ix, many: ManyUnknown}
	a.words, a.phrasal = phrasal(Words(ix.joinHyphenated(text)))
	if len(a.words) > maxQueryWords {
		a.words = a.words[:maxQueryWords]
	}
	for i, w := range a.words {
		a.word(i, w)
	}
	return a.finish()
}

// maxPhrasalGap is how many words of a verb's object may stand between it
// and its particle ("kick someone out", "take a song off").
const maxPhrasalGap = 2

// phrasal writes each phrasal verb of words (phrasalVerbs) as the verb it
// means followed by its own verb: "kick off a workflow" is read as "start
// kick a workflow", "kick someone out of the org" as "remove kick someone
// of the org". literal maps the place of each own verb kept to its phrase:
// it is looked for too, as an API may use it ("kick" a user from a
// channel), but not as one of the query's own words.
func phrasal(words []string) (out []string, literal map[int]string) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !phrasalStarts[w] {
			out = append(out, w)
			continue
		}
		n := 0 // the particles
		var verb string
		if i+2 < len(words) {
			if v, ok := phrasalVerbs[w+" "+words[i+1]+" "+words[i+2]]; ok {
				verb, n = v, 2
			}
		}
		j := i + n
		if verb == "" {
			if j = particle(words, i); j < 0 {
				out = append(out, w)
				continue
			}
			verb, n = phrasalVerbs[w+" "+words[j]], 1
		}
		if literal == nil {
			literal = map[int]string{}
		}
		literal[len(out)+1] = strings.Join(append([]string{w}, words[j-n+1:j+1]...), " ")
		out = append(out, verb, w)
		out = append(out, words[i+1:j-n+1]...)
		i = j
	}
	return out, literal
}

// particle is the place of the particle of a phrasal verb that starts at
// words[i], -1 when there is none: right after it, or after a short object
// that starts as one does (a determiner, a pronoun).
func particle(words []string, i int) int {
	for j := i + 1; j < len(words) && j <= i+1+maxPhrasalGap; j++ {
		if _, ok := phrasalVerbs[words[i]+" "+words[j]]; ok {
			return j
		}
		if !objectStarts[words[i+1]] {
			break
		}
	}
	return -1
}

// hyphenated is a word of prose written with hyphens (to-do, e-mail).
var hyphenated = regexp.MustCompile(`\b[A-Za-z]+(?:-[A-Za-z]+)+\b`)

// joinHyphenated writes a hyphenated word of a query as one word when the
// index or the synonyms know it so ("to-do": todo, "e-mail": email), and
// leaves it to be split into its words otherwise: in a query, "to-do" is
// one word, not two stop words.
func (ix *Index) joinHyphenated(text string) string {
	if !strings.Contains(text, "-") {
		return text
	}
	return hyphenated.ReplaceAllStringFunc(text, func(w string) string {
		joined := strings.ToLower(strings.ReplaceAll(w, "-", ""))
		if t := Stem(joined); ix.df(t) > 0 || len(synonyms[t]) > 0 {
			return joined
		}
		return w
	})
}

// analyser is analyse's state as it reads a query's words in order.
type analyser struct {
	ix    *Index
	p     plan
	words []string
	// phrasal maps the place of a phrasal verb's own verb (kick of
	// kick off) to the phrase.
	phrasal map[int]string
	// qualifying is set past the first preposition after a word of the
	// query: "the columns of a board" asks for columns, of a board.
	qualifying, seen bool
	// named is set once the query named a thing; asking when it starts
	// as a question.
	named, asking   bool
	firstPersonDone bool
	many            Many   // how many things the current word asks for
	cur             string // the word being read
}

// add adds term qt, or raises its weight.
func (a *analyser) add(qt qterm) {
	qt.qualifier = a.qualifying
	qt.many = a.many
	qt.list = qt.why == "" && !qt.action && manyWords[a.cur]
	for i := range a.p.terms {
		if a.p.terms[i].term == qt.term {
			q := a.p.terms[i].qualifier && a.qualifying
			if qt.weight > a.p.terms[i].weight {
				a.p.terms[i] = qt
			}
			a.p.terms[i].qualifier = q
			return
		}
	}
	a.p.terms = append(a.p.terms, qt)
}

// word reads the query's word w, the i-th.
func (a *analyser) word(i int, w string) {
	a.many, a.cur = numberOf(a.words, i), w
	if prepositions[w] && a.seen {
		a.qualifying = true
	}
	a.seen = true
	if firstPerson[w] {
		if !a.firstPersonDone {
			for _, t := range firstPersonTerms {
				a.add(qterm{term: t, weight: firstPersonWeight, action: true, why: fmt.Sprintf("%q asks about the caller", w)})
			}
			a.firstPersonDone = true
		}
		return
	}
	if ts, ok := questions[w]; ok {
		if !a.named && a.p.action == "" {
			a.asking = true
		}
		for _, t := range ts {
			a.add(qterm{term: t, weight: questionWeight, why: fmt.Sprintf("%q asks for it", w)})
		}
		return
	}
	if readQuestions[w] && !a.named && a.p.action == "" {
		a.asking = true
	}
	if stopWords[w] {
		return
	}
	if phrase, ok := a.phrasal[i]; ok {
		for _, t := range appendTerms(nil, w) {
			a.add(qterm{term: t, weight: 1, why: fmt.Sprintf("the verb of %q", phrase), action: true})
		}
		return
	}
	if act, ok := actionVerbs[w]; ok {
		said := w
		if phrase, ok := a.phrasal[i+1]; ok {
			said = phrase // the verb a phrasal verb means
		}
		a.verb(w, said, act)
		return
	}
	for _, t := range appendTerms(nil, w) {
		a.term(i, w, t)
	}
}

// verb reads w, a verb of the lexicon asking for act, as said in the query
// (w, or the phrasal verb that means it).
func (a *analyser) verb(w, said, act string) {
	// The verb that starts a request says its action; one that comes
	// after a thing was named ("files I opened") does not, nor one in a
	// question ("which files did it change"). (An action learned from the
	// titles gives way to the lexicon's: "permanently remove".)
	if (a.p.action == "" || a.p.lead != "") && !a.named && !a.asking {
		a.p.action, a.p.lead, a.p.origin = act, "", ""
		a.p.also = alsoActions[w]
		for _, t := range actionTerms[act] {
			a.add(qterm{term: t, weight: actionTermWeight, action: true, why: fmt.Sprintf("%q asks to %s", said, strings.TrimPrefix(act, "crud."))})
		}
	}
	// A verb that is itself a usual name of its action (create, list,
	// delete) is looked for as any word is.
	if t := Stem(w); slices.Contains(actionTerms[act], t) {
		a.add(qterm{term: t, weight: 1, action: true, verb: a.p.verbTerm() == ""})
	} else {
		why := "the verb " + w
		if said != w {
			why = fmt.Sprintf("%q means %s", said, w)
		}
		a.add(qterm{term: t, weight: verbWeight, why: why, action: true})
	}
}

// term reads t, a term of w, the i-th word, which is not a verb of the
// lexicon.
func (a *analyser) term(i int, w, t string) {
	ix, p := a.ix, &a.p
	// A word is taken as naming an API when it is mostly found as one
	// ("slack"), not when it is common ("memory", "everything").
	if n := ix.scopes[t]; p.scope == "" && n > 0 && ix.df(t) <= 2*n {
		p.scope = t
		a.add(qterm{term: t, weight: 1, why: "names the API", action: true})
		return
	}
	// A request that starts with a verb the lexicon lacks asks for what
	// the catalog's titles that start with it do.
	if p.action == "" && !a.named && !a.asking && !strings.HasSuffix(w, "ly") {
		if act := ix.leadAction(w); act != "" {
			p.action, p.lead = act, w
			p.origin = fmt.Sprintf("as the titles that start with %q do", w)
		} else if i+1 < len(a.words) && objectStarts[a.words[i+1]] {
			// A word the lexicon does not know, followed by its object
			// ("leave a comment", "give someone", "kick off"), is a verb
			// that asks to write.
			p.action, p.also, p.lead = ActionCreate, ActionUpdate, w
			p.origin = fmt.Sprintf("as %q before its object asks to write", w)
		}
	}
	ix.addWord(p, a.add, w, t, i == len(a.words)-1)
	// An adverb ("permanently remove") names nothing.
	a.named = a.named || !strings.HasSuffix(w, "ly")
}

// finish completes the plan once every word was read.
func (a *analyser) finish() plan {
	p := &a.p
	// A question asks to read.
	if a.asking && p.action == "" {
		p.action = ActionRead
	}
	// A request without a verb that starts with a plural names things to
	// read ("files I opened recently", "followers of a user").
	if p.action == "" {
		for _, w := range a.words {
			if stopWords[w] || firstPerson[w] {
				continue
			}
			if plural(w) {
				p.action, p.lead = ActionRead, w
				p.origin = fmt.Sprintf("as a request that starts with a plural (%q) names things to read", w)
			}
			break
		}
	}
	// In a big catalog, a word the query did not say that is in a quarter
	// of it changes scores by little and costs the most: it is left out.
	if a.ix.live > pruneAbove {
		p.terms = slices.DeleteFunc(p.terms, func(qt qterm) bool {
			return qt.weight < 1 && a.ix.df(qt.term) > a.ix.live/4
		})
	}
	p.objects = objectTerms(p.terms)
	return *p
}

// addWord adds the term t of the query word w, its synonyms, and for a word
// no document has, the known words it begins (when last) or is nearest.
func (ix *Index) addWord(p *plan, add func(qterm), w, t string, last bool) {
	known := ix.df(t) > 0
	if known {
		add(qterm{term: t, weight: 1})
	}
	syn := false
	for _, s := range synonyms[t] {
		if ix.df(s) > 0 {
			add(qterm{term: s, weight: synonymWeight, why: "a synonym of " + w})
			syn = true
		}
	}
	// A word few documents have, and no synonym, also looks for the
	// words nearest in meaning, at part of their weight: the catalog may
	// say "smaller" where the query says "small".
	if known && !syn && ix.df(t)*rareShare <= ix.live {
		ix.addRelated(add, w, t, rareRelatedWeight)
	}
	// A word no document has looks for them at their full weight.
	if known || syn || ix.addRelated(add, w, t, 1) {
		return
	}
	vocab := ix.vocabulary()
	if last && ix.addPrefixed(add, vocab, w, t) {
		return
	}
	near := ix.nearest(vocab, t, maxSuggestions)
	p.unknown = append(p.unknown, Unknown{Word: w, DidYouMean: near})
	if len(near) > 0 {
		add(qterm{term: near[0], weight: suggestionWeight, why: "nearest known word to " + w})
	}
}

// addPrefixed adds the known words that t, the term of the unfinished
// query word w, begins, and reports whether there were any.
func (ix *Index) addPrefixed(add func(qterm), vocab []string, w, t string) bool {
	if len(t) < 3 {
		return false
	}
	n := 0
	for i := sort.SearchStrings(vocab, t); i < len(vocab) && strings.HasPrefix(vocab[i], t) && n < maxPrefixTerms; i++ {
		add(qterm{term: vocab[i], weight: prefixWeight, why: w + " begins it"})
		n++
	}
	return n > 0
}

// addRelated adds the words of the index nearest in meaning to t, the
// term of the query word w, at scale × their weight, and reports whether
// there were any.
func (ix *Index) addRelated(add func(qterm), w, t string, scale float64) bool {
	rs := ix.vectorVocabulary().related(t)
	for _, r := range rs {
		add(qterm{term: r.term, weight: scale * relatedWeight * float64(r.sim), why: "related to " + w, related: true})
	}
	return len(rs) > 0
}

// Search ranks the documents for q.
func (ix *Index) Search(q Query) Result {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p := ix.analyse(q.Text)
	res := Result{Hits: []Hit{}, Unknown: p.unknown, Action: p.action}
	if len(p.terms) == 0 || ix.live == 0 {
		return res
	}
	acc := ix.accumulate(p)
	defer acc.release()
	want, verb, lists := p.own(), p.verb(), p.lists()
	apis := ix.apiRanks(p, acc)
	kept := topK{n: -1}
	if q.Limit > 0 {
		kept = topK{n: max(q.Offset, 0) + q.Limit, h: acc.kept[:0]}
	}
	// The factors past the action's cost the most (map lookups), and
	// raise a score by at most maxRest: once the page is full, a document
	// they could not lift past its worst hit is not scored further. The
	// bound multiplies in the same order as the score, so that rounding
	// cannot make the score exceed it.
	maxObject := 1 + objectBoost*p.maxObjectMatch()
	var does, conflicts [noAction + 1]bool // by action code
	for a, action := range actions {
		does[a] = p.does(action)
		conflicts[a] = p.conflicts(action)
	}
	for _, d := range acc.touched {
		h := &ix.hot[d]
		if !h.live || q.CurrentOnly && !h.current || (q.Keep != nil && !q.Keep(ix.docs[d].meta)) {
			continue
		}
		res.Total++
		own := int(acc.own[d])
		if verb {
			own += verbCredit(acc.verbed[d], does[h.action])
		}
		if lists > 0 {
			own += listCredit(lists, int(acc.listed[d]), ix.docs[d].many)
		}
		s := acc.score[d] * coverageOf(want, own) * (1 + nameBoost*named(&h.lens, acc.named[d]))
		if does[h.action] {
			s *= 1 + actionBoost
		} else if conflicts[h.action] {
			s /= 1 + conflictPenalty
		}
		api := &apis[h.api]
		if kept.full() {
			bound := s * maxObject * (1 + numberBoost) * api.factor
			if api.named {
				bound *= 1 + scopeBoost
			}
			if bound < kept.worst().score {
				continue
			}
		}
		doc := &ix.docs[d]
		s *= 1 + objectBoost*p.objectMatch(doc)
		if p.number(doc) {
			s *= 1 + numberBoost
		}
		s *= api.factor
		if api.named {
			s *= 1 + scopeBoost
		}
		kept.add(scored{doc: d, score: s, id: doc.id})
	}
	best := kept.sorted()
	acc.kept = best[:0]
	if q.Offset < len(best) {
		best = best[max(q.Offset, 0):]
	} else {
		best = nil
	}
	for _, b := range best {
		h := Hit{ID: b.id, Meta: ix.docs[b.doc].meta, Score: b.score}
		if q.Explain {
			h.Why = ix.explain(p, b.doc, acc.affinity)
		}
		res.Hits = append(res.Hits, h)
	}
	return res
}

// accumulator holds the score of each document touched by a query, and
// how many words of its name and title the query has.
type accumulator struct {
	score   []float64
	named   [][2]uint16
	own     []uint8 // the query's own words the document has
	verbed  []bool  // the document has the query's verb (qterm.verb)
	listed  []uint8 // like own, of the query's list words (qterm.list)
	touched []int32
	// affinity is how much more the query's words are found in each API
	// than in the whole index (see addAffinity); apiHits counts a term's
	// documents in each API.
	affinity []float64
	apiHits  []int32
	apis     []apiRank
	kept     []scored // the buffer of a page's hits
	// block is the postings of a list decoded at a time.
	block [skipEvery]posting
}

var accPool = sync.Pool{New: func() any { return &accumulator{} }}

func (a *accumulator) release() {
	for _, d := range a.touched {
		a.score[d] = 0
		a.named[d] = [2]uint16{}
		a.own[d] = 0
		a.verbed[d] = false
		a.listed[d] = 0
	}
	a.touched = a.touched[:0]
	accPool.Put(a)
}

// accumulate sums the BM25F score of every term for every document that
// has it.
func (ix *Index) accumulate(p plan) *accumulator {
	acc := accPool.Get().(*accumulator)
	if len(acc.score) < len(ix.docs) {
		acc.score = make([]float64, len(ix.docs)+len(ix.docs)/4)
		acc.named = make([][2]uint16, len(acc.score))
		acc.own = make([]uint8, len(acc.score))
		acc.verbed = make([]bool, len(acc.score))
		acc.listed = make([]uint8, len(acc.score))
	}
	norm := ix.norms()
	acc.affinity = acc.affinity[:0]
	acc.affinity = append(acc.affinity, make([]float64, len(ix.apiDocs))...)
	if cap(acc.apiHits) < len(ix.apiDocs) {
		acc.apiHits = make([]int32, len(ix.apiDocs))
	}
	hits := acc.apiHits[:len(ix.apiDocs)]
	for _, qt := range p.terms {
		pl := ix.postings[qt.term]
		idf := ix.idf(int(pl.n)) * qt.weight
		// A word of the thing asked for tells the API: its documents of
		// each are counted in the same pass as they are scored.
		apis := !qt.action && len(ix.apiDocs) > 1
		if apis {
			clear(hits)
		}
		for it := pl.iter(); ; {
			ps := acc.block[:it.decode(acc.block[:])]
			if len(ps) == 0 {
				break
			}
			for i := range ps {
				d := ps[i].doc
				h := &ix.hot[d]
				if apis && h.live {
					hits[h.api]++
				}
				s := idf * saturated(&ps[i], &h.lens, &norm)
				if s == 0 {
					continue
				}
				if acc.score[d] == 0 {
					acc.touched = append(acc.touched, d)
				}
				acc.score[d] += s
				if !qt.related {
					acc.named[d][0] += uint16(ps[i].tf[FieldName])
					acc.named[d][1] += uint16(ps[i].tf[FieldTitle])
				}
				switch {
				case qt.verb:
					acc.verbed[d] = true
				case qt.list:
					acc.listed[d] += ownCredit(&ps[i])
				case qt.why == "":
					acc.own[d] += ownCredit(&ps[i])
				}
			}
		}
		if apis {
			ix.addAffinity(acc.affinity, hits, qt.weight)
		}
	}
	return acc
}

// Affinity of a query with an API: the log of how much likelier a document
// of the API has each of the query's terms than one of the whole index
// (smoothed by affinityPrior documents of the index's rate), summed over
// the terms by weight. A document of an API the query's words are less
// likely in is ranked down by 1/(1 + affinityWeight × the difference
// from the best API's affinity).
const (
	affinityPrior  = 10.0
	affinityWeight = 0.05
)

// addAffinity adds to aff the affinity of one term of weight w found in
// hits[a] documents of each API a.
func (ix *Index) addAffinity(aff []float64, hits []int32, w float64) {
	df := 0
	for _, h := range hits {
		df += int(h)
	}
	if df == 0 {
		return
	}
	rate := float64(df) / float64(max(ix.live, 1))
	for a, n := range ix.apiDocs {
		if n > 0 {
			aff[a] += w * math.Log((float64(hits[a])+affinityPrior*rate)/(float64(n)+affinityPrior)/rate)
		}
	}
}

// apiFactor is what document d's score is multiplied by for the affinity
// of its API with the query: 1 for the best API, less for others.
func (ix *Index) apiFactor(aff []float64, best float64, d *hotDoc) float64 {
	if len(aff) < 2 {
		return 1
	}
	return 1 / (1 + affinityWeight*(best-aff[d.api]))
}

// apiRank is what a document's score is multiplied by for its API:
// factor for the API's affinity with the query (apiFactor), and
// 1+scopeBoost more when named, when the query names the API; a named
// API's factor is 1: the query's other words may be likelier in another
// API ("the columns of a trello board": Jira's), but it asked for this
// one.
type apiRank struct {
	factor float64
	named  bool
}

// apiRanks returns each API's apiRank for plan p, whose terms acc
// accumulated: computed once a query, not once a document.
func (ix *Index) apiRanks(p plan, acc *accumulator) []apiRank {
	best := ix.bestAffinity(acc.affinity)
	ranks := slices.Grow(acc.apis[:0], len(ix.apiDocs))[:len(ix.apiDocs)]
	for a := range ranks {
		ranks[a] = apiRank{factor: 1, named: p.scope != "" && slices.Contains(ix.apiTerms[a], p.scope)}
		if len(acc.affinity) >= 2 && !ranks[a].named {
			ranks[a].factor = 1 / (1 + affinityWeight*(best-acc.affinity[a]))
		}
	}
	acc.apis = ranks
	return ranks
}

// bestAffinity is the largest affinity of an API with documents.
func (ix *Index) bestAffinity(aff []float64) float64 {
	best := math.Inf(-1)
	for a, n := range ix.apiDocs {
		if n > 0 && a < len(aff) {
			best = max(best, aff[a])
		}
	}
	return best
}

// norms are the average length of each field.
func (ix *Index) norms() [numFields]float64 {
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(ix.lenSum[f]/float64(max(ix.live, 1)), 1)
	}
	return avg
}

// idf is BM25's inverse document frequency of a term in df documents,
// raised to idfPower: flattened, so that a rare word that qualifies a
// request ("permanently remove a repository") outweighs less the thing it
// names, which a catalog of one API has everywhere.
func (ix *Index) idf(df int) float64 {
	// A posting list may still hold removed documents (until compaction),
	// so df can exceed the live count: clamp it, or the logarithm turns
	// negative and its power NaN.
	df = min(df, ix.live)
	n := float64(ix.live)
	return math.Pow(math.Log(1+(n-float64(df)+0.5)/(float64(df)+0.5)), idfPower)
}

// saturated is BM25F's saturated term frequency of posting p of a
// document whose fields have lens terms: the field frequencies, each
// normalised by its field's length and weighted, summed, then saturated.
func saturated(p *posting, lens *[numFields]uint16, avg *[numFields]float64) float64 {
	tf := 0.0
	for f := range numFields {
		if c := p.tf[f]; c > 0 {
			tf += fieldWeights[f] * float64(c) / (1 - fieldB[f] + fieldB[f]*float64(lens[f])/avg[f])
		}
	}
	return tf * (k1 + 1) / (tf + k1)
}

// coverage favours documents that have more of the query's own words: 1
// when all are found, down to 0.4 for few. A document doing the action
// the query's verb asks half has the verb (verbCredit), and one reading a
// list has the words that ask for one (listCredit). Search computes the
// same from its accumulator; this is for Explain.
func (ix *Index) coverage(p plan, d int32) float64 {
	found := 0
	listed := 0
	for _, qt := range p.terms {
		if ps := ix.posting(qt.term, d); qt.why == "" && !qt.verb && ps != nil {
			if qt.list {
				listed += int(ownCredit(ps))
			} else {
				found += int(ownCredit(ps))
			}
		}
	}
	if n := p.lists(); n > 0 {
		found += listCredit(n, listed, ix.docs[d].many)
	}
	if v := p.verbTerm(); v != "" {
		found += verbCredit(ix.posting(v, d) != nil, ix.hot[d].action < noAction && p.does(actions[ix.hot[d].action]))
	}
	return coverageOf(p.own(), found)
}

// ownCredit is what a document's posting of one of the query's own words
// counts for its coverage, in halves: a word found only among the
// parameters is half found (a label parameter does not make an operation
// one on labels).
func ownCredit(p *posting) uint8 {
	for f, tf := range p.tf {
		if tf > 0 && Field(f) != FieldParams {
			return 2
		}
	}
	return 1
}

// coverageOf is coverage for found halves of want words.
func coverageOf(want, found int) float64 {
	if want <= 1 {
		return 1
	}
	return 0.4 + 0.6*float64(found)/float64(2*want)
}

// objectMatch is how well the query names what document d acts on: the
// weight of the best query term (its own words, their synonyms and related
// words, not the verb's action) that is one of d's object terms, 0 for none.
func (p plan) objectMatch(d *doc) float64 {
	best := 0.0
	for o := range objectWords(d.object) {
		if ot, ok := p.object(o); ok {
			w := ot.weight
			if ot.qualifier {
				w *= qualifierObject
			}
			best = max(best, w)
		}
	}
	return min(best, 1)
}

// maxObjectMatch is the most objectMatch can be for any document.
func (p plan) maxObjectMatch() float64 {
	best := 0.0
	for _, ot := range p.objects {
		w := ot.weight
		if ot.qualifier {
			w *= qualifierObject
		}
		best = max(best, w)
	}
	return min(best, 1)
}

// objectTerm is what a query term may say of a document's object: its
// weight, place among the terms, and how many things it asks for.
type objectTerm struct {
	term      string
	weight    float64
	order     int
	many      Many
	qualifier bool
}

// objectTerms are the query's terms that may name a thing (not its
// action's), among which each document's few object terms are looked up.
func objectTerms(terms []qterm) []objectTerm {
	var out []objectTerm
	for i, qt := range terms {
		if !qt.action {
			out = append(out, objectTerm{term: qt.term, weight: qt.weight, order: i, many: qt.many, qualifier: qt.qualifier})
		}
	}
	return out
}

// object returns the query's object term t (a plan's terms are distinct).
func (p plan) object(t string) (objectTerm, bool) {
	for i := range p.objects {
		if p.objects[i].term == t {
			return p.objects[i], true
		}
	}
	return objectTerm{}, false
}

// objectWords are the terms of a document's object (doc.object).
func objectWords(object string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for object != "" {
			w, rest, _ := strings.Cut(object, " ")
			if !yield(w) {
				return
			}
			object = rest
		}
	}
}

// number reports whether document d, a read, returns as many things as
// the query asks for: one, or a list, of the thing it acts on.
func (p plan) number(d *doc) bool {
	if d.many == ManyUnknown || p.action != "" && p.action != ActionRead {
		return false
	}
	// The first of the query's words that names its object says.
	first, many := len(p.terms), ManyUnknown
	for o := range objectWords(d.object) {
		if ot, ok := p.object(o); ok && ot.many != ManyUnknown && !ot.qualifier && ot.order < first {
			first, many = ot.order, ot.many
		}
	}
	return many != ManyUnknown && many == d.many
}

// one are words before a noun that ask for one thing; many, words that
// ask for a list.
var (
	oneWords  = wordSet("a an one this that single specific particular given")
	manyWords = wordSet("all every list history recent")
)

// numberOf is how many things the word words[i] asks for as written.
func numberOf(words []string, i int) Many {
	w := words[i]
	for j := i - 1; j >= 0 && j >= i-3; j-- {
		switch {
		case manyWords[words[j]]:
			return ManyMany
		case oneWords[words[j]]:
			return ManyOne
		}
	}
	if plural(w) {
		return ManyMany
	}
	return ManyUnknown
}

// does reports whether an operation doing action does what the query asks.
func (p plan) does(action string) bool {
	return action != "" && (action == p.action || action == p.also)
}

// conflicts reports whether an operation doing action does the opposite
// of what the query asks: it reads when the query asks to create, update
// or delete, or writes when the query asks to read ("start a new branch
// from a commit" is not "List branches for a head commit").
func (p plan) conflicts(action string) bool {
	return !p.does(action) && (p.action == ActionRead && writes(action) || writes(p.action) && action == ActionRead)
}

// writes reports whether action changes something: creates, updates or
// deletes it.
func writes(action string) bool {
	return action == ActionCreate || action == ActionUpdate || action == ActionDelete
}

// own counts the query's own words (not verbs, synonyms or expansions).
func (p plan) own() int {
	n := 0
	for _, qt := range p.terms {
		if qt.why == "" {
			n++
		}
	}
	return n
}

// verbCredit is what the query's verb (qterm.verb) counts for a
// document's coverage, in halves: found when the document has it, half
// found when it does the action the verb asks under another of its names
// ("Delete a repository" for "remove a repository"; half, as "remove" may
// also ask to take a thing out of another, "Remove a repository from a
// team", which says it).
func verbCredit(has, does bool) int {
	switch {
	case has:
		return 2
	case does:
		return 1
	}
	return 0
}

// listCredit is what the query's n list words (qterm.list) count for a
// document's coverage, in halves, when it has found halves of them: all of
// them for a document that reads a list.
func listCredit(n, found int, many Many) int {
	if many == ManyMany {
		return 2 * n
	}
	return found
}

// lists counts the query's list words (qterm.list).
func (p plan) lists() int {
	n := 0
	for _, qt := range p.terms {
		if qt.list {
			n++
		}
	}
	return n
}

// verb reports whether the query's own words include its verb (qterm.verb).
func (p plan) verb() bool { return p.verbTerm() != "" }

// verbTerm is the term of the query's verb (qterm.verb), "" when none.
func (p plan) verbTerm() string {
	for _, qt := range p.terms {
		if qt.verb {
			return qt.term
		}
	}
	return ""
}

// named is the largest share of a document's name or title (their lengths
// in lens) that the query matched, squared: 1 when the query asked for all
// of it ("create issue" and issues_create), less for names that say more.
func named(lens *[numFields]uint16, matched [2]uint16) float64 {
	best := 0.0
	for i, f := range [2]Field{FieldName, FieldTitle} {
		if n := lens[f]; n > 0 {
			best = max(best, min(float64(matched[i])/float64(n), 1))
		}
	}
	return best * best
}

// posting returns document d's posting of term t, nil when it has none.
func (ix *Index) posting(t string, d int32) *posting {
	pl := ix.postings[t]
	p, ok := pl.find(d)
	if !ok {
		return nil
	}
	return &p
}

// namedOf counts the words of document d's name and title the query has.
func (ix *Index) namedOf(p plan, d int32) [2]uint16 {
	var m [2]uint16
	for _, qt := range p.terms {
		if ps := ix.posting(qt.term, d); ps != nil && !qt.related {
			m[0] += uint16(ps.tf[FieldName])
			m[1] += uint16(ps.tf[FieldTitle])
		}
	}
	return m
}

// explain says what document d's score is made of.
func (ix *Index) explain(p plan, d int32, aff []float64) []string {
	type part struct {
		s   float64
		txt string
	}
	var parts []part
	norm := ix.norms()
	for _, qt := range p.terms {
		ps := ix.posting(qt.term, d)
		if ps == nil {
			continue
		}
		s := ix.idf(ix.df(qt.term)) * qt.weight * saturated(ps, &ix.hot[d].lens, &norm)
		var fields []string
		for f := range numFields {
			if ps.tf[f] > 0 {
				fields = append(fields, Field(f).String())
			}
		}
		txt := fmt.Sprintf("%.2f %q in %s", s, qt.term, strings.Join(fields, ", "))
		if qt.why != "" {
			txt += " (" + qt.why + ")"
		}
		parts = append(parts, part{s, txt})
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].s > parts[j].s })
	out := make([]string, 0, len(parts)+2)
	for _, pt := range parts {
		out = append(out, pt.txt)
	}
	if n := named(&ix.hot[d].lens, ix.namedOf(p, d)); n > 0 {
		out = append(out, fmt.Sprintf("×%.2f: the query asks for most of its name or title", 1+nameBoost*n))
	}
	if c := ix.coverage(p, d); c < 1 {
		out = append(out, fmt.Sprintf("×%.2f: has only some of the words asked for", c))
	}
	if m := p.objectMatch(&ix.docs[d]); m > 0 {
		out = append(out, fmt.Sprintf("×%.2f: acts on what was asked for (%s)", 1+objectBoost*m, ix.docs[d].object))
	}
	if p.number(&ix.docs[d]) {
		what := "one"
		if ix.docs[d].many == ManyMany {
			what = "a list"
		}
		out = append(out, fmt.Sprintf("×%.2f: reads as many as were asked for (%s)", 1+numberBoost, what))
	}
	named := p.scope != "" && slices.Contains(ix.apiTerms[ix.hot[d].api], p.scope)
	if aff != nil && !named {
		if f := ix.apiFactor(aff, ix.bestAffinity(aff), &ix.hot[d]); f < 1 {
			out = append(out, fmt.Sprintf("×%.2f: the query's words are likelier in another API", f))
		}
	}
	if a := ix.hot[d].action; a < noAction && p.conflicts(actions[a]) {
		out = append(out, fmt.Sprintf("×%.2f: does the opposite of what was asked (%s, asked %s)", 1/(1+conflictPenalty), actions[a], p.action))
	}
	if a := ix.hot[d].action; a < noAction && p.does(actions[a]) {
		txt := fmt.Sprintf("×%.2f: does what was asked (%s)", 1+actionBoost, actions[a])
		if p.origin != "" {
			txt += ", " + p.origin
		}
		out = append(out, txt)
	}
	if named {
		out = append(out, fmt.Sprintf("×%.2f: of the API asked for (%s)", 1+scopeBoost, p.scope))
	}
	return out
}
