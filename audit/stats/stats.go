// Package stats computes the figures of caphub's overview (the web UI's
// charts, GET /v1/stats) from the audit chain: calls, errors and latency per
// time bucket and per capability, over a bounded window of the newest
// invocation events. The chain is the one record every edge (REST, /mcp, the
// fronted servers, the CLI) writes a call to, so the figures need no metrics
// store of their own; the window keeps their cost bounded however long the
// chain grows: at most Options.MaxEvents events are read, through the
// chain's (kind, seq) index, and Result.Partial says when the window held
// more.
package stats

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// Defaults and bounds of Options.
const (
	DefaultWindow    = 24 * time.Hour
	DefaultBucket    = time.Hour
	MaxWindow        = 31 * 24 * time.Hour
	MinBucket        = time.Minute
	MaxBuckets       = 500
	DefaultMaxEvents = 100_000
	// TopCapabilities is how many capabilities Result.Capabilities lists
	// (the most called); the others are summed in Result.OtherCapabilities.
	TopCapabilities = 20
)

// KindInvocation is the kind of the events counted (audit.KindInvocation;
// not imported, so that this package needs only the chain's records).
const KindInvocation = "invocation"

// Codes that are not errors: the call was held for a human, not failed.
const (
	codeApprovalNeeded   = "APPROVAL_REQUIRED"
	codeTooManyApprovals = "TOO_MANY_APPROVALS"
)

// pageSize is how many events one ListAudit reads.
const pageSize = 5000

// Options say which window to compute.
type Options struct {
	// Window is how far back from Now the figures go; DefaultWindow when
	// 0, at most MaxWindow.
	Window time.Duration
	// Bucket is the width of a time bucket; DefaultBucket when 0, at least
	// MinBucket, and Window/Bucket at most MaxBuckets.
	Bucket time.Duration
	// MaxEvents bounds the events read: the newest MaxEvents of the chain
	// (of every kind) are looked at, at most. DefaultMaxEvents when 0.
	MaxEvents int64
	// Now is the end of the window; time.Now() when zero.
	Now time.Time
}

// Check validates o and fills in the defaults; its errors say what to
// change.
func (o *Options) Check() error {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Bucket == 0 {
		o.Bucket = DefaultBucket
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	switch {
	case o.Window < 0 || o.Window > MaxWindow:
		return fmt.Errorf("window %s: give a duration between %s and %s", o.Window, MinBucket, MaxWindow)
	case o.Bucket < MinBucket:
		return fmt.Errorf("bucket %s: give at least %s", o.Bucket, MinBucket)
	case o.Bucket > o.Window:
		return fmt.Errorf("bucket %s is wider than the window %s: give a smaller bucket", o.Bucket, o.Window)
	case o.Window/o.Bucket > MaxBuckets:
		return fmt.Errorf("window %s in buckets of %s makes %d buckets: at most %d, give a wider bucket", o.Window, o.Bucket, o.Window/o.Bucket, MaxBuckets)
	}
	return nil
}

// Bucket is one time bucket of the window: the calls that ended in it.
type Bucket struct {
	Start  time.Time `json:"start"`
	Calls  int       `json:"calls"`
	Errors int       `json:"errors"`
	// Held counts the calls held for approval (not errors).
	Held int `json:"held"`
	// P50MS and P95MS are the median and 95th percentile of the calls'
	// durations, in milliseconds (0 without calls).
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
}

// Capability is the calls of one capability (the URI the calls asked for).
type Capability struct {
	URI    string  `json:"uri"`
	Calls  int     `json:"calls"`
	Errors int     `json:"errors"`
	Held   int     `json:"held"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
}

// Result is the figures of one window.
type Result struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Bucket string    `json:"bucket"` // the bucket width, as a Go duration
	// Calls, Errors and Held count every call of the window.
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
	Held   int `json:"held"`
	// Codes counts the calls by their code (errors and held calls).
	Codes   map[string]int `json:"codes"`
	Buckets []Bucket       `json:"buckets"`
	// Capabilities are the TopCapabilities most called, most calls first
	// (then by URI); OtherCapabilities counts the calls of the rest.
	Capabilities      []Capability `json:"capabilities"`
	OtherCapabilities int          `json:"other_capabilities"`
	// HeadSeq is the chain's last event (0 when empty); FromSeq the first
	// event looked at.
	HeadSeq int64 `json:"head_seq"`
	FromSeq int64 `json:"from_seq"`
	// Partial says that the window holds events older than FromSeq, which
	// the bound on events read (MaxEvents) left out: the figures cover
	// the window from the time of event FromSeq.
	Partial bool `json:"partial"`
}

// call is what the figures read of an invocation event's Data (an
// invoke.Record).
type call struct {
	DurationMS float64 `json:"duration_ms"`
	Code       string  `json:"code"`
}

// entry is one invocation event as a Tracker keeps it: 32 bytes, so that
// DefaultMaxEvents of them take about 3 MB.
type entry struct {
	seq  int64
	at   int64   // Time, Unix nanoseconds
	ms   float32 // DurationMS
	cap  int32   // index in Tracker.names
	code int32   // index in Tracker.names; -1: success
	_    int32
}

type acc struct {
	calls, errors, held int
	durations           []float64
}

func (a *acc) add(ms float64, code string) {
	a.calls++
	switch code {
	case "":
	case codeApprovalNeeded, codeTooManyApprovals:
		a.held++
	default:
		a.errors++
	}
	a.durations = append(a.durations, ms)
}

// quantiles sorts a.durations and returns its median and 95th percentile
// (nearest rank).
func (a *acc) quantiles() (p50, p95 float64) {
	if len(a.durations) == 0 {
		return 0, 0
	}
	slices.Sort(a.durations)
	rank := func(q float64) float64 {
		i := int(q*float64(len(a.durations))+0.999999) - 1
		return a.durations[min(max(i, 0), len(a.durations)-1)]
	}
	return rank(0.5), rank(0.95)
}

// Tracker computes the figures from a chain, keeping in memory a summary of
// the newest invocation events it read (at most MaxEvents of them, about 3
// MB at the default) so that each Compute reads from the store only the
// events appended since the last one: the first call reads the whole bound,
// the next ones a few rows. It is safe for concurrent use; several replicas
// each keep their own over the shared chain.
type Tracker struct {
	st  chain.Store
	max int64

	mu      sync.Mutex
	entries []entry // ascending seq
	last    int64   // the last seq read (of any kind)
	names   []string
	index   map[string]int32
}

// NewTracker returns a Tracker over st that keeps at most maxEvents events
// (DefaultMaxEvents when 0 or less): the most any Compute may ask for.
func NewTracker(st chain.Store, maxEvents int64) *Tracker {
	if maxEvents <= 0 {
		maxEvents = DefaultMaxEvents
	}
	return &Tracker{st: st, max: maxEvents, index: map[string]int32{}}
}

// Compute reads the window's invocation events from st and sums them (a
// Tracker used once: for repeated reads, keep a Tracker).
func Compute(ctx context.Context, st chain.Store, o Options) (*Result, error) {
	return NewTracker(st, o.MaxEvents).Compute(ctx, o)
}

func (t *Tracker) name(s string) int32 {
	if i, ok := t.index[s]; ok {
		return i
	}
	i := int32(len(t.names))
	t.names = append(t.names, s)
	t.index[s] = i
	return i
}

// refresh reads the invocation events appended since the last read, and
// forgets those before from (out of the bound, or pruned). It runs with
// t.mu held.
func (t *Tracker) refresh(ctx context.Context, head, from int64) error {
	if head < t.last {
		// The chain is shorter than what was read (a restored database):
		// read it again.
		t.entries, t.last, t.names, t.index = nil, 0, nil, map[string]int32{}
	}
	cut, _ := slices.BinarySearchFunc(t.entries, from+1, func(e entry, seq int64) int { return cmp.Compare(e.seq, seq) })
	t.entries = slices.Delete(t.entries, 0, cut)
	if len(t.names) > 4*TopCapabilities+4096 && len(t.names) > 2*len(t.entries) {
		t.compact()
	}
	f := chain.Filter{Kind: KindInvocation, AfterSeq: max(t.last, from), Limit: pageSize}
	for f.AfterSeq < head {
		events, err := t.st.ListAudit(ctx, f)
		if err != nil {
			return fmt.Errorf("stats: list invocation events after %d: %w", f.AfterSeq, err)
		}
		for _, e := range events {
			if e.Seq > head {
				// Appended after head was read: the next refresh reads it
				// (t.last = head), so it is not counted now as well.
				t.last = head
				return nil
			}
			var c call
			if err := json.Unmarshal(e.Data, &c); err != nil {
				return fmt.Errorf("stats: audit event %d is not an invocation record: %w (run caphub audit verify)", e.Seq, err)
			}
			en := entry{seq: e.Seq, at: e.Time.UnixNano(), ms: float32(c.DurationMS), cap: t.name(e.Capability), code: -1}
			if c.Code != "" {
				en.code = t.name(c.Code)
			}
			t.entries = append(t.entries, en)
		}
		if len(events) < f.Limit {
			break
		}
		f.AfterSeq = events[len(events)-1].Seq
	}
	t.last = head
	return nil
}

// compact drops the names no entry uses any more.
func (t *Tracker) compact() {
	names, index := []string(nil), map[string]int32{}
	keep := func(i int32) int32 {
		s := t.names[i]
		if j, ok := index[s]; ok {
			return j
		}
		j := int32(len(names))
		names = append(names, s)
		index[s] = j
		return j
	}
	for k := range t.entries {
		e := &t.entries[k]
		e.cap = keep(e.cap)
		if e.code >= 0 {
			e.code = keep(e.code)
		}
	}
	t.names, t.index = names, index
}

// Compute returns the figures of the window o asks for (o.MaxEvents at
// most the Tracker's bound).
func (t *Tracker) Compute(ctx context.Context, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o.MaxEvents = min(o.MaxEvents, t.max)
	until := o.Now.UTC()
	// Buckets end at until and are aligned to the bucket width, so that
	// consecutive reads give the same buckets.
	end := until.Truncate(o.Bucket)
	if end.Before(until) {
		end = end.Add(o.Bucket)
	}
	n := int((o.Window + o.Bucket - 1) / o.Bucket)
	since := end.Add(-time.Duration(n) * o.Bucket)
	res := &Result{Since: since, Until: until, Bucket: o.Bucket.String(), Codes: map[string]int{}, Buckets: make([]Bucket, n), Capabilities: []Capability{}}
	for i := range res.Buckets {
		res.Buckets[i].Start = since.Add(time.Duration(i) * o.Bucket)
	}
	state, err := t.st.AuditState(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats: read the audit chain's state: %w", err)
	}
	if state.Last == nil {
		return res, nil
	}
	res.HeadSeq = state.Last.Seq
	after := max(state.Last.Seq-o.MaxEvents, 0)
	if state.Checkpoint != nil {
		after = max(after, state.Checkpoint.Seq)
	}
	res.FromSeq = after + 1
	if after > 0 && (state.Checkpoint == nil || after > state.Checkpoint.Seq) {
		// Events before FromSeq are kept: the window is partial when the
		// first one left out is in it.
		ev, err := t.st.ListAudit(ctx, chain.Filter{AfterSeq: after - 1, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("stats: read audit event %d: %w", after, err)
		}
		res.Partial = len(ev) == 1 && !ev[0].Time.Before(since)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	keepFrom := max(state.Last.Seq-t.max, 0)
	if state.Checkpoint != nil {
		keepFrom = max(keepFrom, state.Checkpoint.Seq)
	}
	if err := t.refresh(ctx, state.Last.Seq, keepFrom); err != nil {
		return nil, err
	}
	buckets := make([]acc, n)
	caps := map[int32]*acc{}
	lo, hi := since.UnixNano(), until.UnixNano()
	first, _ := slices.BinarySearchFunc(t.entries, after+1, func(e entry, seq int64) int { return cmp.Compare(e.seq, seq) })
	for _, e := range t.entries[first:] {
		if e.at < lo || e.at > hi {
			continue
		}
		i := int((e.at - lo) / int64(o.Bucket))
		if i >= n {
			continue
		}
		code := ""
		if e.code >= 0 {
			code = t.names[e.code]
			res.Codes[code]++
		}
		buckets[i].add(float64(e.ms), code)
		a := caps[e.cap]
		if a == nil {
			a = &acc{}
			caps[e.cap] = a
		}
		a.add(float64(e.ms), code)
		res.Calls++
	}
	for i := range buckets {
		b := &res.Buckets[i]
		b.Calls, b.Errors, b.Held = buckets[i].calls, buckets[i].errors, buckets[i].held
		b.P50MS, b.P95MS = buckets[i].quantiles()
		res.Errors += b.Errors
		res.Held += b.Held
	}
	for k, a := range caps {
		c := Capability{URI: t.names[k], Calls: a.calls, Errors: a.errors, Held: a.held}
		c.P50MS, c.P95MS = a.quantiles()
		res.Capabilities = append(res.Capabilities, c)
	}
	sort.Slice(res.Capabilities, func(i, j int) bool {
		a, b := res.Capabilities[i], res.Capabilities[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.URI < b.URI
	})
	if len(res.Capabilities) > TopCapabilities {
		for _, c := range res.Capabilities[TopCapabilities:] {
			res.OtherCapabilities += c.Calls
		}
		res.Capabilities = res.Capabilities[:TopCapabilities]
	}
	return res, nil
}
