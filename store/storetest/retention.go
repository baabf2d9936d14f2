package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
)

// The retention cases of RunAudit: Prune, checkpoints and Verify from them.

// prune runs l.Prune and fails the test on an error.
func prune(t *testing.T, l *audit.Log, r audit.Retention) *audit.PruneResult {
	t.Helper()
	res, err := l.Prune(t.Context(), r)
	if err != nil {
		t.Fatalf("Prune(%s): %v", r, err)
	}
	return res
}

// state returns the store's AuditState.
func state(t *testing.T, s chain.Store) chain.State {
	t.Helper()
	st, err := s.AuditState(t.Context())
	if err != nil {
		t.Fatalf("AuditState: %v", err)
	}
	return st
}

// checkFrom checks that Verify finds the chain intact from the event after
// the checkpoint at seq cut (whose hash is hash) to head: head-cut events.
func checkFrom(t *testing.T, what string, l *audit.Log, cut int64, hash string, head int64) *audit.VerifyResult {
	t.Helper()
	res := verify(t, l)
	if !res.OK || res.Break != nil || res.FromSeq != cut+1 || res.FromHash != hash || res.Pruned != cut ||
		res.Checkpoint == nil || res.Checkpoint.Seq != cut || res.Count != head-cut || res.HeadSeq != head {
		t.Fatalf("%s: Verify = %s (%+v), want an intact chain of events %d to %d from the checkpoint %s", what, res, res, cut+1, head, hash)
	}
	verified := fmt.Sprintf("%d events", head-cut)
	if head-cut == 1 {
		verified = "1 event"
	}
	want := fmt.Sprintf("verified %s from event %d (checkpoint of ", verified, cut+1)
	if !strings.Contains(res.String(), want) || !strings.Contains(res.String(), fmt.Sprintf("%d events pruned) to event %d, head hash %s", cut, head, res.HeadHash)) {
		t.Errorf("%s: VerifyResult.String() = %q, want it to say %q…", what, res.String(), want)
	}
	return res
}

// testAuditPrune prunes to a number of events, checks the checkpoint, its
// record in the chain and Verify from it, then prunes again past the first
// record, and finally finds nothing to prune.
func testAuditPrune(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store, audit.WithClock(steppingClock()))
	events := appendEvents(t, l, 30)
	if st := state(t, tg.Store); st.Checkpoint != nil || st.Last == nil || st.Last.Seq != 30 || st.Last.Hash != events[29].Hash {
		t.Fatalf("AuditState before a prune = %+v, want no checkpoint and event 30 last", st)
	}

	checkPruneTo10(t, tg, l, events)
	checkFrom(t, "pruned to 10 events", l, 20, events[19].Hash, 31)

	// The chain goes on from there; a second prune removes the first
	// one's record and leaves a checkpoint of its own.
	more := appendEvents(t, l, 10)
	checkFrom(t, "10 more events", l, 20, events[19].Hash, 41)
	checkPruneTo5(t, l, more)
	checkPruneRefusals(t, l)
}

// checkPruneTo10 prunes a chain of 30 events to 10: 20 pruned, the
// checkpoint at event 20, recorded by event 31, which holds it.
func checkPruneTo10(t *testing.T, tg AuditTarget, l *audit.Log, events []chain.Event) {
	t.Helper()
	res := prune(t, l, audit.Retention{MaxEvents: 10})
	cp := res.Checkpoint
	if res.Pruned != 20 || res.Batches != 1 || res.Kept != 11 || cp == nil {
		t.Fatalf("Prune to 10 events = %+v, want 20 events pruned in 1 batch, 11 kept (10 and the record)", res)
	}
	want := chain.Checkpoint{Seq: 20, Hash: events[19].Hash, Time: events[19].Time, Pruned: 20, Record: 31}
	if cp.Seq != want.Seq || cp.Hash != want.Hash || !cp.Time.Equal(want.Time) || cp.Pruned != want.Pruned || cp.Record != want.Record {
		t.Fatalf("checkpoint = %+v, want %+v", *cp, want)
	}
	st := state(t, tg.Store)
	if st.Checkpoint == nil || *st.Checkpoint != *cp || st.Last == nil || st.Last.Seq != 31 {
		t.Fatalf("AuditState after the prune = checkpoint %+v, last %+v; want %+v and event 31", st.Checkpoint, st.Last, *cp)
	}
	rec := st.Last
	if rec.Kind != audit.KindPruned || rec.PrevHash != events[29].Hash || !rec.Time.Equal(cp.At) || rec.Hash != audit.Hash(*rec) {
		t.Errorf("the prune's record = %+v, want a %q event after event 30 at %v", *rec, audit.KindPruned, cp.At)
	}
	wantData := fmt.Sprintf(`{"hash":"%s","pruned":20,"seq":20,"time":"%s"}`, events[19].Hash, events[19].Time.Format(time.RFC3339Nano))
	if string(rec.Data) != wantData {
		t.Errorf("the prune's record holds %s, want %s", rec.Data, wantData)
	}
	if got := seqs(listAudit(t, tg.Store, chain.Filter{})); len(got) != 11 || got[0] != 21 || got[10] != 31 {
		t.Errorf("after the prune the chain holds events %v, want 21..31", got)
	}
}

// checkPruneTo5 prunes the chain of checkPruneTo10 and 10 more events
// (more) to 5, then finds nothing to prune.
func checkPruneTo5(t *testing.T, l *audit.Log, more []chain.Event) {
	t.Helper()
	res := prune(t, l, audit.Retention{MaxEvents: 5})
	if res.Pruned != 16 || res.Checkpoint.Seq != 36 || res.Checkpoint.Hash != more[4].Hash || res.Checkpoint.Record != 42 || res.Kept != 6 {
		t.Fatalf("second Prune to 5 events = %+v (checkpoint %+v), want events 21 to 36 pruned, recorded by event 42", res, res.Checkpoint)
	}
	checkFrom(t, "pruned twice", l, 36, more[4].Hash, 42)

	res = prune(t, l, audit.Retention{MaxEvents: 100, MaxAge: 24 * time.Hour})
	if res.Pruned != 0 || res.Batches != 0 || res.Kept != 6 || res.Checkpoint == nil || res.Checkpoint.Seq != 36 {
		t.Errorf("Prune with nothing to prune = %+v, want nothing pruned, the checkpoint at 36 and 6 events kept", res)
	}
	checkFrom(t, "nothing pruned", l, 36, more[4].Hash, 42)
}

// checkPruneRefusals checks that Prune refuses retentions that keep
// everything or nothing sensible, and Append refuses prune records.
func checkPruneRefusals(t *testing.T, l *audit.Log) {
	t.Helper()
	for _, r := range []audit.Retention{{}, {MaxEvents: -1}, {MaxAge: -time.Second}} {
		if _, err := l.Prune(t.Context(), r); err == nil {
			t.Errorf("Prune(%+v) succeeded, want it refused", r)
		}
	}
	if _, err := l.Append(t.Context(), chain.Event{Kind: audit.KindPruned}); err == nil || !strings.Contains(err.Error(), "pruned") {
		t.Errorf("Append of a %q event: %v, want it refused (only Prune records prunes)", audit.KindPruned, err)
	}
}

// testAuditPruneAge prunes the events older than a duration: the events
// before the first one at or after the cutoff, and every event once all
// are older.
func testAuditPruneAge(t *testing.T, tg AuditTarget) {
	var mu sync.Mutex
	now := auditEpoch
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	l := audit.New(tg.Store, audit.WithClock(clock))
	var events []chain.Event
	for i := range 12 { // event i+1 at auditEpoch + i minutes
		set(auditEpoch.Add(time.Duration(i) * time.Minute))
		events = append(events, appendEvents(t, l, 1)...)
	}
	// At epoch+20m, keeping 10 minutes keeps events from epoch+10m: 11, 12.
	set(auditEpoch.Add(20 * time.Minute))
	res := prune(t, l, audit.Retention{MaxAge: 10 * time.Minute})
	if res.Pruned != 10 || res.Checkpoint.Seq != 10 || !res.Checkpoint.Time.Equal(events[9].Time) || !res.Checkpoint.At.Equal(now) {
		t.Fatalf("Prune of events older than 10m = %+v (checkpoint %+v), want events 1 to 10 pruned at %v", res, res.Checkpoint, now)
	}
	checkFrom(t, "pruned by age", l, 10, events[9].Hash, 13)

	// An hour later every event is older: all go, the record of this
	// prune stays and links to the last of them.
	set(auditEpoch.Add(81 * time.Minute))
	res = prune(t, l, audit.Retention{MaxAge: time.Hour, MaxEvents: 1000})
	if res.Pruned != 3 || res.Checkpoint.Seq != 13 || res.Kept != 1 {
		t.Fatalf("Prune of a chain older than the limit = %+v (checkpoint %+v), want events 11 to 13 pruned and only the record kept", res, res.Checkpoint)
	}
	last := state(t, tg.Store).Last
	checkFrom(t, "everything pruned", l, 13, last.PrevHash, 14)
}

// testAuditPruneBatches prunes more than chain.MaxPruneBatch events: in
// batches, each recorded, each at most MaxPruneBatch events; PruneAudit
// itself never removes more than a batch, whatever it is asked.
func testAuditPruneBatches(t *testing.T, tg AuditTarget) {
	const n = 2*chain.MaxPruneBatch + 500
	l := audit.New(tg.Store)
	for i := range n {
		l.Enqueue(audit.KindInvocation, "tester", "ossa:test/batch@1.0", map[string]int{"i": i})
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := prune(t, l, audit.Retention{MaxEvents: 100})
	if res.Pruned != n-100 || res.Batches != 3 || res.Checkpoint.Seq != n-100 || res.Kept != 103 {
		t.Fatalf("Prune of %d events to 100 = %+v (checkpoint %+v), want %d pruned in 3 batches, 103 kept (3 records)", n, res, res.Checkpoint, n-100)
	}
	records := listAudit(t, tg.Store, chain.Filter{Kind: audit.KindPruned})
	wantPruned := []int64{chain.MaxPruneBatch, chain.MaxPruneBatch, 400}
	if len(records) != 3 {
		t.Fatalf("the chain holds %d %q events, want 3: %v", len(records), audit.KindPruned, seqs(records))
	}
	for i, r := range records {
		var d struct{ Seq, Pruned int64 }
		if err := json.Unmarshal(r.Data, &d); err != nil || d.Pruned != wantPruned[i] {
			t.Errorf("record %d (event %d) = %s, want %d events pruned", i+1, r.Seq, r.Data, wantPruned[i])
		}
	}
	checkFrom(t, "pruned in batches", l, n-100, state(t, tg.Store).Checkpoint.Hash, n+3)

	// Asked for everything, the store removes one batch at most, never the
	// events appended after it read the chain, and records the cut.
	l.Enqueue(audit.KindInvocation, "tester", "", nil)
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	cp, err := tg.Store.PruneAudit(t.Context(), 1<<40, func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error) {
		if cp.Seq != last.Seq || cp.Pruned != 104 || cp.Hash != last.Hash {
			return chain.Event{}, fmt.Errorf("PruneAudit up to the end offered checkpoint %+v after last event %d, want it at the last event, 104 pruned", cp, last.Seq)
		}
		return chain.Event{Seq: last.Seq + 1, Time: last.Time, Kind: "test_cut", Data: json.RawMessage(`{}`), PrevHash: last.Hash, Hash: "h"}, nil
	})
	if err != nil || cp == nil || cp.Seq != n+4 || cp.Record != n+5 {
		t.Fatalf("PruneAudit up to the end = %+v, %v; want a checkpoint at event %d recorded by event %d", cp, err, n+4, n+5)
	}
	if got := seqs(listAudit(t, tg.Store, chain.Filter{})); len(got) != 1 || got[0] != n+5 {
		t.Errorf("after PruneAudit up to the end the chain holds %v, want only its record, event %d", got, n+5)
	}
	// PruneAudit before the checkpoint removes nothing and calls nothing.
	cp, err = tg.Store.PruneAudit(t.Context(), n, func(*chain.Event, chain.Checkpoint) (chain.Event, error) {
		t.Error("PruneAudit with nothing to remove called record")
		return chain.Event{}, nil
	})
	if err != nil || cp != nil {
		t.Errorf("PruneAudit before the checkpoint = %+v, %v; want nil, nil", cp, err)
	}
}

// prunedChain appends 30 events and prunes all but the newest 10: the
// checkpoint is at event 20, its record is event 31.
func prunedChain(t *testing.T, tg AuditTarget) (*audit.Log, []chain.Event) {
	t.Helper()
	l := audit.New(tg.Store)
	events := appendEvents(t, l, 30)
	if res := prune(t, l, audit.Retention{MaxEvents: 10}); res.Checkpoint == nil || res.Checkpoint.Seq != 20 || res.Checkpoint.Record != 31 {
		t.Fatalf("Prune to 10 events = %+v, want a checkpoint at event 20 recorded by event 31", res)
	}
	return l, events
}

// testAuditPruneTamperAltered alters events kept after a prune, the
// record of the prune included: Verify names them, counting from the
// checkpoint.
func testAuditPruneTamperAltered(t *testing.T, tg AuditTarget) {
	l, _ := prunedChain(t, tg)
	tamper(t, tg, `UPDATE audit_events SET actor = 'mallory' WHERE seq = 25`)
	checkBreak(t, "event 25 altered after a prune", l, 25, audit.ProblemAltered, "event 25 was altered")
	if res := verify(t, l); res.Count != 4 || res.FromSeq != 21 || !strings.Contains(res.String(), "the 4 events before it are intact (verified from event 21") {
		t.Errorf("Verify = %s (%+v), want events 21 to 24 intact, verified from event 21", res, res)
	}
	// Prune refuses to remove the evidence.
	if _, err := l.Prune(t.Context(), audit.Retention{MaxEvents: 2}); err == nil || !strings.Contains(err.Error(), "event 25 was altered") {
		t.Errorf("Prune of a chain altered at event 25: %v, want it refused, naming event 25", err)
	}
	if cp := state(t, tg.Store).Checkpoint; cp.Seq != 20 {
		t.Errorf("a refused Prune moved the checkpoint to %+v", cp)
	}
	tamper(t, tg, `UPDATE audit_events SET actor = 'tester' WHERE seq = 25`)
	checkFrom(t, "event 25 restored", l, 20, state(t, tg.Store).Checkpoint.Hash, 31)
	tamper(t, tg, `UPDATE audit_events SET data = '{"hash":"x","pruned":20,"seq":20,"time":"y"}' WHERE seq = 31`)
	checkBreak(t, "the record of the prune altered", l, 31, audit.ProblemAltered, "event 31 was altered")
	if _, err := l.Prune(t.Context(), audit.Retention{MaxEvents: 2}); err == nil || !strings.Contains(err.Error(), "event 31, which records the checkpoint, was altered") {
		t.Errorf("Prune of a chain whose checkpoint's record was altered: %v, want it refused", err)
	}
}

// testAuditPruneTamperStart deletes the first events kept after a prune,
// and then the checkpoint too: Verify reports the missing events either
// way.
func testAuditPruneTamperStart(t *testing.T, tg AuditTarget) {
	l, _ := prunedChain(t, tg)
	tamper(t, tg, `DELETE FROM audit_events WHERE seq <= 22`)
	checkBreak(t, "events 21 and 22 deleted after a prune", l, 21, audit.ProblemMissing,
		"events 21 to 22 are missing: the checkpoint says events 1 to 20 were pruned, but the chain starts at event 23")
	if _, err := l.Prune(t.Context(), audit.Retention{MaxEvents: 2}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Prune of a chain missing events 21 and 22: %v, want it refused", err)
	}
	tamper(t, tg, `DELETE FROM audit_checkpoint`)
	checkBreak(t, "checkpoint deleted too", l, 1, audit.ProblemMissing, "events 1 to 22 are missing (the chain starts at event 23)")
	tamper(t, tg, `DELETE FROM audit_events WHERE seq > 29`)
	checkBreak(t, "record deleted too", l, 1, audit.ProblemMissing, "events 1 to 22 are missing (the chain starts at event 23)")
}

// testAuditPruneForgedCheckpoint deletes the first events kept and moves
// the checkpoint over them, as someone who knows the format would: the
// events link to it, but its record in the chain says otherwise. A
// checkpoint whose record is gone, or is another event, is a break too.
func testAuditPruneForgedCheckpoint(t *testing.T, tg AuditTarget) {
	l, events := prunedChain(t, tg)
	tamper(t, tg, `DELETE FROM audit_events WHERE seq <= 22`)
	tamper(t, tg, fmt.Sprintf(`UPDATE audit_checkpoint SET seq = 22, hash = '%s', time = '%s', pruned = 22`,
		events[21].Hash, events[21].Time.Format("2006-01-02T15:04:05.000000Z")))
	checkBreak(t, "checkpoint forged over events 21 and 22", l, 31, audit.ProblemCheckpoint,
		"the checkpoint (events 1 to 22 pruned, hash "+events[21].Hash[:16]+"…")
	if res := verify(t, l); res.FromSeq != 23 || res.Count != 8 {
		t.Errorf("Verify = %+v, want events 23 to 30 intact from the forged checkpoint, then the break", res)
	}
	if _, err := l.Prune(t.Context(), audit.Retention{MaxEvents: 2}); err == nil || !strings.Contains(err.Error(), "does not match its record") {
		t.Errorf("Prune from a forged checkpoint: %v, want it refused", err)
	}
	tamper(t, tg, `UPDATE audit_checkpoint SET record = 1000`)
	checkBreak(t, "checkpoint naming a record past the head", l, 1000, audit.ProblemCheckpoint,
		"names event 1000 as its record, but the chain ends at event 31")
	tamper(t, tg, `UPDATE audit_checkpoint SET record = 24`)
	checkBreak(t, "checkpoint naming another event as its record", l, 24, audit.ProblemCheckpoint, `but that is a "invocation" event`)
}

// testAuditPruneConcurrent prunes, on one store and on a replica when
// there is one, while 8 goroutines append: every append succeeds, no event
// is lost or doubled (the head is the 400 appends plus one record per
// prune batch, the checkpoint the sum of the events pruned), Verify run
// meanwhile never reports a break (a prune that commits while it reads is
// not one), and the chain verifies from the final checkpoint.
func testAuditPruneConcurrent(t *testing.T, tg AuditTarget) {
	logs := []*audit.Log{audit.New(tg.Store)}
	if tg.Replica != nil {
		logs = append(logs, audit.New(tg.Replica(t)))
	}
	keep := audit.Retention{MaxEvents: 20}
	var (
		mu                     sync.Mutex
		pruned, batches, raced int64
		prunes                 int
	)
	count := func(res *audit.PruneResult) {
		mu.Lock()
		defer mu.Unlock()
		pruned += res.Pruned
		batches += int64(res.Batches)
		prunes++
		if res.Raced {
			raced++
		}
	}
	done := make(chan struct{})
	errs := make(chan error, len(logs)+1)
	var wg sync.WaitGroup
	for _, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := l.Prune(context.Background(), keep)
				if err != nil {
					errs <- fmt.Errorf("prune during appends: %w", err)
					return
				}
				count(res)
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			res, err := logs[0].Verify(context.Background())
			switch {
			case err != nil:
				errs <- fmt.Errorf("verify during prunes: %w", err)
				return
			case !res.OK:
				errs <- fmt.Errorf("verify during prunes: %s", res)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	stopPruners := sync.OnceFunc(func() { close(done); wg.Wait(); close(errs) })
	defer stopPruners()
	appendConcurrently(t, logs, 8, 50)
	stopPruners()
	for err := range errs {
		t.Fatal(err)
	}
	count(prune(t, logs[0], keep))
	st := state(t, tg.Store)
	if st.Checkpoint == nil || st.Checkpoint.Seq != pruned || st.Last.Seq != 400+batches {
		t.Fatalf("after %d prunes of %d events in %d batches: checkpoint %+v, last event %d; want the checkpoint at event %d and the last event %d (400 appends and %d records)",
			prunes, pruned, batches, st.Checkpoint, st.Last.Seq, pruned, 400+batches, batches)
	}
	v := checkFrom(t, "pruned during concurrent appends", logs[0], st.Checkpoint.Seq, st.Checkpoint.Hash, st.Last.Seq)
	if appended := v.Count - int64(len(listAudit(t, tg.Store, chain.Filter{Kind: audit.KindPruned}))); appended > keep.MaxEvents {
		t.Errorf("after the last prune %d appended events are kept, want at most %d", appended, keep.MaxEvents)
	}
	t.Logf("400 appends by 8 goroutines on %d stores while %d of them pruned: %d prunes (%d stopped for another's), %d events pruned in %d batches; the chain holds events %d to %d",
		len(logs), len(logs), prunes, raced, pruned, batches, v.FromSeq, v.HeadSeq)
}
