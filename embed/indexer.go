package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/wait"
	"github.com/caphub/caphub/registry"
)

// Indexer keeps the vectors of a store's versions current: it loads the
// stored ones into its Ranker, embeds each version registered after it
// started (following the store with registry.Subscribe, so registrations
// through other replicas count too), and backfills the versions that have
// no vector, in batches, in the background. A registration never waits for
// it: when the provider fails, it logs and tries again later.
type Indexer struct {
	store    registry.Store
	provider Provider
	ranker   *Ranker
	log      *slog.Logger
	opts     IndexerOptions

	mu      sync.Mutex
	pending map[registry.Key]struct{}
	rescan  bool   // the whole store must be scanned for versions without vectors
	cursor  string // where an interrupted scan resumes
	wake    chan struct{}

	loaded   bool // the stored vectors are loaded
	scanning bool // a backfill is running
	inFlight int  // registered versions being embedded
	embedded int
	lastErr  string
}

// Status is what an Indexer has done and has left to do.
type Status struct {
	// Loaded reports whether the stored vectors are loaded.
	Loaded bool
	// Vectors is how many vectors the ranker holds.
	Vectors int
	// Embedded is how many versions were embedded since Start.
	Embedded int
	// Pending is how many registered versions wait to be embedded.
	Pending int
	// Scanning reports whether a backfill is running or due.
	Scanning bool
	// LastError is the last failure, "" once a later try succeeded.
	LastError string
}

// Status returns what the indexer has done and has left to do: it is
// idle, every version embedded, when Loaded && Pending == 0 && !Scanning.
func (ix *Indexer) Status() Status {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return Status{
		Loaded: ix.loaded, Vectors: ix.ranker.Len(), Embedded: ix.embedded, Pending: len(ix.pending) + ix.inFlight,
		Scanning: ix.rescan || ix.scanning, LastError: ix.lastErr,
	}
}

// IndexerOptions configure an Indexer; every field has a default.
type IndexerOptions struct {
	// Log hears progress and failures (default slog.Default()).
	Log *slog.Logger
	// Batch is how many versions are embedded per provider call and stored
	// per transaction (default 64).
	Batch int
	// MinRetry is the wait after a failure (provider or store), doubled
	// after each failure in a row up to MaxRetry (defaults 5s and 5m). A
	// provider's Retry-After makes it longer.
	MinRetry, MaxRetry time.Duration
	// MaxPending bounds the registered versions waiting to be embedded
	// (default 10,000); past it, the indexer scans the store instead.
	MaxPending int
	// Ranker configures the Ranker.
	Ranker RankerOptions
}

// scanPage is how many versions a backfill reads from the store at once.
const scanPage = 500

// progressEvery is how often a backfill logs its progress.
const progressEvery = 10 * time.Second

// NewIndexer returns an Indexer of store's versions embedded by p. Start
// it with Start.
func NewIndexer(store registry.Store, p Provider, o IndexerOptions) *Indexer {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.MinRetry <= 0 {
		o.MinRetry = 5 * time.Second
	}
	if o.MaxRetry < o.MinRetry {
		o.MaxRetry = max(5*time.Minute, o.MinRetry)
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10_000
	}
	return &Indexer{
		store: store, provider: p, ranker: NewRanker(p, o.Ranker), log: o.Log, opts: o,
		pending: map[registry.Key]struct{}{}, rescan: true, wake: make(chan struct{}, 1),
	}
}

// Ranker returns the ranker the indexer fills.
func (ix *Indexer) Ranker() *Ranker { return ix.ranker }

// Start follows the store until ctx ends, from a goroutine of its own: it
// loads the stored vectors, backfills, then embeds new versions as they
// are registered. It watches the store before it returns, so that no
// version registered after it returns is missed. The returned channel is
// closed when the indexer has stopped. Call it once.
func (ix *Indexer) Start(ctx context.Context) <-chan struct{} {
	watched := registry.Subscribe(ctx, ix.store, registry.Subscriber{
		Watching: func(resumed bool) {
			if resumed { // changes may have been missed: scan again
				ix.note(func() { ix.rescan, ix.cursor = true, "" })
			}
		},
		Event: func(ev registry.Event) {
			if ev.Kind != registry.EventRegistered {
				return
			}
			ix.note(func() {
				if len(ix.pending) < ix.opts.MaxPending {
					ix.pending[ev.Key] = struct{}{}
				} else { // scan all: a resumed scan could miss it
					ix.rescan, ix.cursor = true, ""
				}
			})
		},
		Failed: func(err error, retryIn time.Duration) {
			ix.log.Warn("embedding index: cannot watch the store for new versions; trying again", "err", err, "retry_in", retryIn)
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ix.run(ctx)
		<-watched
	}()
	return done
}

// note changes the work to do and wakes the loop; it never blocks.
func (ix *Indexer) note(change func()) {
	ix.mu.Lock()
	change()
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// run is the indexer's loop.
func (ix *Indexer) run(ctx context.Context) {
	retry := ix.opts.MinRetry
	pause := func(err error) bool {
		d := retry
		var he *HTTPError
		if errors.As(err, &he) && he.RetryAfter > d {
			d = he.RetryAfter
		}
		retry = min(retry*2, ix.opts.MaxRetry)
		return wait.Sleep(ctx, d)
	}
	for {
		skipped, err := ix.ranker.Load(ctx, ix.store)
		ix.setErr(err)
		if err == nil {
			ix.mu.Lock()
			ix.loaded = true
			ix.mu.Unlock()
			ix.log.Info("embedding index: loaded the stored vectors", "model", ix.ranker.Model(), "vectors", ix.ranker.Len(), "skipped", skipped)
			break
		}
		if ctx.Err() != nil {
			return
		}
		ix.log.Warn("embedding index: cannot load the stored vectors; trying again", "err", err, "retry_in", retry)
		if !pause(err) {
			return
		}
	}
	retry = ix.opts.MinRetry
	for ctx.Err() == nil {
		ix.mu.Lock()
		rescan, cursor := ix.rescan, ix.cursor
		ix.rescan, ix.cursor = false, ""
		ix.scanning = rescan
		idle := !rescan && len(ix.pending) == 0
		ix.mu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-ix.wake:
				continue
			}
		}
		// New versions first: a backfill can take long.
		err := ix.embedPending(ctx)
		if rescan {
			if err == nil {
				err = ix.backfill(ctx, cursor)
			} else {
				ix.failScan(cursor)
			}
			ix.mu.Lock()
			ix.scanning = false
			ix.mu.Unlock()
		}
		ix.setErr(err)
		if err == nil {
			retry = ix.opts.MinRetry
			continue
		}
		if ctx.Err() != nil {
			return
		}
		ix.log.Warn("embedding index: cannot embed; trying again later", "err", err, "retry_in", retry)
		if !pause(err) {
			return
		}
	}
}

// setErr notes the outcome of a try.
func (ix *Indexer) setErr(err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.lastErr = ""
	if err != nil {
		ix.lastErr = err.Error()
	}
}

// embedPending embeds the registered versions waiting.
func (ix *Indexer) embedPending(ctx context.Context) error {
	ix.mu.Lock()
	keys := make([]registry.Key, 0, len(ix.pending))
	for k := range ix.pending {
		keys = append(keys, k)
	}
	clear(ix.pending)
	ix.inFlight = len(keys)
	ix.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	err := ix.embedKeys(ctx, keys)
	ix.mu.Lock()
	ix.inFlight = 0
	ix.mu.Unlock()
	return err
}

// embedKeys embeds the versions of keys that have no vector yet. A vector
// stored meanwhile (by another replica) is loaded instead. Those not done
// when it fails wait for the next try.
func (ix *Indexer) embedKeys(ctx context.Context, keys []registry.Key) (err error) {
	var recs []registry.Record
	defer func() {
		if err != nil {
			ix.note(func() {
				for _, r := range recs {
					ix.pending[r.Key] = struct{}{}
				}
			})
		}
	}()
	for i, k := range keys {
		if ix.ranker.Has(k) {
			continue
		}
		if v, gerr := GetVector(ctx, ix.store, ix.ranker.Model(), k); gerr == nil {
			if ix.ranker.Add(Vector{Key: k, Vector: v}) == nil {
				continue
			}
		}
		rec, gerr := ix.store.Get(ctx, k)
		if errors.Is(gerr, registry.ErrNotFound) {
			continue
		}
		if gerr != nil {
			recs = append(recs, restOf(keys[i:])...)
			return gerr
		}
		recs = append(recs, rec)
	}
	for len(recs) > 0 {
		n := min(len(recs), ix.opts.Batch)
		if err := ix.embed(ctx, recs[:n]); err != nil {
			return err
		}
		ix.log.Debug("embedding index: embedded new versions", "versions", n)
		recs = recs[n:]
	}
	return nil
}

// restOf makes records of keys, to be retried.
func restOf(keys []registry.Key) []registry.Record {
	out := make([]registry.Record, len(keys))
	for i, k := range keys {
		out[i].Key = k
	}
	return out
}

// backfill embeds every version without a vector, reading the store a page
// at a time from cursor. When it fails, the next one resumes at the page
// that holds the first version it did not embed.
func (ix *Indexer) backfill(ctx context.Context, cursor string) error {
	start, last := time.Now(), time.Now()
	embedded, seen, total := 0, 0, 0
	var missing []registry.Record
	resume := cursor // the page of missing[0]
	for {
		page, err := ix.store.List(ctx, registry.ListFilter{AllVersions: true, Limit: scanPage, Cursor: cursor})
		if errors.Is(err, registry.ErrInvalidCursor) && cursor != "" {
			cursor, resume, missing = "", "", nil // start over
			continue
		}
		if err != nil {
			ix.failScan(resume)
			return fmt.Errorf("list the versions to embed: %w", err)
		}
		if len(missing) == 0 {
			resume = cursor
		}
		total = page.Total
		seen += len(page.Items)
		for _, rec := range page.Items {
			if !ix.ranker.Has(rec.Key) {
				missing = append(missing, rec)
			}
		}
		for len(missing) > 0 && (len(missing) >= ix.opts.Batch || page.NextCursor == "") {
			n := min(len(missing), ix.opts.Batch)
			if err := ix.embed(ctx, missing[:n]); err != nil {
				ix.failScan(resume)
				return err
			}
			embedded += n
			missing = missing[n:]
			// Versions registered meanwhile do not wait for the end.
			if err := ix.embedPending(ctx); err != nil {
				ix.failScan(resume)
				return err
			}
			if time.Since(last) >= progressEvery {
				last = time.Now()
				ix.log.Info("embedding index: backfilling", "embedded", embedded, "scanned", seen, "versions", total)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if embedded > 0 || time.Since(start) >= progressEvery {
		ix.log.Info("embedding index: backfill done", "embedded", embedded, "versions", total, "vectors", ix.ranker.Len(), "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// failScan makes the next scan resume at cursor, unless a scan from the
// start was asked for meanwhile.
func (ix *Indexer) failScan(cursor string) {
	ix.mu.Lock()
	if !ix.rescan {
		ix.rescan, ix.cursor = true, cursor
	}
	ix.mu.Unlock()
}

// embed embeds recs in one provider call, stores their vectors in one
// transaction and hands them to the ranker.
func (ix *Indexer) embed(ctx context.Context, recs []registry.Record) error {
	texts := make([]string, len(recs))
	for i := range recs {
		texts[i] = Text(&recs[i].Definition)
	}
	vecs, err := ix.provider.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(vecs) != len(recs) {
		return fmt.Errorf("the embedding provider returned %d vectors for %d texts", len(vecs), len(recs))
	}
	if err := ix.checkLength(len(vecs[0])); err != nil {
		return err
	}
	vs := make([]Vector, len(recs))
	for i := range recs {
		vs[i] = Vector{Key: recs[i].Key, Vector: vecs[i]}
	}
	if err := PutVectors(ctx, ix.store, ix.ranker.Model(), vs); err != nil {
		return err
	}
	for _, v := range vs {
		if err := ix.ranker.Add(v); err != nil {
			return err
		}
	}
	ix.mu.Lock()
	ix.embedded += len(vs)
	ix.mu.Unlock()
	return nil
}

// checkLength compares the length of the provider's vectors with the
// ranker's. When they differ and no length was configured, the provider
// wins: the vectors held came from an earlier setting of the model, so
// they are dropped and every version is embedded again.
func (ix *Indexer) checkLength(n int) error {
	held := ix.ranker.Dimensions()
	if held == 0 || held == n {
		return nil
	}
	if ix.opts.Ranker.Dimensions != 0 {
		return fmt.Errorf("the embedding provider returned vectors of %d dimensions, not the %d configured: fix the model or the dimensions setting", n, held)
	}
	ix.log.Warn("embedding index: the provider's vectors are not as long as the stored ones; embedding every version again", "model", ix.ranker.Model(), "stored", held, "provider", n)
	ix.ranker.reset(n)
	ix.mu.Lock()
	ix.rescan, ix.cursor = true, ""
	ix.mu.Unlock()
	return nil
}
