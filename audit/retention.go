package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// Retention says how much of the chain to keep; Prune removes the rest,
// oldest first. A zero field does not limit; a zero Retention keeps
// everything.
type Retention struct {
	// MaxEvents keeps the newest MaxEvents events; the event that records
	// the prune comes on top.
	MaxEvents int64 `json:"max_events,omitempty"`
	// MaxAge removes the events older than MaxAge.
	MaxAge time.Duration `json:"max_age,omitempty"`
}

// IsZero reports whether r keeps everything.
func (r Retention) IsZero() bool { return r.MaxEvents == 0 && r.MaxAge == 0 }

// check refuses negative limits.
func (r Retention) check() error {
	switch {
	case r.MaxEvents < 0:
		return fmt.Errorf("the maximum number of audit events %d is negative: give 0 (no limit) or more", r.MaxEvents)
	case r.MaxAge < 0:
		return fmt.Errorf("the maximum age of audit events %s is negative: give 0 (no limit) or more", r.MaxAge)
	}
	return nil
}

// String returns e.g. "the newest 100000 events, none older than 720h0m0s".
func (r Retention) String() string {
	switch {
	case r.IsZero():
		return "every event"
	case r.MaxAge == 0:
		return fmt.Sprintf("the newest %d events", r.MaxEvents)
	case r.MaxEvents == 0:
		return fmt.Sprintf("the events of the last %s", r.MaxAge)
	}
	return fmt.Sprintf("the newest %d events, none older than %s", r.MaxEvents, r.MaxAge)
}

// DefaultPruneInterval is how often a Log with a retention prunes when
// fewer than its trigger of events were appended in between.
const DefaultPruneInterval = 10 * time.Minute

// WithRetention makes the Log prune its chain to the newest maxEvents
// events and to those younger than maxAge (0: no limit; both 0: no
// pruning): at once, then every DefaultPruneInterval, and after every
// 10,000 events it appends (fewer when maxEvents is small), in the
// background. Each prune is logged; a failed one is logged and tried again
// next time. Close stops the pruner.
func WithRetention(maxEvents int64, maxAge time.Duration) Option {
	return func(l *Log) { l.retention = Retention{MaxEvents: maxEvents, MaxAge: maxAge} }
}

// WithPruneInterval sets how often the pruner of WithRetention runs
// (default DefaultPruneInterval).
func WithPruneInterval(d time.Duration) Option { return func(l *Log) { l.pruneInterval = d } }

// pruneActor is the Actor of the events that record prunes.
const pruneActor = "caphub-retention"

// prunedData is the Data of a "pruned" event: the checkpoint the prune
// left (At and Record are the event's own Time and Seq).
type prunedData struct {
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	Time   string `json:"time"` // RFC 3339 in UTC, as Preimage writes times
	Pruned int64  `json:"pruned"`
}

// recordData returns the canonical Data of the event that records cp.
func recordData(cp chain.Checkpoint) (json.RawMessage, error) {
	b, err := json.Marshal(prunedData{Seq: cp.Seq, Hash: cp.Hash, Time: cp.Time.UTC().Format(time.RFC3339Nano), Pruned: cp.Pruned})
	if err != nil {
		return nil, err
	}
	return Canonicalize(b)
}

// PruneResult is what Prune did.
type PruneResult struct {
	// Pruned counts the events this prune removed (0: none).
	Pruned int64 `json:"pruned"`
	// Batches counts its transactions, each of at most chain.MaxPruneBatch
	// events and each recorded by a "pruned" event.
	Batches int `json:"batches"`
	// Checkpoint is where the chain now starts from: nil when no event was
	// ever pruned.
	Checkpoint *chain.Checkpoint `json:"checkpoint,omitempty"`
	// Kept counts the events left, from the checkpoint to the head, as of
	// the prune's last transaction.
	Kept int64 `json:"kept"`
	// Raced is true when another prune (another replica's) moved the
	// checkpoint meanwhile, so this one stopped early.
	Raced bool `json:"raced,omitempty"`
}

// String returns e.g. "pruned 5000 events in 1 batch: events 1 to 5000
// (up to 2026-01-02T03:04:05Z) are gone, 1200 events kept from event 5001"
// or "nothing to prune: 1200 events kept".
func (r *PruneResult) String() string {
	if r.Pruned == 0 {
		return fmt.Sprintf("nothing to prune: %s kept", events(r.Kept))
	}
	batches := "1 batch"
	if r.Batches != 1 {
		batches = fmt.Sprintf("%d batches", r.Batches)
	}
	cp := r.Checkpoint
	return fmt.Sprintf("pruned %s in %s: events 1 to %d (up to %s) are gone, %s kept from event %d; checkpoint hash %s, recorded by event %d",
		events(r.Pruned), batches, cp.Seq, cp.Time.Format(time.RFC3339Nano), events(r.Kept), cp.Seq+1, cp.Hash, cp.Record)
}

// errPruneRaced stops a prune whose checkpoint another prune moved.
var errPruneRaced = errors.New("another prune moved the audit checkpoint")

// Prune removes the oldest events that r does not keep, in transactions
// of at most chain.MaxPruneBatch events each (appenders, on every replica,
// wait for one batch at most), and leaves a checkpoint from which Verify
// starts. Each transaction also appends a "pruned" event recording the
// checkpoint it leaves, so the chain after the cut shows that the cut
// happened and a forged checkpoint shows as a break.
//
// It prunes only an intact chain: before it removes anything it checks the
// current checkpoint against its record and every event it is about to
// remove (links and hashes, as Verify does), and refuses, removing
// nothing, when one is broken — pruning must not erase the evidence of
// tampering. When another prune moves the checkpoint meanwhile (another
// replica), it stops and says so in the result.
func (l *Log) Prune(ctx context.Context, r Retention) (*PruneResult, error) {
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("prune the audit chain: %w", err)
	}
	if r.IsZero() {
		return nil, errors.New("prune the audit chain: no limit given: give a maximum number of events or a maximum age")
	}
	st, err := l.store.AuditState(ctx)
	if err != nil {
		return nil, fmt.Errorf("prune the audit chain: %w", err)
	}
	cp := st.Checkpoint
	res := &PruneResult{Checkpoint: cp}
	if st.Last == nil {
		return res, nil
	}
	from := int64(0)
	if cp != nil {
		from = cp.Seq
	}
	res.Kept = st.Last.Seq - from
	target, err := l.pruneTarget(ctx, r, st.Last)
	if err != nil || target <= from {
		return res, err
	}
	var ends map[int64]string
	if cp != nil {
		err = l.checkCheckpoint(ctx, cp)
	}
	if err == nil {
		ends, err = l.checkRange(ctx, cp, target)
	}
	if err != nil {
		// What another prune removed meanwhile is missing, not broken.
		if now, serr := l.store.AuditState(ctx); serr == nil && !sameCheckpoint(now.Checkpoint, cp) {
			res.Raced = true
			return res, nil
		}
		return res, err
	}
	return res, l.pruneBatches(ctx, res, from, target, ends)
}

// pruneBatches prunes the checked events after from up to target, in
// batches of at most chain.MaxPruneBatch, each with its "pruned" record;
// ends are the hashes checkRange read at each batch's end. It stops, with
// res.Raced set, when another prune moved the checkpoint meanwhile.
func (l *Log) pruneBatches(ctx context.Context, res *PruneResult, from, target int64, ends map[int64]string) error {
	for from < target {
		upTo := min(target, from+chain.MaxPruneBatch)
		prev := from
		got, err := l.store.PruneAudit(ctx, upTo, func(last *chain.Event, next chain.Checkpoint) (chain.Event, error) {
			if next.Seq-next.Pruned != prev || next.Seq != upTo || next.Hash != ends[upTo] {
				return chain.Event{}, errPruneRaced
			}
			data, err := recordData(next)
			if err != nil {
				return chain.Event{}, err
			}
			return l.link(last, chain.Event{Kind: KindPruned, Actor: pruneActor, Data: data}, nil), nil
		})
		if errors.Is(err, errPruneRaced) || err == nil && got == nil {
			res.Raced = true
			return nil
		}
		if err != nil {
			return err
		}
		res.Pruned += got.Pruned
		res.Batches++
		res.Checkpoint = got
		res.Kept = got.Record - got.Seq
		from = got.Seq
	}
	return nil
}

// pruneTarget is the Seq of the last event r does not keep, as of last,
// the chain's last event (0 or less: none).
func (l *Log) pruneTarget(ctx context.Context, r Retention, last *chain.Event) (int64, error) {
	var target int64
	if r.MaxEvents > 0 {
		target = last.Seq - r.MaxEvents
	}
	if r.MaxAge > 0 {
		// Times never go back along the chain (link), so the events older
		// than the cutoff are those before the first one at or after it.
		young, err := l.store.ListAudit(ctx, chain.Filter{Since: l.now().Add(-r.MaxAge), Limit: 1})
		if err != nil {
			return 0, fmt.Errorf("prune the audit chain: find the oldest event to keep: %w", err)
		}
		old := last.Seq
		if len(young) > 0 {
			old = young[0].Seq - 1
		}
		target = max(target, old)
	}
	return min(target, last.Seq), nil
}

// checkCheckpoint checks, before a prune, that cp matches its record (the
// "pruned" event cp.Record, with a valid hash) and that the event after
// the record links to it: a checkpoint written past Prune, to hide events
// removed from the start of the chain, is refused instead of replaced by a
// genuine one.
func (l *Log) checkCheckpoint(ctx context.Context, cp *chain.Checkpoint) error {
	evs, err := l.store.ListAudit(ctx, chain.Filter{AfterSeq: cp.Record - 1, Limit: 2})
	if err != nil {
		return fmt.Errorf("prune the audit chain: read the checkpoint's record, event %d: %w", cp.Record, err)
	}
	var b *Break
	switch {
	case len(evs) == 0 || evs[0].Seq != cp.Record:
		b = &Break{Seq: cp.Record, Problem: ProblemCheckpoint, Message: fmt.Sprintf("event %d, which records the checkpoint, is missing", cp.Record)}
	case Hash(evs[0]) != evs[0].Hash:
		b = &Break{Seq: cp.Record, Problem: ProblemAltered, Message: fmt.Sprintf("event %d, which records the checkpoint, was altered", cp.Record)}
	default:
		b = checkRecord(evs[0], cp)
	}
	if b == nil && len(evs) == 2 {
		b = checkLink(evs[1], evs[0].Seq, evs[0].Hash)
	}
	if b != nil {
		return fmt.Errorf("prune the audit chain: %s (at event %d): nothing was pruned; run caphub audit verify", b.Message, b.Seq)
	}
	return nil
}

// checkRange checks the events a prune up to target removes (from the one
// after cp), as Verify does, and returns the hashes of those it cuts at:
// every chain.MaxPruneBatch-th event from cp, and target.
func (l *Log) checkRange(ctx context.Context, cp *chain.Checkpoint, target int64) (map[int64]string, error) {
	start, prevHash := int64(0), GenesisHash
	if cp != nil {
		start, prevHash = cp.Seq, cp.Hash
	}
	ends := map[int64]string{}
	prevSeq := start
	for prevSeq < target {
		page, err := l.store.ListAudit(ctx, chain.Filter{AfterSeq: prevSeq, Limit: int(min(1000, target-prevSeq))})
		if err != nil {
			return nil, fmt.Errorf("prune the audit chain: read the events to prune after event %d: %w", prevSeq, err)
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("prune the audit chain: events %d to %d are missing: nothing was pruned; run caphub audit verify", prevSeq+1, target)
		}
		for _, e := range page {
			b := checkLink(e, prevSeq, prevHash)
			if b == nil && prevSeq == start {
				b = checkFirst(e, cp)
			}
			if b != nil {
				return nil, fmt.Errorf("prune the audit chain: %s: nothing was pruned; run caphub audit verify", b.Message)
			}
			prevSeq, prevHash = e.Seq, e.Hash
			if (e.Seq-start)%chain.MaxPruneBatch == 0 || e.Seq == target {
				ends[e.Seq] = e.Hash
			}
		}
	}
	return ends, nil
}

// checkRecord checks e, the event cp names as its record (whose hash was
// checked), against cp.
func checkRecord(e chain.Event, cp *chain.Checkpoint) *Break {
	if e.Kind != KindPruned {
		return &Break{Seq: e.Seq, Problem: ProblemCheckpoint,
			Message: fmt.Sprintf("the checkpoint (events 1 to %d pruned) names event %d as its record, but that is a %q event, not a %q one: the checkpoint was forged", cp.Seq, e.Seq, e.Kind, KindPruned)}
	}
	var d prunedData
	err := json.Unmarshal(e.Data, &d)
	t, terr := time.Parse(time.RFC3339Nano, d.Time)
	if err != nil || terr != nil || d.Seq != cp.Seq || d.Hash != cp.Hash || !t.Equal(cp.Time) || d.Pruned != cp.Pruned || !e.Time.Equal(cp.At) {
		return &Break{Seq: e.Seq, Problem: ProblemCheckpoint,
			Message: fmt.Sprintf("the checkpoint (events 1 to %d pruned, hash %s, at %s) does not match its record, event %d (%s): the checkpoint was altered or forged",
				cp.Seq, short(cp.Hash), cp.At.Format(time.RFC3339Nano), e.Seq, e.Data)}
	}
	return nil
}

// checkFirst checks the first event after the checkpoint cp (nil: none),
// which checkLink found in its place and linked to cp, against cp itself:
// the record must come after it.
func checkFirst(e chain.Event, cp *chain.Checkpoint) *Break {
	if cp != nil && cp.Record <= cp.Seq {
		return &Break{Seq: e.Seq, Problem: ProblemCheckpoint,
			Message: fmt.Sprintf("the checkpoint (events 1 to %d pruned) names event %d, a pruned one, as its record: the checkpoint was forged", cp.Seq, cp.Record)}
	}
	return nil
}

// startPruner runs Prune in the background: at once, every pruneInterval,
// and when the writer says that pruneTrigger events were appended.
func (l *Log) startPruner() {
	if l.pruneInterval <= 0 {
		l.pruneInterval = DefaultPruneInterval
	}
	l.pruneTrigger = chain.MaxPruneBatch
	if m := l.retention.MaxEvents; m > 0 {
		l.pruneTrigger = int(min(max(m/10, 1), chain.MaxPruneBatch))
	}
	l.pruneNow = make(chan struct{}, 1)
	l.prunerDone = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	l.stopPruner = cancel
	go func() {
		defer close(l.prunerDone)
		tick := time.NewTicker(l.pruneInterval)
		defer tick.Stop()
		for {
			l.pruneOnce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-l.pruneNow:
			}
		}
	}()
}

// pruneOnce is one background prune, logged.
func (l *Log) pruneOnce(ctx context.Context) {
	res, err := l.Prune(ctx, l.retention)
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		l.log.Error("audit chain not pruned", "keep", l.retention.String(), "err", err)
	case res.Pruned > 0:
		cp := res.Checkpoint
		l.log.Info("audit chain pruned", "pruned", res.Pruned, "batches", res.Batches, "checkpoint_seq", cp.Seq, "checkpoint_hash", cp.Hash,
			"checkpoint_time", cp.Time, "record_seq", cp.Record, "kept", res.Kept, "keep", l.retention.String())
	case res.Raced:
		l.log.Info("audit chain pruning left to another replica, which pruned meanwhile")
	}
}

// noteAppended counts n events the writer committed and wakes the pruner
// every pruneTrigger of them. Only the writer calls it.
func (l *Log) noteAppended(n int) {
	if l.pruneNow == nil {
		return
	}
	l.sincePrune += n
	if l.sincePrune >= l.pruneTrigger {
		l.sincePrune = 0
		select {
		case l.pruneNow <- struct{}{}:
		default:
		}
	}
}
