package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/search"
	"golang.org/x/sync/errgroup"
)

// WithSearchIndex ranks searches with package search's index, held in
// memory and kept current by the store's change notifications (writes made
// through any Store on the same database, PostgreSQL replicas included).
// It is built from the store when the Service starts: until it is, Search
// answers with the store's own full-text search, unless wait is set, when
// Search waits for it (for a command that searches once).
func WithSearchIndex(wait bool) Option {
	return func(s *Service) {
		s.index = &searchIndex{wait: wait, built: make(chan struct{})}
		s.index.ix.Store(search.NewIndex())
	}
}

// Semantic ranks capabilities by meaning (package embed's Ranker behind an
// adapter): the similarity in [-1, 1] of a query to capability versions.
type Semantic interface {
	// Similar returns the most similar versions that keep accepts, at most
	// limit of them.
	Similar(ctx context.Context, query string, limit int, keep func(Key) bool) (map[Key]float64, error)
	// Scores returns the similarity of each of keys that has a vector.
	Scores(ctx context.Context, query string, keys []Key) (map[Key]float64, error)
}

// WithSemantic makes searches hybrid: the search index's best hits and
// sem's most similar versions are ranked together by a mix of both scores
// (see hybridWeight). It needs WithSearchIndex; a search whose semantic
// part fails is answered by the lexical rank alone.
func WithSemantic(sem Semantic) Option { return func(s *Service) { s.semantic = sem } }

// Hybrid ranking: the first hybridDepth hits of each ranking are mixed, a
// hit's score being (1-hybridWeight) × its lexical score over the best
// one's plus hybridWeight × its similarity. Past hybridDepth, pages follow
// the lexical rank.
const (
	hybridDepth  = 100
	hybridWeight = 0.5
)

// searchIndex is the Service's index and its state.
type searchIndex struct {
	ix    atomic.Pointer[search.Index]
	wait  bool
	ready atomic.Bool
	built chan struct{} // closed when first built, or when that failed
	once  sync.Once

	mu       sync.Mutex
	building *indexBuild // the build under way; nil when none

	// ctx is the Service's (its watches'), for work that outlives a request.
	ctx context.Context
	// owed are capabilities of this Service's own writes, too many to
	// index before the write returned, not yet indexed; settled is closed
	// when owed empties (nil while it is empty). A search waits for them,
	// so that it sees what this Service wrote (read your writes).
	owed    map[Key]bool
	settled chan struct{}
}

// indexBuild is a build of the index from the store, and the capabilities
// that changed while it ran, to read again once it is done: the watch's
// events are taken while the index is built, so that a build that takes
// as long as a large batch does not leave the watch behind (which closes
// it, and starts the build all over again).
type indexBuild struct {
	cancel  context.CancelFunc
	pending map[Key]bool // capabilities (no version) changed meanwhile
}

// indexed is what the index keeps of a version to filter it (ListFilter);
// whether it is its capability's latest is the document's Current mark.
// The index holds one for every version (164k at 100,000 capabilities),
// so it keeps little of its own: its key is the document's ID (Key.String,
// one string the index holds anyway) read in place, and its attributes are
// interned, each list held once however many versions have it. Interning
// each attribute, not the whole of them, bounds what a version costs
// where few versions have the same combination (80 bytes, where a
// combination of its own cost about 250 more).
type indexed struct {
	id   string    // Key.String(); the search document's ID
	ends [3]uint32 // where in id the scheme, the domain and the name end
	// status interns the stability, source and trust tier, which take few
	// values and fewer combinations.
	status unique.Handle[[3]string]
	// Each list's values joined by listSep.
	domains, categories, intents, bindings unique.Handle[string]
}

// listSep joins a list's values in indexed: a byte no domain, category,
// intent or binding type holds.
const listSep = "\x00"

func indexedOf(r *Record) *indexed {
	d := &r.Definition
	k := r.Key
	m := &indexed{id: k.String(),
		status:     unique.Make([3]string{d.Stability, SourceOf(d), r.TrustTier}),
		domains:    unique.Make(strings.Join(DomainsOf(k, d), listSep)),
		categories: unique.Make(strings.Join(d.Categories, listSep)),
		intents:    unique.Make(strings.Join(d.Intents, listSep)),
		bindings:   unique.Make(strings.Join(d.Bindings.Types(), listSep)),
	}
	m.ends[0] = uint32(len(k.Scheme))
	m.ends[1] = m.ends[0] + 1 + uint32(len(k.Domain))
	m.ends[2] = m.ends[1] + 1 + uint32(len(k.Name))
	return m
}

// key is the version's key, its strings read from m.id.
func (m *indexed) key() Key {
	return Key{Scheme: m.id[:m.ends[0]], Domain: m.id[m.ends[0]+1 : m.ends[1]], Name: m.id[m.ends[1]+1 : m.ends[2]], Version: m.id[m.ends[2]+1:]}
}

// matches applies f as the stores do (see ListFilter), but for
// AllVersions: search.Query.CurrentOnly applies that.
func (m *indexed) matches(f *ListFilter) bool {
	k, status := m.key(), m.status.Value()
	switch {
	case f.Scheme != "" && k.Scheme != f.Scheme,
		f.Name != "" && k.Name != f.Name,
		f.Stability != "" && status[0] != f.Stability,
		f.Source != "" && status[1] != f.Source,
		f.TrustTier != "" && status[2] != f.TrustTier,
		f.Intent != "" && !hasValue(m.intents.Value(), func(v string) bool { return v == f.Intent }),
		f.BindingType != "" && !hasValue(m.bindings.Value(), func(v string) bool { return v == f.BindingType }):
		return false
	}
	return hierarchical(f.Domain, m.domains.Value()) && hierarchical(f.Category, m.categories.Value())
}

// hasValue reports whether one of the values joined in list satisfies ok.
func hasValue(list string, ok func(string) bool) bool {
	if list == "" {
		return false
	}
	for v := range strings.SplitSeq(list, listSep) {
		if ok(v) {
			return true
		}
	}
	return false
}

// filters reports whether f filters on more than the latest versions.
func filters(f ListFilter) bool {
	f.AllVersions, f.Limit, f.Cursor, f.CountTotal = false, 0, "", false
	return f != ListFilter{}
}

// hierarchical reports whether filter ("" matches all) matches one of the
// dotted values joined in list.
func hierarchical(filter string, list string) bool {
	if filter == "" {
		return true
	}
	return hasValue(list, func(v string) bool { return v != "" && capability.DomainMatches(filter, v) })
}

// startIndex follows the store to build the index and keep it current.
func (s *Service) startIndex(ctx context.Context) {
	ix := s.index
	ix.ctx = ctx
	Subscribe(ctx, s.store, Subscriber{
		Watching: func(resumed bool) {
			// Built at the first watch, and again after any gap in the
			// notifications.
			ix.mu.Lock()
			defer ix.mu.Unlock()
			ix.stopBuild()
			if resumed {
				// Let the stale index go before building the new one, so
				// that the two are never held at once (the store answers
				// searches meanwhile).
				ix.ready.Store(false)
				ix.ix.Store(search.NewIndex())
			}
			bctx, cancel := context.WithCancel(ctx)
			b := &indexBuild{cancel: cancel, pending: map[Key]bool{}}
			ix.building = b
			go s.runBuild(bctx, b)
		},
		Event: func(ev Event) {
			ix.mu.Lock()
			if b := ix.building; b != nil {
				k := ev.Key
				k.Version = ""
				b.pending[k] = true
				ix.mu.Unlock()
				return
			}
			ix.mu.Unlock()
			if ix.ready.Load() {
				s.indexCapability(ctx, ev.Key)
				k := ev.Key
				k.Version = ""
				ix.paid(k)
			}
		},
		Closed: func() {
			ix.mu.Lock()
			defer ix.mu.Unlock()
			ix.stopBuild()
			ix.ready.Store(false)
			// The store answers searches until the rebuild, which reads
			// everything owed.
			ix.forgiveLocked()
		},
		Failed: func(err error, _ time.Duration) {
			s.log.Warn("search index: cannot watch the store; searching the store", "err", err)
		},
	})
}

// stopBuild cancels the build under way, if any (under ix.mu).
func (ix *searchIndex) stopBuild() {
	if ix.building != nil {
		ix.building.cancel()
		ix.building = nil
	}
}

// runBuild builds the index from the store, puts it in service and reads
// again the capabilities that changed meanwhile; a build cancelled or
// superseded (a new watch) leaves the index as it is.
func (s *Service) runBuild(ctx context.Context, b *indexBuild) {
	defer b.cancel()
	ix := s.index
	built, err := s.buildIndex(ctx)
	ix.mu.Lock()
	if ix.building != b {
		ix.mu.Unlock()
		return
	}
	ix.building = nil
	if err != nil {
		ix.ready.Store(false)
		ix.mu.Unlock()
		s.log.Warn("search index: cannot build it; searching the store", "err", err)
		ix.once.Do(func() { close(ix.built) })
		return
	}
	ix.ix.Store(built)
	ix.ready.Store(true)
	pending := b.pending
	ix.mu.Unlock()
	for k := range pending {
		s.indexCapability(ctx, k)
	}
	// The build read the store after, or took the notifications of, every
	// write owed so far.
	ix.mu.Lock()
	ix.forgiveLocked()
	ix.mu.Unlock()
	ix.once.Do(func() { close(ix.built) })
}

// owe records keys (no version) as written by this Service and not yet
// indexed, and starts indexing them if that is not under way.
func (s *Service) owe(keys map[Key]bool) {
	ix := s.index
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.building != nil || !ix.ready.Load() {
		return // the store answers searches until the build, which reads them
	}
	drain := ix.owed == nil
	if drain {
		ix.owed = make(map[Key]bool, len(keys))
		ix.settled = make(chan struct{})
	}
	for k := range keys {
		ix.owed[k] = true
	}
	if drain {
		go s.drainOwed()
	}
}

// drainOwed indexes the owed capabilities until none is left (their
// notifications also pay them, whichever comes first). It does not wait
// for the notifications: a write's may have been taken before it was owed.
func (s *Service) drainOwed() {
	ix := s.index
	for ix.ctx.Err() == nil {
		ix.mu.Lock()
		var k Key
		found := false
		for k = range ix.owed {
			found = true
			break
		}
		ix.mu.Unlock()
		if !found {
			return
		}
		s.indexCapability(ix.ctx, k)
		ix.paid(k)
	}
}

// paid marks k indexed.
func (ix *searchIndex) paid(k Key) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.owed == nil {
		return
	}
	delete(ix.owed, k)
	if len(ix.owed) == 0 {
		ix.forgiveLocked()
	}
}

// forgiveLocked drops every owed capability (under ix.mu): the index has
// them, or the store answers until it has.
func (ix *searchIndex) forgiveLocked() {
	if ix.settled != nil {
		close(ix.settled)
	}
	ix.owed, ix.settled = nil, nil
}

// ownWritesWait bounds how long a search waits for the index to take in
// this Service's own big writes; past it, it answers from the index as it
// is.
const ownWritesWait = 10 * time.Second

// awaitOwed waits until this Service's own writes are indexed, at most
// ownWritesWait.
func (ix *searchIndex) awaitOwed(ctx context.Context) error {
	ix.mu.Lock()
	settled := ix.settled
	ix.mu.Unlock()
	if settled == nil {
		return nil
	}
	t := time.NewTimer(ownWritesWait)
	defer t.Stop()
	select {
	case <-settled:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// buildIndex reads every version from the store into a new index.
func (s *Service) buildIndex(ctx context.Context) (*search.Index, error) {
	start := time.Now()
	ix := search.NewIndex()
	f := ListFilter{AllVersions: true, Limit: 500}
	var prev *Key
	for {
		page, err := s.store.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			r := &page.Items[i]
			// List orders versions by precedence within a capability:
			// the last of each is its latest.
			if prev != nil && !sameCapability(*prev, r.Key) {
				ix.SetCurrent(prev.String(), true)
			}
			ix.Put(docOf(r))
			prev = &r.Key
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	if prev != nil {
		ix.SetCurrent(prev.String(), true)
	}
	s.log.Info("search index built", "versions", ix.Len(), "took", time.Since(start).Round(time.Millisecond))
	return ix, nil
}

// docOf is the search document of r, its ID the string its indexed holds.
func docOf(r *Record) search.Doc {
	m := indexedOf(r)
	return search.DocOf(m.id, &r.Definition, m)
}

func sameCapability(a, b Key) bool {
	return a.Scheme == b.Scheme && a.Domain == b.Domain && a.Name == b.Name
}

// indexCapability re-reads every version of k's capability into the index
// (its text, and which version is the latest).
func (s *Service) indexCapability(ctx context.Context, k Key) {
	versions, err := s.store.Versions(ctx, k.Scheme, k.Domain, k.Name)
	if err != nil {
		// Its next change, or the next rebuild, brings it up to date.
		s.log.Warn("search index: cannot read a changed capability; its entry may be stale", "key", k, "err", err)
		return
	}
	for i := range versions {
		r := &versions[i]
		d := docOf(r)
		d.Current = i == len(versions)-1
		s.index.ix.Load().Put(d)
	}
}

// maxSyncIndexed bounds the capabilities of one write that the index takes
// in before the write returns; a bigger batch is indexed right after it, and
// a search on this Service waits for that (owe).
const maxSyncIndexed = 64

// indexWritten takes this Service's own write of keys into the index at
// once, so that a search right after a registration finds it, as the cache
// does for resolution; the notifications of the write re-apply it.
func (s *Service) indexWritten(ctx context.Context, keys []Key) {
	if s.index == nil || !s.index.ready.Load() {
		return
	}
	seen := map[Key]bool{}
	for _, k := range keys {
		k.Version = ""
		seen[k] = true
	}
	if len(seen) > maxSyncIndexed {
		s.owe(seen)
		return
	}
	for k := range seen {
		s.indexCapability(ctx, k)
	}
}

// searchIndexed answers q from the index; ok is false when the index
// cannot answer (not built), and the store should.
func (s *Service) searchIndexed(ctx context.Context, q SearchQuery) (Page, bool, error) {
	ix := s.index
	if ix == nil || strings.TrimSpace(q.Text) == "" {
		return Page{}, false, nil
	}
	if ix.wait && !ix.ready.Load() {
		select {
		case <-ix.built:
		case <-ctx.Done():
			return Page{}, false, ctx.Err()
		}
	}
	if !ix.ready.Load() {
		return Page{}, false, nil
	}
	if err := ix.awaitOwed(ctx); err != nil {
		return Page{}, true, err
	}
	f := q.Filter
	cur, fp, err := OpenPage("search", &f, q.Text)
	if err != nil {
		return Page{}, true, err
	}
	offset := cur.Offset
	idx := ix.ix.Load()
	keep := func(m any) bool { return m.(*indexed).matches(&f) }
	sq := search.Query{Text: q.Text, Offset: offset, Limit: f.Limit, Explain: q.Explain, CurrentOnly: !f.AllVersions}
	if filters(f) {
		sq.Keep = keep
	}
	res := idx.Search(sq)
	if s.semantic != nil && f.Limit > 0 && offset < hybridDepth {
		if mixed, err := s.hybrid(ctx, idx, q, offset, keep); err != nil {
			s.log.Warn("semantic search failed; ranking by words only", "err", err)
		} else {
			res.Hits, res.Total = mixed.Hits, max(res.Total, mixed.Total)
		}
	}
	page := Page{Items: make([]Record, 0, len(res.Hits)), Total: res.Total, Ranking: Ranking{Action: res.Action}}
	for _, u := range res.Unknown {
		page.Unknown = append(page.Unknown, UnknownWord{Word: u.Word, DidYouMean: u.DidYouMean})
	}
	recs, err := s.getAll(ctx, res.Hits)
	if err != nil {
		return Page{}, true, err
	}
	for i, h := range res.Hits {
		if recs[i] == nil {
			continue // gone since it was indexed
		}
		page.Items = append(page.Items, *recs[i])
		page.Hits = append(page.Hits, Hit{Score: h.Score, Why: h.Why})
	}
	if f.Limit > 0 && offset+f.Limit < res.Total {
		page.NextCursor = Cursor{Kind: "search", Query: fp, Offset: offset + f.Limit}.Encode()
	}
	return page, true, nil
}

// maxParallelGets bounds the reads of one page of hits made at once.
const maxParallelGets = 8

// getAll reads the records of hits from the store, several at a time (a
// page is a round trip per hit on PostgreSQL); nil for one gone since it
// was indexed.
func (s *Service) getAll(ctx context.Context, hits []search.Hit) ([]*Record, error) {
	recs := make([]*Record, len(hits))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelGets)
	for i, h := range hits {
		g.Go(func() error {
			r, err := s.getRecord(ctx, h.Meta.(*indexed).key())
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			recs[i] = &r
			return nil
		})
	}
	return recs, g.Wait()
}

// getRecord reads one version: from the version cache when the Service
// keeps one (WithCache), so that a search does not decode the same large
// definitions again and again, else from the store.
func (s *Service) getRecord(ctx context.Context, k Key) (Record, error) {
	if !s.cacheActive {
		return s.store.Get(ctx, k)
	}
	versions, err := s.cachedVersions(ctx, k.Scheme, k.Domain, k.Name)
	if err != nil {
		return Record{}, err
	}
	for _, r := range versions {
		if r.Key == k {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("capability %s: %w", k, ErrNotFound)
}

// hybrid ranks the first hybridDepth lexical hits of q together with the
// versions most similar to it, and returns the page at offset.
func (s *Service) hybrid(ctx context.Context, idx *search.Index, q SearchQuery, offset int, keep func(any) bool) (search.Result, error) {
	lex := idx.Search(search.Query{Text: q.Text, Limit: hybridDepth, Explain: q.Explain, Keep: keep, CurrentOnly: !q.Filter.AllVersions})
	keys := make([]Key, len(lex.Hits))
	for i, h := range lex.Hits {
		keys[i] = h.Meta.(*indexed).key()
	}
	sims, err := s.semantic.Scores(ctx, q.Text, keys)
	if err != nil {
		return search.Result{}, err
	}
	near, err := s.semantic.Similar(ctx, q.Text, hybridDepth, func(k Key) bool {
		m, current, ok := idx.Lookup(k.String())
		return ok && (current || q.Filter.AllVersions) && keep(m)
	})
	if err != nil {
		return search.Result{}, err
	}
	best := 1.0
	if len(lex.Hits) > 0 {
		best = lex.Hits[0].Score
	}
	mixed := make([]search.Hit, 0, len(lex.Hits)+len(near))
	seen := map[Key]bool{}
	for i, h := range lex.Hits {
		sim := sims[keys[i]]
		h.Score = (1-hybridWeight)*h.Score/best + hybridWeight*max(sim, 0)
		if q.Explain {
			h.Why = append(h.Why, fmt.Sprintf("semantic similarity %.2f, mixed with the words' score", sim))
		}
		seen[keys[i]] = true
		mixed = append(mixed, h)
	}
	for k, sim := range near {
		if seen[k] {
			continue
		}
		m, _, _ := idx.Lookup(k.String())
		h := search.Hit{ID: k.String(), Meta: m, Score: hybridWeight * max(sim, 0)}
		if q.Explain {
			h.Why = []string{fmt.Sprintf("semantic similarity %.2f (no word in common)", sim)}
		}
		mixed = append(mixed, h)
	}
	slices.SortFunc(mixed, func(a, b search.Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	total := len(mixed)
	if q.Filter.Limit > 0 {
		mixed = mixed[min(offset, len(mixed)):min(offset+q.Filter.Limit, len(mixed))]
	} else {
		mixed = mixed[min(offset, len(mixed)):]
	}
	return search.Result{Hits: mixed, Total: total}, nil
}
