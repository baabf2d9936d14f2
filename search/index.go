// Package search ranks capabilities for a request written as people and
// agents write them: any of its words may match, each word weighed by how
// rare it is (BM25F over weighted fields, each with its own length
// normalisation), identifiers split into words, English stems, the verb's
// kind of operation understood (a phrasal verb as the verb it means: kick
// off, get rid of), general synonyms, for a word no capability
// has (and, at less weight, for a rare one) the words nearest to it in
// meaning (English word vectors from GloVe,
// package search/internal/wordvec), and a "did you mean" for words with
// none. Past the words, a document ranks higher when it acts on the thing
// the request names (its path's last resource), does what the request's
// verb asks (a verb the lexicon lacks takes the action of the catalog's
// titles that start with it, or, followed by its object, asks to write)
// and lower when it reads where the request asks to write or the reverse,
// reads as many things as the request asks for (a list for a plural, one
// after "a" or "this"; a list for "history"), has more of the request's
// words (its verb half found in a document that does its action under
// another name: delete for remove), and belongs to the API the request's words are
// likeliest in.
// The index is held in memory and is the one ranking of both stores;
// package registry keeps it current.
package search

import (
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unique"
)

// Field is a part of a capability's text, weighed on its own.
type Field uint8

// The fields, in the order of their weights.
const (
	FieldName        Field = iota // the name (operation id), split into words
	FieldTitle                    // title or summary
	FieldDescription              // description
	FieldTags                     // keywords and tags
	FieldPath                     // the HTTP path, MCP tool, gRPC method: the binding's address
	FieldParams                   // parameter names and descriptions
	FieldDomain                   // domain, domains and categories
	FieldIntents                  // Agent OS intents
	numFields
)

var fieldNames = [numFields]string{"name", "title", "description", "tags", "path", "params", "domain", "intents"}

func (f Field) String() string { return fieldNames[f] }

// fieldWeights are the fields' weights, and fieldB their length
// normalisation (BM25's b): the weights measured best on real APIs (issue
// 13's study), names and titles short and decisive, parameters numerous and
// weak.
var (
	fieldWeights = [numFields]float64{3, 3, 1, 1.5, 1.5, 0.4, 2, 1.5}
	fieldB       = [numFields]float64{0.75, 0.75, 0.75, 0.5, 0.75, 0.75, 0.3, 0.5}
)

// k1 is BM25's term-frequency saturation.
const k1 = 1.2

// Doc is one capability version as the index sees it.
type Doc struct {
	ID     string            // unique; ties are ranked in ID order
	Text   [numFields]string // the text of each field
	Action string            // the kind of operation (ActionCreate, …), "" unknown
	// Object is the text of what the operation acts on (the last
	// resource of its path): a query that names it prefers it.
	Object string
	// Many tells whether a read returns a list of things or one of them.
	Many Many
	// Scope names the API or service the capability belongs to (its
	// domain): a query that names it ("in slack") prefers its capabilities.
	Scope string
	// Current marks the version a search sees when it asks for current
	// versions only (Query.CurrentOnly): the latest of its capability.
	Current bool
	Meta    any // returned with hits and given to Query.Keep
}

// Many is how many things an operation reads.
type Many uint8

const (
	ManyUnknown Many = iota // not a read, or it cannot tell
	ManyOne                 // one thing, named by a parameter
	ManyMany                // a list
)

// Index is an in-memory inverted index. It is safe for concurrent use;
// searches run in parallel with each other, writes one at a time.
type Index struct {
	mu   sync.RWMutex
	docs []doc
	byID map[string]int32
	// hot holds what a search reads of every document it matches, by
	// the same number as docs: scoring a long posting list then reads 40
	// bytes a document, not the whole doc.
	hot      []hotDoc
	postings map[string]postingList
	scopes   map[string]int // the documents of each scope stem
	// apis numbers each Doc.Scope, apiDocs counts its live documents: a
	// query's words tell which API it is about.
	apis    map[string]int32
	apiDocs []int
	// apiTerms is the stems of each Doc.Scope, shared by its documents.
	apiTerms [][]string
	// leads counts, for the first word of documents' titles, the
	// documents doing each action: titles start with their
	// verb ("Star a repository"), so a query that starts with a verb
	// caphub's lexicon lacks borrows the action the catalog's own titles
	// give it.
	leads  map[string]*[numActions]int32
	lenSum [numFields]float64
	live   int
	dead   int
	// vocab is the sorted terms, for prefixes and suggestions; nil when
	// stale. Searches (under the read lock) set it, writers clear it.
	vocab atomic.Pointer[[]string]
	// vecs is the terms of vocab that have word vectors, and the related
	// words found for queries; nil when stale, like vocab.
	vecs atomic.Pointer[vecVocab]
}

type doc struct {
	id string
	// object is the terms of Doc.Object joined by spaces, in a string of
	// its own: 16 bytes and the text, where a slice of interned handles
	// cost a slice, its array and, for a term few documents have (an id
	// in a tool's name), the interning map's entry, 100 bytes a document.
	object string
	lead   string // the first word of the title
	many   Many
	meta   any
	sum    uint64 // Doc.sum: a Put of the same again changes no posting
}

// hotDoc is the part of a document every search that matches it reads.
type hotDoc struct {
	lens   [numFields]uint16
	action uint8 // Doc.Action's place in actions; noAction for another or none
	api    int32 // the number of Doc.Scope in Index.apis (its stems: Index.apiTerms)
	live   bool
	// current is Doc.Current, kept here so that the commonest filter costs
	// no call.
	current bool
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byID: map[string]int32{}, postings: map[string]postingList{}, scopes: map[string]int{}, apis: map[string]int32{}, leads: map[string]*[numActions]int32{}}
}

// Len is the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Put adds d, replacing the document with the same ID. Putting a document
// again as it is (its text and attributes; Current and Meta may differ)
// only updates its Current and Meta: a replaced document's postings stay
// until compaction and count in its terms' document frequencies, so a
// ranking would otherwise depend on how often the same thing was indexed
// (a write's own indexing and its notification both put it).
func (ix *Index) Put(d Doc) {
	sum := d.sum()
	if ix.refresh(&d, sum) {
		return
	}
	tfs := tfsPool.Get().(*termFreqs)
	defer tfs.release()
	var lens [numFields]uint16
	lead := leadOf(d.Text[FieldTitle])
	for f := range numFields {
		terms := Terms(d.Text[f])
		lens[f] = uint16(min(len(terms), math.MaxUint16))
		for _, t := range terms {
			tfs.count(t, Field(f))
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.refreshLocked(&d, sum) {
		return
	}
	ix.deleteLocked(d.ID)
	n := int32(len(ix.docs))
	api, ok := ix.apis[d.Scope]
	if !ok {
		api = int32(len(ix.apiDocs))
		ix.apis[strings.Clone(d.Scope)] = api
		ix.apiDocs = append(ix.apiDocs, 0)
		ix.apiTerms = append(ix.apiTerms, detach(Terms(d.Scope)))
	}
	ix.apiDocs[api]++
	for _, t := range ix.apiTerms[api] {
		ix.scopes[t]++
	}
	if lead != "" {
		lead = unique.Make(lead).Value() // not a slice of the title
	}
	action := actionCode(d.Action)
	ix.docs = append(ix.docs, doc{id: d.ID, object: strings.Clone(strings.Join(Terms(d.Object), " ")), lead: lead, many: d.Many, meta: d.Meta, sum: sum})
	ix.hot = append(ix.hot, hotDoc{lens: lens, action: action, api: api, live: true, current: d.Current})
	ix.countLead(lead, action, 1)
	ix.byID[d.ID] = n
	ix.live++
	for f := range numFields {
		ix.lenSum[f] += float64(lens[f])
	}
	for i, t := range tfs.terms {
		p := &tfs.tfs[i]
		p.doc = n
		pl, known := ix.postings[t]
		if !known {
			ix.vocab.Store(nil)
			ix.vecs.Store(nil)
			t = strings.Clone(t) // a new key: not a slice of d's text
		}
		pl.add(p)
		ix.postings[t] = pl
	}
}

// termFreqs counts a document's terms in each field, in the order first
// seen. Put takes one from tfsPool: a map and a posting for each term of
// every document were most of what building an index allocated.
type termFreqs struct {
	at    map[string]int // a term's place in terms and tfs
	terms []string
	tfs   []posting
}

var tfsPool = sync.Pool{New: func() any { return &termFreqs{at: map[string]int{}} }}

// count counts one more t in field f (saturated at 255).
func (c *termFreqs) count(t string, f Field) {
	i, ok := c.at[t]
	if !ok {
		i = len(c.terms)
		c.at[t] = i
		c.terms = append(c.terms, t)
		c.tfs = append(c.tfs, posting{})
	}
	if c.tfs[i].tf[f] < math.MaxUint8 {
		c.tfs[i].tf[f]++
	}
}

// release empties c (it holds slices of a document's text) and returns it
// to tfsPool.
func (c *termFreqs) release() {
	clear(c.at)
	clear(c.terms)
	c.terms, c.tfs = c.terms[:0], c.tfs[:0]
	tfsPool.Put(c)
}

// sum hashes what a document's postings and ranking come from: all of it
// but Current and Meta.
func (d *Doc) sum() uint64 {
	h := fnv.New64a()
	for _, s := range append(d.Text[:], d.ID, d.Action, d.Object, d.Scope) {
		_, _ = io.WriteString(h, s)
		_, _ = h.Write([]byte{0})
	}
	_, _ = h.Write([]byte{byte(d.Many)})
	return h.Sum64()
}

// refresh updates the Current and Meta of the live document d.ID if it
// holds d's sum, and says whether it did.
func (ix *Index) refresh(d *Doc, sum uint64) bool {
	ix.mu.RLock()
	n, ok := ix.byID[d.ID]
	same := ok && ix.docs[n].sum == sum
	ix.mu.RUnlock()
	if !same {
		return false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.refreshLocked(d, sum)
}

// refreshLocked is refresh under ix.mu.
func (ix *Index) refreshLocked(d *Doc, sum uint64) bool {
	n, ok := ix.byID[d.ID]
	if !ok || ix.docs[n].sum != sum {
		return false
	}
	ix.hot[n].current, ix.docs[n].meta = d.Current, d.Meta
	return true
}

// detach returns terms as strings of their own: a term can be a slice of
// the text it came from (a word already lower-case), and an index that
// kept it would keep that whole text, a definition's description, alive.
func detach(terms []string) []string {
	if len(terms) == 0 {
		return nil
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = unique.Make(t).Value()
	}
	return out
}

// noAction is the action code of a document whose action is none of
// actions: no query asks for it (a plan's actions are among them).
const noAction = uint8(numActions)

// actionCode is action's place in actions, noAction when it is none.
func actionCode(action string) uint8 {
	if a, ok := actionIndex[action]; ok {
		return uint8(a)
	}
	return noAction
}

// SetCurrent sets the Current mark of document id, if there is one.
func (ix *Index) SetCurrent(id string, current bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if n, ok := ix.byID[id]; ok {
		ix.hot[n].current = current
	}
}

// Lookup returns the Meta and the Current mark of document id.
func (ix *Index) Lookup(id string) (meta any, current, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n, ok := ix.byID[id]
	if !ok {
		return nil, false, false
	}
	return ix.docs[n].meta, ix.hot[n].current, true
}

// Delete removes document id, if there is one.
func (ix *Index) Delete(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deleteLocked(id)
}

// deleteLocked marks the document dead; its postings are dropped when dead
// documents are a quarter of the index.
func (ix *Index) deleteLocked(id string) {
	n, ok := ix.byID[id]
	if !ok {
		return
	}
	d, h := &ix.docs[n], &ix.hot[n]
	h.live, d.meta = false, nil
	delete(ix.byID, id)
	ix.live--
	ix.dead++
	for f := range numFields {
		ix.lenSum[f] -= float64(h.lens[f])
	}
	ix.apiDocs[h.api]--
	ix.countLead(d.lead, h.action, -1)
	for _, t := range ix.apiTerms[h.api] {
		if ix.scopes[t]--; ix.scopes[t] <= 0 {
			delete(ix.scopes, t)
		}
	}
	if ix.dead > 1024 && ix.dead > ix.live/3 {
		ix.compactLocked()
	}
}

// leadOf is the first word of a title, stop words left out.
func leadOf(title string) string {
	for _, w := range Words(title) {
		if !stopWords[w] {
			return w
		}
	}
	return ""
}

// countLead adds n documents doing action a (its code) to the count of their title's
// first word.
func (ix *Index) countLead(lead string, a uint8, n int32) {
	if lead == "" || a >= noAction {
		return
	}
	c := ix.leads[lead]
	if c == nil {
		c = new([numActions]int32)
		ix.leads[lead] = c
	}
	if c[a] += n; *c == [numActions]int32{} {
		delete(ix.leads, lead)
	}
}

// Least documents whose titles start with a word, and the least share of
// them doing one action, for the word to say that action.
const (
	minLeadDocs  = 3
	minLeadShare = 0.6
)

// leadAction is the action the titles that start with the verb w do
// ("follow": Follow a user; "send": Sends a message), "" when too few start
// with it or they do different things. A word is not stemmed here: the
// titles that start with "Follow" say nothing of a query about "followers".
func (ix *Index) leadAction(w string) string {
	var c [numActions]int32
	for _, form := range [...]string{w, w + "s", w + "es"} {
		if n := ix.leads[form]; n != nil {
			for a := range c {
				c[a] += n[a]
			}
		}
	}
	total, best := int32(0), 0
	for a, n := range c {
		total += n
		if n > c[best] {
			best = a
		}
	}
	if total < minLeadDocs || float64(c[best]) < minLeadShare*float64(total) {
		return ""
	}
	return actions[best]
}

// compactLocked drops dead documents and their postings.
func (ix *Index) compactLocked() {
	renum := make([]int32, len(ix.docs))
	docs := make([]doc, 0, ix.live)
	hot := make([]hotDoc, 0, ix.live)
	for i, d := range ix.docs {
		renum[i] = -1
		if ix.hot[i].live {
			renum[i] = int32(len(docs))
			ix.byID[d.id] = renum[i]
			docs = append(docs, d)
			hot = append(hot, ix.hot[i])
		}
	}
	for t, pl := range ix.postings {
		var out postingList
		var p posting
		for it := pl.iter(); it.next(&p); {
			if r := renum[p.doc]; r >= 0 {
				p.doc = r
				out.add(&p)
			}
		}
		if out.n == 0 {
			delete(ix.postings, t)
			ix.vocab.Store(nil)
			ix.vecs.Store(nil)
		} else {
			out.data = slices.Clip(out.data)
			ix.postings[t] = out
		}
	}
	ix.docs, ix.hot, ix.dead = docs, hot, 0
}

// df is the number of documents with term t (dead ones too, until
// compaction).
func (ix *Index) df(t string) int {
	pl := ix.postings[t]
	return int(pl.n)
}

// vocabulary returns the sorted terms; the caller holds at least the read
// lock. It is rebuilt when stale (a term was added or dropped).
func (ix *Index) vocabulary() []string {
	if v := ix.vocab.Load(); v != nil {
		return *v
	}
	v := make([]string, 0, len(ix.postings))
	for t := range ix.postings {
		v = append(v, t)
	}
	sort.Strings(v)
	ix.vocab.Store(&v)
	return v
}

type scored struct {
	doc   int32
	score float64
	id    string
}

// better ranks a above b: higher score, then ID order.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id < b.id
}

// topK keeps the best n hits offered (all of them when n < 0): a heap
// with the worst of them on top, so that a page of a large match costs
// the page, not a sort of every match.
type topK struct {
	n int
	h []scored
}

// full reports whether a hit must beat the worst kept to be kept.
func (t *topK) full() bool { return t.n >= 0 && len(t.h) >= t.n }

// worst is the worst hit kept; only when full.
func (t *topK) worst() scored { return t.h[0] }

// add offers c.
func (t *topK) add(c scored) {
	switch {
	case t.n < 0:
		t.h = append(t.h, c)
	case len(t.h) < t.n:
		t.h = append(t.h, c)
		for i := len(t.h) - 1; i > 0; {
			up := (i - 1) / 2
			if !better(t.h[up], t.h[i]) {
				break
			}
			t.h[up], t.h[i] = t.h[i], t.h[up]
			i = up
		}
	case t.n > 0 && better(c, t.h[0]):
		t.h[0] = c
		for i := 0; ; {
			worst, l := i, 2*i+1
			if l < len(t.h) && better(t.h[worst], t.h[l]) {
				worst = l
			}
			if r := l + 1; r < len(t.h) && better(t.h[worst], t.h[r]) {
				worst = r
			}
			if worst == i {
				break
			}
			t.h[i], t.h[worst] = t.h[worst], t.h[i]
			i = worst
		}
	}
}

// sorted returns the hits kept, best first.
func (t *topK) sorted() []scored {
	slices.SortFunc(t.h, func(a, b scored) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	return t.h
}
