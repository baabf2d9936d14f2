package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
)

// AuditTarget is a store under test for RunAudit.
type AuditTarget struct {
	// Store is a new store with an empty audit chain.
	Store chain.Store
	// Exec runs one SQL statement on the store's database directly, past
	// the store, as someone tampering with the chain would. The suite
	// writes statements both SQLite and PostgreSQL accept.
	Exec func(ctx context.Context, query string) error
	// Replica opens another store on the same database, as another replica
	// (or process) would, closed when the test ends; nil when the database
	// cannot be shared (SQLite :memory:).
	Replica func(t *testing.T) chain.Store
}

// RunAudit runs the behaviour suite of chain.Store, with package
// audit's Log on top: appends, filters, paging, the tamper tests (rows
// altered, removed and reordered with SQL, each reported by Verify as the
// first broken link) and concurrent appenders, in one process and across
// replicas; and the retention: Prune by count and by age, in batches, the
// checkpoint and its record, Verify from them, the tampering a prune could
// hide (events deleted at the start, a forged checkpoint) and prunes racing
// appenders and each other. open must return a new target and arrange for its store to be
// closed when the test ends (t.Cleanup).
func RunAudit(t *testing.T, open func(t *testing.T) AuditTarget) {
	tests := []struct {
		name string
		fn   func(t *testing.T, tg AuditTarget)
	}{
		{"AuditEmpty", testAuditEmpty},
		{"AuditAppend", testAuditAppend},
		{"AuditAppendBatch", testAuditAppendBatch},
		{"AuditDataExact", testAuditDataExact},
		{"AuditAppendContract", testAuditAppendContract},
		{"AuditAppendAfterOthers", testAuditAppendAfterOthers},
		{"AuditListFilters", testAuditListFilters},
		{"AuditScanPages", testAuditScanPages},
		{"AuditVerifyIntact", testAuditVerifyIntact},
		{"AuditTamperAltered", testAuditTamperAltered},
		{"AuditTamperDeleted", testAuditTamperDeleted},
		{"AuditTamperReordered", testAuditTamperReordered},
		{"AuditTamperRewritten", testAuditTamperRewritten},
		{"AuditTamperTruncated", testAuditTamperTruncated},
		{"AuditConcurrent", testAuditConcurrent},
		{"AuditReplicas", testAuditReplicas},
		{"AuditPrune", testAuditPrune},
		{"AuditPruneAge", testAuditPruneAge},
		{"AuditPruneBatches", testAuditPruneBatches},
		{"AuditPruneTamperAltered", testAuditPruneTamperAltered},
		{"AuditPruneTamperStart", testAuditPruneTamperStart},
		{"AuditPruneForgedCheckpoint", testAuditPruneForgedCheckpoint},
		{"AuditPruneConcurrent", testAuditPruneConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

// auditEpoch is the clock of the suite's logs: event i is stamped
// auditEpoch + i minutes (plus a fraction, to check that microseconds
// survive).
var auditEpoch = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)

// steppingClock returns a clock that advances a minute at every call.
func steppingClock() func() time.Time {
	var mu sync.Mutex
	next := auditEpoch
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := next
		next = next.Add(time.Minute)
		return t
	}
}

// appendEvents appends n events to l: kinds alternate registered and
// invocation, data {"i":i}.
func appendEvents(t *testing.T, l *audit.Log, n int) []chain.Event {
	t.Helper()
	out := make([]chain.Event, n)
	for i := range n {
		kind := audit.KindRegistered
		if i%2 == 1 {
			kind = audit.KindInvocation
		}
		e, err := l.Append(t.Context(), chain.Event{Kind: kind, Actor: "tester", Capability: fmt.Sprintf("ossa:test/cap_%d@1.0", i%3),
			Data: json.RawMessage(fmt.Sprintf(`{"i": %d, "note": "event %d"}`, i+1, i+1))})
		if err != nil {
			t.Fatalf("Append event %d: %v", i+1, err)
		}
		out[i] = e
	}
	return out
}

func verify(t *testing.T, l *audit.Log) *audit.VerifyResult {
	t.Helper()
	res, err := l.Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return res
}

// checkIntact checks that Verify finds an intact chain of n events.
func checkIntact(t *testing.T, what string, l *audit.Log, n int64) *audit.VerifyResult {
	t.Helper()
	res := verify(t, l)
	if !res.OK || res.Break != nil || res.Count != n || res.HeadSeq != n {
		t.Fatalf("%s: Verify = %s (%+v), want an intact chain of %d events", what, res, res, n)
	}
	return res
}

// checkBreak checks that Verify reports the first broken link at seq, with
// the problem and a message containing want.
func checkBreak(t *testing.T, what string, l *audit.Log, seq int64, problem, want string) {
	t.Helper()
	res := verify(t, l)
	if res.OK || res.Break == nil {
		t.Fatalf("%s: Verify = %s, want a break at event %d", what, res, seq)
	}
	if res.Break.Seq != seq || res.Break.Problem != problem || !strings.Contains(res.Break.Message, want) {
		t.Errorf("%s: Verify break = %+v, want event %d, problem %q, message containing %q", what, *res.Break, seq, problem, want)
	}
	if !strings.Contains(res.String(), fmt.Sprintf("broken at event %d", seq)) {
		t.Errorf("%s: VerifyResult.String() = %q, want it to name event %d", what, res.String(), seq)
	}
}

func tamper(t *testing.T, tg AuditTarget, query string) {
	t.Helper()
	if err := tg.Exec(t.Context(), query); err != nil {
		t.Fatalf("tamper with SQL %q: %v", query, err)
	}
}

func listAudit(t *testing.T, s chain.Store, f chain.Filter) []chain.Event {
	t.Helper()
	got, err := s.ListAudit(t.Context(), f)
	if err != nil {
		t.Fatalf("ListAudit(%+v): %v", f, err)
	}
	return got
}

func seqs(events []chain.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	out := []int64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func testAuditEmpty(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	res := checkIntact(t, "empty chain", l, 0)
	if res.HeadHash != "" {
		t.Errorf("empty chain: HeadHash = %q, want \"\"", res.HeadHash)
	}
	got := listAudit(t, tg.Store, chain.Filter{})
	if got == nil || len(got) != 0 {
		t.Errorf("ListAudit on an empty chain = %#v, want an empty, non-nil slice", got)
	}
}

// testAuditAppend checks that appended events are listed in order, chained,
// hashed, timed in UTC and with their data, as Append returned them.
func testAuditAppend(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store, audit.WithClock(steppingClock()))
	appended := appendEvents(t, l, 5)
	got := listAudit(t, tg.Store, chain.Filter{})
	if len(got) != 5 {
		t.Fatalf("ListAudit returned %d events, want 5", len(got))
	}
	prev := audit.GenesisHash
	for i, e := range got {
		checkAppended(t, i, e, appended[i], prev)
		prev = e.Hash
	}
}

// testAuditAppendBatch appends batches of 1, 3 and 300 events (a store may
// split a batch into statements of several events: 300 is 256+32+8+4) and
// checks that every event is stored as AppendAuditBatch returned it, in
// order and chained, and that a batch whose next fails part-way writes
// nothing.
func testAuditAppendBatch(t *testing.T, tg AuditTarget) {
	ctx := t.Context()
	var want []chain.Event
	link := func(last *chain.Event, i int) (chain.Event, error) {
		e := chain.Event{Seq: 1, Time: auditEpoch.Add(time.Duration(len(want)+i) * time.Second), Kind: audit.KindInvocation,
			Actor: fmt.Sprintf("agent-%d", i), Capability: "ossa:test/batch@1.0", Data: []byte(fmt.Sprintf(`{"i":%d,"s":"\u00e9 é"}`, i)),
			PrevHash: audit.GenesisHash}
		if last != nil {
			e.Seq, e.PrevHash = last.Seq+1, last.Hash
		}
		e.Hash = audit.Hash(e)
		return e, nil
	}
	for _, n := range []int{1, 3, 300} {
		evs, err := tg.Store.AppendAuditBatch(ctx, n, link)
		if err != nil || len(evs) != n {
			t.Fatalf("AppendAuditBatch(%d) = %d events, %v", n, len(evs), err)
		}
		want = append(want, evs...)
	}
	_, err := tg.Store.AppendAuditBatch(ctx, 200, func(last *chain.Event, i int) (chain.Event, error) {
		if i == 150 {
			return chain.Event{}, errors.New("no event 150")
		}
		return link(last, i)
	})
	if err == nil || !strings.Contains(err.Error(), "no event 150") {
		t.Fatalf("AppendAuditBatch whose next fails at event 150: %v, want its error", err)
	}
	got := listAudit(t, tg.Store, chain.Filter{})
	if len(got) != len(want) {
		t.Fatalf("ListAudit returned %d events, want %d (a failed batch wrote some?)", len(got), len(want))
	}
	prev := audit.GenesisHash
	for i, e := range got {
		w := want[i]
		if e.Seq != int64(i+1) || !e.Time.Equal(w.Time) || e.Kind != w.Kind || e.Actor != w.Actor || e.Capability != w.Capability ||
			!bytes.Equal(e.Data, w.Data) || e.PrevHash != prev || e.Hash != w.Hash || e.Hash != audit.Hash(e) {
			t.Fatalf("event %d is stored as %+v, want %+v chained onto %s", i+1, e, w, prev)
		}
		prev = e.Hash
	}
	checkIntact(t, "batches", audit.New(tg.Store), int64(len(want)))
}

// checkAppended checks e, the i-th event (from 0) ListAudit gave after
// appendEvents, against want, the event Append returned, and prev, the hash
// of the event before it.
func checkAppended(t *testing.T, i int, e, want chain.Event, prev string) {
	t.Helper()
	if e.Seq != int64(i+1) {
		t.Errorf("event %d has seq %d", i+1, e.Seq)
	}
	if e.PrevHash != prev {
		t.Errorf("event %d: PrevHash %s, want the previous hash %s", e.Seq, e.PrevHash, prev)
	}
	if e.Hash != audit.Hash(e) {
		t.Errorf("event %d: stored hash %s does not match its content (%s)", e.Seq, e.Hash, audit.Hash(e))
	}
	if e.Time.Location() != time.UTC || !e.Time.Equal(auditEpoch.Add(time.Duration(i)*time.Minute)) {
		t.Errorf("event %d: time %v, want %v in UTC (microseconds kept)", e.Seq, e.Time, auditEpoch.Add(time.Duration(i)*time.Minute))
	}
	if wantData := fmt.Sprintf(`{"i":%d,"note":"event %d"}`, i+1, i+1); string(e.Data) != wantData {
		t.Errorf("event %d: data %s, want the canonical %s", e.Seq, e.Data, wantData)
	}
	if e.Kind != want.Kind || e.Actor != "tester" || e.Capability != want.Capability || e.Hash != want.Hash || !e.Time.Equal(want.Time) || !bytes.Equal(e.Data, want.Data) {
		t.Errorf("event %d as listed %+v differs from the one Append returned %+v", e.Seq, e, want)
	}
}

// testAuditDataExact checks that a store keeps data byte for byte, even
// when it is not canonical: whitespace, key order, escapes and numbers
// beyond float64 as written (the hash covers the stored bytes).
func testAuditDataExact(t *testing.T, tg AuditTarget) {
	values := []string{
		`{}`,
		` { "b" : 1 ,"a":[ 1,2 ] } `,
		`{"s":"\u0000 \ud83d\ude00 \u00e9 é \/ \"\\","n":12345678901234567890123456789,"m":-0,"x":1E400}`,
		`{"unicode":"ünï cödé ✓ 😀 ` + "\u2028\u007f" + `"}`,
		`{"blob":"` + strings.Repeat("0123456789abcdef", 1<<12) + `"}`,
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	for i, v := range values {
		_, err := tg.Store.AppendAudit(t.Context(), func(last *chain.Event) (chain.Event, error) {
			e := chain.Event{Seq: 1, Time: at, Kind: "test", Data: json.RawMessage(v), PrevHash: audit.GenesisHash, Hash: "h"}
			if last != nil {
				e.Seq, e.PrevHash = last.Seq+1, last.Hash
			}
			return e, nil
		})
		if err != nil {
			t.Fatalf("AppendAudit with data %d: %v", i, err)
		}
	}
	got := listAudit(t, tg.Store, chain.Filter{})
	if len(got) != len(values) {
		t.Fatalf("ListAudit returned %d events, want %d", len(got), len(values))
	}
	for i, e := range got {
		if string(e.Data) != values[i] {
			t.Errorf("data %d came back as %.80q, want %.80q byte for byte", i, e.Data, values[i])
		}
		if !e.Time.Equal(at) || e.Time.Location() != time.UTC {
			t.Errorf("event %d: time %v, want %v", e.Seq, e.Time, at)
		}
	}
}

// testAuditAppendContract checks AppendAudit's contract: next sees the
// last event (nil at first), a wrong seq or an error from next writes
// nothing, and events the other store could not keep are refused.
func testAuditAppendContract(t *testing.T, tg AuditTarget) {
	testAuditAppendSeesLast(t, tg)
	testAuditAppendRefused(t, tg)
	if got := seqs(listAudit(t, tg.Store, chain.Filter{})); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("after refused appends the chain holds events %v, want [1 2]", got)
	}
}

// contractTime is the time of testAuditAppendContract's events.
var contractTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// contractEvent returns a valid event to follow last (nil: the first).
func contractEvent(last *chain.Event) chain.Event {
	e := chain.Event{Seq: 1, Time: contractTime, Kind: "test", Actor: "a", Capability: "ossa:t/c@1.0", Data: json.RawMessage(`{}`), PrevHash: audit.GenesisHash, Hash: "h1"}
	if last != nil {
		e.Seq, e.PrevHash, e.Hash = last.Seq+1, last.Hash, fmt.Sprintf("h%d", last.Seq+1)
	}
	return e
}

// testAuditAppendSeesLast appends events 1 and 2, checking that next is
// given nil and then event 1 as stored.
func testAuditAppendSeesLast(t *testing.T, tg AuditTarget) {
	ctx := t.Context()
	var sawNil bool
	first, err := tg.Store.AppendAudit(ctx, func(last *chain.Event) (chain.Event, error) {
		sawNil = last == nil
		return contractEvent(last), nil
	})
	if err != nil || !sawNil || first.Seq != 1 || first.Hash != "h1" {
		t.Fatalf("first AppendAudit = %+v, %v (next saw nil: %v); want event 1, next called with nil", first, err, sawNil)
	}
	var seen *chain.Event
	second, err := tg.Store.AppendAudit(ctx, func(last *chain.Event) (chain.Event, error) {
		seen = last
		return contractEvent(last), nil
	})
	if err != nil || second.Seq != 2 || seen == nil || seen.Seq != 1 || seen.Hash != "h1" || string(seen.Data) != "{}" || seen.Capability != "ossa:t/c@1.0" {
		t.Fatalf("second AppendAudit = %+v, %v; next saw %+v, want event 1 as stored", second, err, seen)
	}
}

// testAuditAppendAfterOthers checks that an append chains onto the
// chain's last event as stored when it ends, even when someone else
// changed the chain since this store's previous append (a store may keep
// its last event, but must check it under the chain's lock): events
// appended by a replica, the last event deleted, its hash rewritten. next
// may be called with a stale last event first, but its last call must see
// the real one, and the event appended must follow it.
func testAuditAppendAfterOthers(t *testing.T, tg AuditTarget) {
	ctx := t.Context()
	appendOn := func(s chain.Store, wantSeq int64, wantPrev string) {
		t.Helper()
		var seen *chain.Event
		e, err := s.AppendAudit(ctx, func(last *chain.Event) (chain.Event, error) {
			seen = last
			return contractEvent(last), nil
		})
		if err != nil || e.Seq != wantSeq || e.PrevHash != wantPrev {
			t.Fatalf("AppendAudit = %+v, %v; want event %d after hash %s", e, err, wantSeq, wantPrev)
		}
		if wantSeq > 1 && (seen == nil || seen.Seq != wantSeq-1 || seen.Hash != wantPrev) {
			t.Fatalf("AppendAudit of event %d: next was last called with %+v, want event %d with hash %s", wantSeq, seen, wantSeq-1, wantPrev)
		}
	}
	appendOn(tg.Store, 1, audit.GenesisHash)
	appendOn(tg.Store, 2, "h1")
	next := int64(3)
	if tg.Replica != nil {
		other := tg.Replica(t)
		appendOn(other, 3, "h2")
		appendOn(other, 4, "h3")
		appendOn(tg.Store, 5, "h4")
		next = 6
	}
	if err := tg.Exec(ctx, fmt.Sprintf("DELETE FROM audit_events WHERE seq = %d", next-1)); err != nil {
		t.Fatal(err)
	}
	appendOn(tg.Store, next-1, fmt.Sprintf("h%d", next-2))
	if err := tg.Exec(ctx, fmt.Sprintf("UPDATE audit_events SET hash = 'rewritten' WHERE seq = %d", next-1)); err != nil {
		t.Fatal(err)
	}
	appendOn(tg.Store, next, "rewritten")
	if got := seqs(listAudit(t, tg.Store, chain.Filter{})); !slices.Equal(got, seqRange(1, next)) {
		t.Errorf("the chain holds events %v, want 1..%d", got, next)
	}
}

// testAuditAppendRefused checks that AppendAudit refuses, saying why, an
// error from next, a wrong seq and events with fields the other store could
// not keep.
func testAuditAppendRefused(t *testing.T, tg AuditTarget) {
	boom := errors.New("boom")
	refused := []struct {
		name   string
		modify func(e *chain.Event) error
		want   string
	}{
		{"error from next", func(e *chain.Event) error { return boom }, "boom"},
		{"seq reused", func(e *chain.Event) error { e.Seq = 2; return nil }, "seq"},
		{"seq skipped", func(e *chain.Event) error { e.Seq = 4; return nil }, "seq"},
		{"zero time", func(e *chain.Event) error { e.Time = time.Time{}; return nil }, "time"},
		{"nanoseconds", func(e *chain.Event) error { e.Time = e.Time.Add(1); return nil }, "microsecond"},
		{"empty kind", func(e *chain.Event) error { e.Kind = ""; return nil }, "kind"},
		{"NUL in actor", func(e *chain.Event) error { e.Actor = "a\x00b"; return nil }, "actor"},
		{"invalid UTF-8 capability", func(e *chain.Event) error { e.Capability = "ossa:\xff"; return nil }, "capability"},
		{"invalid JSON data", func(e *chain.Event) error { e.Data = json.RawMessage(`{"a":`); return nil }, "JSON"},
		{"empty data", func(e *chain.Event) error { e.Data = nil; return nil }, "JSON"},
	}
	for _, tt := range refused {
		_, err := tg.Store.AppendAudit(t.Context(), func(last *chain.Event) (chain.Event, error) {
			e := contractEvent(last)
			return e, tt.modify(&e)
		})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("AppendAudit with %s: error %v, want one mentioning %q", tt.name, err, tt.want)
		}
		if tt.name == "error from next" && !errors.Is(err, boom) {
			t.Errorf("AppendAudit with an error from next: %v does not wrap it", err)
		}
	}
}

func testAuditListFilters(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store, audit.WithClock(steppingClock()))
	caps := []string{"ossa:a/x@1.0", "ossa:a/x@1.1", "ossa:a/x", "ossa:a/xy@1.0", "ossa:a/x-y@1.0", "ossa:b/y@1.0", "", "ossa:a/x@1.0.3", "ossa:b/y@2.0", "ossa:a/x@1.0"}
	for i, c := range caps {
		kind := audit.KindRegistered
		if i%2 == 1 {
			kind = audit.KindInvocation
		}
		actor := "alice"
		if i%3 == 2 {
			actor = "token:bob"
		}
		if _, err := l.Append(t.Context(), chain.Event{Kind: kind, Actor: actor, Capability: c, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	minute := func(i int) time.Time { return auditEpoch.Add(time.Duration(i) * time.Minute) } // event i+1's time
	tests := []struct {
		name string
		f    chain.Filter
		want []int64
	}{
		{"all", chain.Filter{}, seqRange(1, 10)},
		{"kind", chain.Filter{Kind: audit.KindInvocation}, []int64{2, 4, 6, 8, 10}},
		{"unknown kind", chain.Filter{Kind: "nothing"}, []int64{}},
		{"capability, any version", chain.Filter{Capability: "ossa:a/x"}, []int64{1, 2, 3, 8, 10}},
		{"capability, one version", chain.Filter{Capability: "ossa:a/x@1.0"}, []int64{1, 10}},
		{"capability, full version", chain.Filter{Capability: "ossa:a/x@1.0.3"}, []int64{8}},
		{"capability, other", chain.Filter{Capability: "ossa:b/y"}, []int64{6, 9}},
		{"capabilities, exactly", chain.Filter{Capabilities: []string{"ossa:a/x@1.0", "ossa:b/y@2.0", "ossa:a/x", "ossa:none@1.0"}}, []int64{1, 3, 9, 10}},
		{"capabilities and kind", chain.Filter{Capabilities: []string{"ossa:a/x@1.0", "ossa:b/y@2.0"}, Kind: audit.KindRegistered}, []int64{1, 9}},
		{"since", chain.Filter{Since: minute(5)}, seqRange(6, 10)},
		{"since, nanoseconds after", chain.Filter{Since: minute(5).Add(1)}, seqRange(7, 10)},
		{"since, other zone", chain.Filter{Since: minute(5).In(time.FixedZone("UTC+2", 7200))}, seqRange(6, 10)},
		{"since, before all", chain.Filter{Since: auditEpoch.Add(-time.Hour)}, seqRange(1, 10)},
		{"since, after all", chain.Filter{Since: minute(20)}, []int64{}},
		{"until", chain.Filter{Until: minute(3)}, seqRange(1, 3)},
		{"until, nanoseconds after", chain.Filter{Until: minute(3).Add(1)}, seqRange(1, 4)},
		{"since and until", chain.Filter{Since: minute(2), Until: minute(5)}, seqRange(3, 5)},
		{"until, before all", chain.Filter{Until: auditEpoch}, []int64{}},
		{"actor", chain.Filter{Actor: "token:bob"}, []int64{3, 6, 9}},
		{"actor, unknown", chain.Filter{Actor: "token:bo"}, []int64{}},
		{"actor and kind", chain.Filter{Actor: "token:bob", Kind: audit.KindInvocation}, []int64{6}},
		{"limit", chain.Filter{Limit: 3}, []int64{1, 2, 3}},
		{"after_seq", chain.Filter{AfterSeq: 7}, []int64{8, 9, 10}},
		{"after_seq past the end", chain.Filter{AfterSeq: 10}, []int64{}},
		{"page", chain.Filter{AfterSeq: 3, Limit: 4}, []int64{4, 5, 6, 7}},
		{"combined", chain.Filter{Kind: audit.KindRegistered, Capability: "ossa:a/x", Since: minute(1), Limit: 1}, []int64{3}},
		{"combined, next page", chain.Filter{Kind: audit.KindRegistered, Capability: "ossa:a/x", Since: minute(1), AfterSeq: 3}, []int64{}},
		{"combined, invocations", chain.Filter{Kind: audit.KindInvocation, Capability: "ossa:a/x", AfterSeq: 2}, []int64{8, 10}},
	}
	for _, tt := range tests {
		got := listAudit(t, tg.Store, tt.f)
		if got == nil || !slices.Equal(seqs(got), tt.want) {
			t.Errorf("%s: ListAudit(%+v) = events %v, want %v", tt.name, tt.f, seqs(got), tt.want)
		}
	}
	for _, f := range []chain.Filter{{Limit: -1}, {AfterSeq: -1}} {
		if _, err := tg.Store.ListAudit(t.Context(), f); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("ListAudit(%+v): error %v, want one saying it is negative", f, err)
		}
	}
}

// testAuditScanPages checks that ScanAudit and Verify cross page
// boundaries, and that ScanAudit stops at fn's error.
func testAuditScanPages(t *testing.T, tg AuditTarget) {
	const n = 1100
	l := audit.New(tg.Store)
	appendEvents(t, l, n)
	var got []int64
	if err := tg.Store.ScanAudit(t.Context(), func(e chain.Event) error {
		got = append(got, e.Seq)
		return nil
	}); err != nil {
		t.Fatalf("ScanAudit: %v", err)
	}
	if !slices.Equal(got, seqRange(1, n)) {
		t.Errorf("ScanAudit saw %d events, want 1..%d in order", len(got), n)
	}
	checkIntact(t, "1100 events", l, n)

	stop := errors.New("stop here")
	calls := 0
	err := tg.Store.ScanAudit(t.Context(), func(e chain.Event) error {
		calls++
		if e.Seq == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Errorf("ScanAudit with fn failing at event 3: %v after %d calls, want fn's error as it is after 3 calls", err, calls)
	}
}

func testAuditVerifyIntact(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	events := appendEvents(t, l, 20)
	res := checkIntact(t, "20 events", l, 20)
	if res.HeadHash != events[19].Hash {
		t.Errorf("HeadHash = %s, want the last event's hash %s", res.HeadHash, events[19].Hash)
	}
	if !strings.Contains(res.String(), "intact: 20 events") {
		t.Errorf("VerifyResult.String() = %q", res.String())
	}
	// Appending after a verification extends the same chain.
	appendEvents(t, l, 1)
	checkIntact(t, "21 events", l, 21)
}

// testAuditTamperAltered changes one column of one row with SQL, each time
// in an earlier row than before: Verify names that row, the first broken
// link, as altered, and every event before it as intact.
func testAuditTamperAltered(t *testing.T, tg AuditTarget) {
	tampers := []struct{ column, value string }{
		{"hash", `'` + strings.Repeat("ab", 32) + `'`},
		{"time", `'2001-02-03T04:05:06.000000Z'`},
		{"capability", `'ossa:test/other@1.0'`},
		{"kind", `'approval'`},
		{"actor", `'mallory'`},
		{"data", `'{"i": 5, "note": "event 5"}'`}, // the same JSON, not the stored bytes
		{"data", `'{"i":999,"note":"event 4"}'`},
	}
	l := audit.New(tg.Store)
	appendEvents(t, l, 10)
	checkIntact(t, "before tampering", l, 10)
	for i, tm := range tampers {
		seq := int64(10 - i)
		tamper(t, tg, fmt.Sprintf(`UPDATE audit_events SET %s = %s WHERE seq = %d`, tm.column, tm.value, seq))
		what := fmt.Sprintf("event %d's %s altered", seq, tm.column)
		checkBreak(t, what, l, seq, audit.ProblemAltered, fmt.Sprintf("event %d was altered: its hash does not match its content", seq))
		if res := verify(t, l); res.Count != seq-1 || res.HeadSeq != seq-1 {
			t.Errorf("%s: Verify = %+v, want %d intact events before the break", what, res, seq-1)
		}
	}
}

// testAuditTamperDeleted removes rows with SQL: Verify names the first
// missing event.
func testAuditTamperDeleted(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	appendEvents(t, l, 10)
	tamper(t, tg, `DELETE FROM audit_events WHERE seq = 9`)
	tamper(t, tg, `DELETE FROM audit_events WHERE seq = 5`)
	checkBreak(t, "event 5 deleted", l, 5, audit.ProblemMissing, "event 5 is missing (the chain jumps from 4 to 6)")
	tamper(t, tg, `DELETE FROM audit_events WHERE seq = 6`)
	checkBreak(t, "events 5 and 6 deleted", l, 5, audit.ProblemMissing, "events 5 to 6 are missing (the chain jumps from 4 to 7)")
	tamper(t, tg, `DELETE FROM audit_events WHERE seq = 1`)
	checkBreak(t, "event 1 deleted", l, 1, audit.ProblemMissing, "event 1 is missing (the chain starts at event 2)")
}

// testAuditTamperReordered swaps two rows' seq values with SQL (through a
// free seq, since seq is unique): Verify names the first of them, which no
// longer links to the event before it.
func testAuditTamperReordered(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	appendEvents(t, l, 10)
	tamper(t, tg, `UPDATE audit_events SET seq = 1000000 WHERE seq = 4`)
	tamper(t, tg, `UPDATE audit_events SET seq = 4 WHERE seq = 5`)
	tamper(t, tg, `UPDATE audit_events SET seq = 5 WHERE seq = 1000000`)
	checkBreak(t, "events 4 and 5 swapped", l, 4, audit.ProblemRelinked, "event 4 does not link to event 3")
}

// testAuditTamperRewritten alters an event and recomputes its hash, as
// someone who knows the format would: the event itself checks out, but the
// next one no longer links to it.
func testAuditTamperRewritten(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	events := appendEvents(t, l, 10)
	forged := events[4]
	forged.Data = json.RawMessage(`{"i":5,"note":"forged"}`)
	forged.Hash = audit.Hash(forged)
	tamper(t, tg, `UPDATE audit_events SET data = '`+string(forged.Data)+`', hash = '`+forged.Hash+`' WHERE seq = 5`)
	checkBreak(t, "event 5 rewritten with a valid hash", l, 6, audit.ProblemRelinked, "event 6 does not link to event 5")

	// Re-linking the rest of the chain too makes it verify again: only a
	// head kept elsewhere shows the difference.
	prev := forged.Hash
	for _, e := range events[5:] {
		e.PrevHash = prev
		e.Hash = audit.Hash(e)
		tamper(t, tg, fmt.Sprintf(`UPDATE audit_events SET prev_hash = '%s', hash = '%s' WHERE seq = %d`, e.PrevHash, e.Hash, e.Seq))
		prev = e.Hash
	}
	res := checkIntact(t, "whole chain rewritten", l, 10)
	if res.HeadHash == events[9].Hash {
		t.Errorf("a rewritten chain kept its head hash %s", res.HeadHash)
	}
}

// testAuditTamperTruncated removes the newest events: the chain verifies,
// shorter, and its head says so.
func testAuditTamperTruncated(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	events := appendEvents(t, l, 10)
	tamper(t, tg, `DELETE FROM audit_events WHERE seq > 8`)
	res := checkIntact(t, "last two events deleted", l, 8)
	if res.HeadHash != events[7].Hash {
		t.Errorf("HeadHash = %s, want event 8's %s", res.HeadHash, events[7].Hash)
	}
}

// appendConcurrently runs workers goroutines, spread over logs, each
// appending per events, and fails the test on any error.
func appendConcurrently(t *testing.T, logs []*audit.Log, workers, per int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers*per)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			l := logs[w%len(logs)]
			for i := range per {
				_, err := l.Append(context.Background(), chain.Event{Kind: audit.KindInvocation, Actor: fmt.Sprintf("worker-%d", w),
					Capability: "ossa:race/append@1.0", Data: json.RawMessage(fmt.Sprintf(`{"worker":%d,"i":%d}`, w, i))})
				if err != nil {
					errs <- fmt.Errorf("worker %d, append %d: %w", w, i, err)
					return
				}
			}
		}(w)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// checkOneChain checks that the store holds exactly n events, 1..n, each
// linked to the one before, times never going back, and every worker's
// appends in its own order.
func checkOneChain(t *testing.T, s chain.Store, n int) {
	t.Helper()
	events := listAudit(t, s, chain.Filter{})
	if !slices.Equal(seqs(events), seqRange(1, int64(n))) {
		t.Fatalf("the chain holds %d events (%v…), want 1..%d", len(events), seqs(events)[:min(len(events), 10)], n)
	}
	last := map[string]int{}
	for i, e := range events {
		if i > 0 {
			if e.PrevHash != events[i-1].Hash {
				t.Fatalf("event %d does not link to event %d: the chain forked", e.Seq, events[i-1].Seq)
			}
			if e.Time.Before(events[i-1].Time) {
				t.Errorf("event %d's time %v is before event %d's %v", e.Seq, e.Time, events[i-1].Seq, events[i-1].Time)
			}
		}
		var d struct{ Worker, I int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d: data %s: %v", e.Seq, e.Data, err)
		}
		if prev, ok := last[e.Actor]; ok && d.I != prev+1 {
			t.Errorf("event %d: %s's append %d follows its append %d", e.Seq, e.Actor, d.I, prev)
		}
		last[e.Actor] = d.I
	}
}

// testAuditConcurrent: 8 goroutines × 50 appends on one store make one
// unbroken chain of 400 events.
func testAuditConcurrent(t *testing.T, tg AuditTarget) {
	l := audit.New(tg.Store)
	appendConcurrently(t, []*audit.Log{l}, 8, 50)
	checkOneChain(t, tg.Store, 400)
	checkIntact(t, "400 concurrent appends", l, 400)
}

// testAuditReplicas: two separately opened stores on one database (two
// replicas), each with 4 goroutines × 25 appends, make one unbroken chain
// of 200 events that both see.
func testAuditReplicas(t *testing.T, tg AuditTarget) {
	if tg.Replica == nil {
		t.Skip("this database cannot be opened twice")
	}
	other := tg.Replica(t)
	logs := []*audit.Log{audit.New(tg.Store), audit.New(other)}
	appendConcurrently(t, logs, 8, 25)
	checkOneChain(t, tg.Store, 200)
	for i, l := range logs {
		checkIntact(t, fmt.Sprintf("replica %d", i+1), l, 200)
	}
}
