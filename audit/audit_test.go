package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHashKnownAnswer pins the preimage format: the expected hash was
// computed outside Go (Python: json.dumps(sort_keys=True,
// separators=(',', ':'), ensure_ascii=False) and hashlib.sha256).
func TestHashKnownAnswer(t *testing.T) {
	data, err := audit.Canonicalize([]byte(`{"version": "1.0.3", "digest": "ab", "n": [1, 0.50, "\u00e9\n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := chain.Event{Seq: 1, Time: time.Date(2025, 1, 2, 4, 4, 5, 123400000, time.FixedZone("CET", 3600)), Kind: "registered", Actor: "alice",
		Capability: "ossa:security/scan@1.0", Data: data, PrevHash: audit.GenesisHash}
	wantPre := `{"actor":"alice","capability":"ossa:security/scan@1.0","data":{"digest":"ab","n":[1,0.5,"é\n"],"version":"1.0.3"},"kind":"registered","prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"time":"2025-01-02T03:04:05.1234Z"}`
	if got := string(audit.Preimage(e)); got != wantPre {
		t.Errorf("Preimage\n got %s\nwant %s", got, wantPre)
	}
	if got, want := audit.Hash(e), "1842a4e41b6e6907379eee11ccf104fa954b69453401f0ccc8d8686308f5563b"; got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
	// The preimage is itself canonical JSON.
	if c, err := audit.Canonicalize(audit.Preimage(e)); err != nil || string(c) != wantPre {
		t.Errorf("the preimage is not canonical: %s, %v", c, err)
	}
	// Every field is covered.
	for name, change := range map[string]func(*chain.Event){
		"seq":        func(e *chain.Event) { e.Seq = 2 },
		"time":       func(e *chain.Event) { e.Time = e.Time.Add(time.Microsecond) },
		"kind":       func(e *chain.Event) { e.Kind = "deprecated" },
		"actor":      func(e *chain.Event) { e.Actor = "bob" },
		"capability": func(e *chain.Event) { e.Capability = "ossa:security/scan@1.1" },
		"data":       func(e *chain.Event) { e.Data = json.RawMessage(`{}`) },
		"prev_hash":  func(e *chain.Event) { e.PrevHash = strings.Repeat("1", 64) },
	} {
		c := e
		change(&c)
		if audit.Hash(c) == audit.Hash(e) {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
}

func TestAppend(t *testing.T) {
	ctx := t.Context()
	clock := []time.Time{
		time.Date(2025, 1, 1, 0, 0, 0, 999, time.UTC),    // nanoseconds: truncated
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),      // earlier than the last event: clamped
		time.Date(2025, 6, 1, 0, 0, 0, 5000, time.Local), // another zone: UTC
	}
	i := 0
	l := audit.New(openStore(t), audit.WithClock(func() time.Time { i = min(i+1, len(clock)); return clock[i-1] }))
	e1, err := l.Append(ctx, chain.Event{Kind: "test", Actor: "a", Data: json.RawMessage(` {"b": 1, "a": "\u00e9"} `)})
	if err != nil {
		t.Fatal(err)
	}
	if e1.Seq != 1 || e1.PrevHash != audit.GenesisHash || e1.Hash != audit.Hash(e1) || string(e1.Data) != `{"a":"é","b":1}` ||
		!e1.Time.Equal(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("first event = %+v", e1)
	}
	e2, err := l.Record(ctx, "test", "b", "ossa:x/y@1.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e2.Seq != 2 || e2.PrevHash != e1.Hash || string(e2.Data) != "{}" || !e2.Time.Equal(e1.Time) {
		t.Errorf("second event = %+v; want seq 2 linked to the first, data {}, time not before the first's", e2)
	}
	e3, err := l.Record(ctx, "test", "", "", map[string]any{"z": []int{1}, "html": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	if string(e3.Data) != `{"html":"<&>","z":[1]}` || e3.Time.Location() != time.UTC {
		t.Errorf("third event = %+v", e3)
	}

	for _, tt := range []struct {
		name string
		e    chain.Event
		want string
	}{
		{"empty kind", chain.Event{}, "the kind is empty"},
		{"array data", chain.Event{Kind: "k", Data: json.RawMessage(`[1]`)}, "data is an array, not a JSON object"},
		{"null data", chain.Event{Kind: "k", Data: json.RawMessage(`null`)}, "data is null, not a JSON object"},
		{"invalid data", chain.Event{Kind: "k", Data: json.RawMessage(`{"a":1,"a":2}`)}, "duplicate member name"},
		{"NUL in actor", chain.Event{Kind: "k", Actor: "\x00"}, "NUL"},
	} {
		if _, err := l.Append(ctx, tt.e); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Append with %s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := l.Record(ctx, "k", "", "", func() {}); err == nil || !strings.Contains(err.Error(), "encode its data") {
		t.Errorf("Record with unencodable data: %v", err)
	}
	res, err := l.Verify(ctx)
	if err != nil || !res.OK || res.Count != 3 || res.HeadHash != e3.Hash {
		t.Errorf("Verify = %+v, %v; want 3 intact events", res, err)
	}
}

// sliceStore is an AuditStore over a slice, for chains the real stores
// refuse to hold (duplicate seqs).
type sliceStore struct {
	events []chain.Event
	err    error
}

func (s *sliceStore) AppendAudit(ctx context.Context, next func(last *chain.Event) (chain.Event, error)) (chain.Event, error) {
	var last *chain.Event
	if len(s.events) > 0 {
		last = &s.events[len(s.events)-1]
	}
	e, err := next(last)
	if err != nil {
		return chain.Event{}, err
	}
	s.events = append(s.events, e)
	return e, nil
}

func (s *sliceStore) AppendAuditBatch(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	var out []chain.Event
	for i := 0; i < n; i++ {
		e, err := s.AppendAudit(ctx, func(last *chain.Event) (chain.Event, error) { return next(last, i) })
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *sliceStore) ListAudit(ctx context.Context, f chain.Filter) ([]chain.Event, error) {
	return s.events, nil
}

func (s *sliceStore) AuditState(ctx context.Context) (chain.State, error) {
	if len(s.events) == 0 {
		return chain.State{}, nil
	}
	return chain.State{Last: &s.events[len(s.events)-1]}, nil
}

func (s *sliceStore) PruneAudit(ctx context.Context, upTo int64, record func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error)) (*chain.Checkpoint, error) {
	return nil, errors.New("a sliceStore does not prune")
}

func (s *sliceStore) ScanAudit(ctx context.Context, fn func(chain.Event) error) error {
	for _, e := range s.events {
		if err := fn(e); err != nil {
			return err
		}
	}
	return s.err
}

func TestVerifyBreaks(t *testing.T) {
	build := func() *sliceStore {
		s := &sliceStore{}
		l := audit.New(s, audit.WithClock(func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }))
		for range 6 {
			if _, err := l.Append(t.Context(), chain.Event{Kind: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	tests := []struct {
		name    string
		tamper  func(s *sliceStore)
		seq     int64
		problem string
		message string
	}{
		{"first missing", func(s *sliceStore) { s.events = s.events[1:] }, 1, audit.ProblemMissing, "event 1 is missing (the chain starts at event 2)"},
		{"first two missing", func(s *sliceStore) { s.events = s.events[2:] }, 1, audit.ProblemMissing, "events 1 to 2 are missing (the chain starts at event 3)"},
		{"one missing", func(s *sliceStore) { s.events = append(s.events[:3:3], s.events[4:]...) }, 4, audit.ProblemMissing, "event 4 is missing (the chain jumps from 3 to 5)"},
		{"three missing", func(s *sliceStore) { s.events = append(s.events[:1:1], s.events[4:]...) }, 2, audit.ProblemMissing, "events 2 to 4 are missing (the chain jumps from 1 to 5)"},
		{"duplicate", func(s *sliceStore) { s.events = append(s.events[:3:3], s.events[2:]...) }, 3, audit.ProblemDuplicate, "event 3 appears more than once (after event 3)"},
		{"first re-linked", func(s *sliceStore) { s.events[0].PrevHash = strings.Repeat("f", 64) }, 1, audit.ProblemRelinked, "event 1 does not start the chain: its prev_hash ffffffffffffffff… is not 64 zeros"},
		{"re-linked", func(s *sliceStore) { s.events[2].PrevHash = s.events[0].Hash }, 3, audit.ProblemRelinked, "event 3 does not link to event 2: its prev_hash " + s16(build().events[0].Hash)},
		{"altered", func(s *sliceStore) { s.events[4].Actor = "mallory" }, 5, audit.ProblemAltered, "event 5 was altered: its hash does not match its content"},
		{"altered and later missing", func(s *sliceStore) { s.events[1].Data = json.RawMessage(`{"x":1}`); s.events = s.events[:4] }, 2, audit.ProblemAltered, "event 2 was altered"},
	}
	for _, tt := range tests {
		s := build()
		tt.tamper(s)
		res, err := audit.New(s).Verify(t.Context())
		if err != nil {
			t.Fatalf("%s: Verify: %v", tt.name, err)
		}
		if res.OK || res.Break == nil || res.Break.Seq != tt.seq || res.Break.Problem != tt.problem || !strings.Contains(res.Break.Message, tt.message) {
			t.Errorf("%s: Verify = %+v (break %+v), want event %d %s: %q", tt.name, res, res.Break, tt.seq, tt.problem, tt.message)
		}
	}

	s := build()
	s.err = errors.New("disk on fire")
	if _, err := audit.New(s).Verify(t.Context()); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Verify with a failing scan: %v, want the scan's error", err)
	}
}

func s16(h string) string { return h[:16] }

// TestRecordInvocation checks the pipeline adapter: an event with the
// caller, the URI and the whole record, appended even when the call's
// context is already cancelled; a failure is logged, not returned. By
// default the event is enqueued (Flush makes it visible, Close writes it);
// WithSyncInvocations appends it before RecordInvocation returns.
func TestRecordInvocation(t *testing.T) {
	rec := invoke.Record{Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), URI: "ossa:text/echo@1", Version: "1.0.2", Caller: "agent-7", Binding: "native",
		Attempts: []invoke.Attempt{{Binding: "native", Attempt: 1, DurationMS: 0.25}}, DurationMS: 0.5}
	check := func(t *testing.T, l *audit.Log, want int) {
		t.Helper()
		events, err := l.List(t.Context(), chain.Filter{Kind: audit.KindInvocation})
		if err != nil || len(events) != want {
			t.Fatalf("List = %v, %v; want %d invocation events", events, err, want)
		}
		e := events[0]
		var data invoke.Record
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		if e.Actor != "agent-7" || e.Capability != "ossa:text/echo@1" || data.Version != "1.0.2" || data.Binding != "native" || len(data.Attempts) != 1 {
			t.Errorf("invocation event = %+v, data %s", e, e.Data)
		}
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	t.Run("sync", func(t *testing.T) {
		st := openStore(t)
		var logged bytes.Buffer
		l := audit.New(st, audit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))), audit.WithSyncInvocations())
		var _ invoke.Recorder = l
		l.RecordInvocation(cancelled, rec)
		check(t, l, 1) // no Flush: it is committed already
		if logged.Len() > 0 {
			t.Errorf("logged on success: %s", logged.String())
		}
		st.Close()
		l.RecordInvocation(t.Context(), rec)
		if !strings.Contains(logged.String(), "the audit chain misses an invocation") || !strings.Contains(logged.String(), "closed") {
			t.Errorf("a failed append logged %q, want the error", logged.String())
		}
	})

	t.Run("enqueued", func(t *testing.T) {
		st := openStore(t)
		var logged bytes.Buffer
		l := audit.New(st, audit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
		l.RecordInvocation(cancelled, rec)
		if err := l.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		check(t, l, 1)
		// Close writes what is still queued: nothing enqueued is lost by a
		// clean shutdown.
		for range 500 {
			l.RecordInvocation(cancelled, rec)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, audit.New(st), 501)
		if v, err := audit.New(st).Verify(t.Context()); err != nil || !v.OK || v.Count != 501 {
			t.Errorf("Verify = %v, %v; want 501 intact events", v, err)
		}
		if logged.Len() > 0 {
			t.Errorf("logged on success: %s", logged.String())
		}
		// Data that is not an object is refused by the writer, and logged.
		l2 := audit.New(st, audit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
		l2.Enqueue(audit.KindInvocation, "a", "u", []int{1})
		l2.Enqueue(audit.KindInvocation, "a", "u", func() {})
		l2.Enqueue("", "a", "u", nil)
		if err := l2.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"not a JSON object", "cannot be encoded", "kind is empty"} {
			if !strings.Contains(logged.String(), want) {
				t.Errorf("log %q lacks %q", logged.String(), want)
			}
		}
		check(t, l2, 501)
		st.Close()
		l2.Enqueue(audit.KindInvocation, "a", "u", nil)
		_ = l2.Flush(t.Context())
		if !strings.Contains(logged.String(), "audit event not recorded") {
			t.Errorf("a failed enqueued append logged %q, want the error", logged.String())
		}
	})
}

func definition(name, version string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: capability.NewURI("ossa", "text", name, v).String(), Name: name, Domain: "text", Version: version,
		Title: name, Description: "Test capability " + name + ".", Stability: capability.StabilityStable,
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{}, Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

// TestRecorder checks that a registry with the Log as its recorder records
// registrations that created a version, and deprecations, by the actor of
// the context, and nothing for a refused or unchanged registration.
func TestRecorder(t *testing.T) {
	st := openStore(t)
	l := audit.New(st)
	api := registry.NewService(st, registry.WithRecorder(l))
	ctx := identity.With(t.Context(), identity.Caller{Actor: "alice"})

	if _, err := api.RegisterBatch(ctx, []capability.Definition{definition("echo", "1.0.0"), definition("upper", "1.2.0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.RegisterBatch(ctx, []capability.Definition{definition("echo", "1.0.0")}); err != nil { // unchanged
		t.Fatal(err)
	}
	if _, err := api.RegisterBatch(ctx, []capability.Definition{{URI: "not a uri"}}); err == nil { // refused
		t.Fatal("registering an invalid definition succeeded")
	}
	if _, err := api.Deprecate(ctx, "ossa", "text", "echo", "1.0", registry.DeprecateRequest{MigrationGuide: "use upper"}); err != nil {
		t.Fatal(err)
	}
	events, err := l.List(ctx, chain.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ kind, actor, capability, data string }
	var got []row
	for _, e := range events {
		got = append(got, row{e.Kind, e.Actor, e.Capability, string(e.Data)})
	}
	want := []row{
		{"registered", "alice", "ossa:text/echo@1.0", `{"digest":"` + digest(t, events[0]) + `","version":"1.0.0"}`},
		{"registered", "alice", "ossa:text/upper@1.2", `{"digest":"` + digest(t, events[1]) + `","version":"1.2.0"}`},
		{"deprecated", "alice", "ossa:text/echo@1.0.0", `{"migration_guide":"use upper"}`},
	}
	if len(got) != len(want) {
		t.Fatalf("events = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if res, err := l.Verify(ctx); err != nil || !res.OK || res.Count != 3 {
		t.Errorf("Verify = %+v, %v", res, err)
	}
}

func digest(t *testing.T, e chain.Event) string {
	t.Helper()
	var d struct{ Digest string }
	if err := json.Unmarshal(e.Data, &d); err != nil || len(d.Digest) != 64 {
		t.Fatalf("event %d: data %s has no digest", e.Seq, e.Data)
	}
	return d.Digest
}

// TestCheckRegistrations: every version registered through a recording
// registry has its event; a version stored past it (or whose event is cut
// off the end of the chain) is named; one stored before the chain began
// predates it; with an empty chain every version is unrecorded.
func TestCheckRegistrations(t *testing.T) {
	ctx := identity.With(t.Context(), identity.Caller{Actor: "alice"})
	st := openStore(t)
	l := audit.New(st)
	if c, err := l.CheckRegistrations(ctx, st); err != nil || !c.OK || c.Versions != 0 {
		t.Fatalf("empty registry: %+v, %v", c, err)
	}
	early := storetest.NewRecord(definition("early", "1.0.0"))
	early.RegisteredAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := st.Put(ctx, []registry.Record{early}); err != nil {
		t.Fatal(err)
	}
	if c, err := l.CheckRegistrations(ctx, st); err != nil || c.OK || c.Unrecorded != 1 || c.Predating != 0 {
		t.Errorf("a version and an empty chain: %+v, %v; want it unrecorded", c, err)
	}
	svc := registry.NewService(st, registry.WithRecorder(l))
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		if _, err := svc.RegisterBatch(ctx, []capability.Definition{definition("echo", v), definition("upper", v)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := l.CheckRegistrations(ctx, st)
	if err != nil || !c.OK || c.Versions != 7 || c.Unrecorded != 0 || c.Predating != 1 {
		t.Fatalf("registered through the registry: %+v, %v; want 7 versions, 1 predating", c, err)
	}
	if s := c.String(); !strings.Contains(s, "all 6 stored versions have their registration event") || !strings.Contains(s, "1 stored version predates the audit chain") {
		t.Errorf("String() = %q", s)
	}
	// Stored past the registry, after the chain began: no event.
	if _, err := st.Put(ctx, []registry.Record{storetest.NewRecord(definition("sneaky", "1.0.0"))}); err != nil {
		t.Fatal(err)
	}
	c, err = l.CheckRegistrations(ctx, st)
	if err != nil || c.OK || c.Unrecorded != 1 || len(c.Missing) != 1 || c.Missing[0] != "ossa:text/sneaky@1.0.0" {
		t.Fatalf("a version without its event: %+v, %v", c, err)
	}
	res, err := l.Verify(ctx)
	if err != nil || !res.OK {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	res.AddRegistrations(c)
	if res.OK || !strings.Contains(res.String(), "audit chain intact: 6 events") ||
		!strings.Contains(res.String(), "\nregistrations NOT recorded: 1 of 8 stored versions have no registration event (stored without their record, or their events were removed): ossa:text/sneaky@1.0.0") {
		t.Errorf("Verify with registrations: OK %v, %q", res.OK, res.String())
	}
}

// TestCheckRegistrationsPruned: once the chain is pruned, the versions
// whose "registered" events were pruned are counted apart, not as
// unrecorded; a version stored past the registry afterwards still is.
func TestCheckRegistrationsPruned(t *testing.T) {
	ctx := identity.With(t.Context(), identity.Caller{Actor: "alice"})
	st := openStore(t)
	l := audit.New(st)
	svc := registry.NewService(st, registry.WithRecorder(l))
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		if _, err := svc.RegisterBatch(ctx, []capability.Definition{definition("echo", v)}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := l.Prune(ctx, audit.Retention{MaxEvents: 1}); err != nil || res.Pruned != 2 {
		t.Fatalf("Prune to 1 event = %+v, %v; want the first 2 registrations pruned", res, err)
	}
	c, err := l.CheckRegistrations(ctx, st)
	if err != nil || !c.OK || c.Versions != 3 || c.Pruned != 2 || c.Unrecorded != 0 {
		t.Fatalf("after the prune: %+v, %v; want 3 versions, 2 of them with pruned events", c, err)
	}
	if s := c.String(); !strings.HasPrefix(s, "registrations recorded: ") || !strings.Contains(s, "; 2 stored versions were registered before the checkpoint (their registration events were pruned)") {
		t.Errorf("String() = %q", s)
	}
	if _, err := st.Put(ctx, []registry.Record{storetest.NewRecord(definition("sneaky", "1.0.0"))}); err != nil {
		t.Fatal(err)
	}
	if c, err := l.CheckRegistrations(ctx, st); err != nil || c.OK || c.Unrecorded != 1 || c.Pruned != 2 {
		t.Errorf("a version stored past the registry after the prune: %+v, %v; want it unrecorded", c, err)
	}
}

// TestRetentionBackground: a Log with a retention prunes by itself as
// events are appended, logs what it pruned, and the chain verifies from
// the checkpoint it leaves; Close stops the pruner.
func TestRetentionBackground(t *testing.T) {
	st := openStore(t)
	var logs syncBuffer
	l := audit.New(st, audit.WithRetention(20, 0), audit.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for i := range 200 {
		if _, err := l.Record(t.Context(), audit.KindInvocation, "tester", "", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	// The pruner runs beside the appends: wait (bounded) for it to catch
	// up with the last of them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := st.AuditState(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if s.Checkpoint != nil && s.Last.Seq-s.Checkpoint.Seq <= 21 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after 200 appends the chain still holds events %+v to %d, want at most 21 kept", s.Checkpoint, s.Last.Seq)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.Close()
	res, err := l.Verify(t.Context())
	if err != nil || !res.OK || res.Checkpoint == nil || res.FromSeq != res.Checkpoint.Seq+1 {
		t.Fatalf("Verify after background prunes = %+v, %v", res, err)
	}
	if out := logs.String(); !strings.Contains(out, `msg="audit chain pruned"`) || !strings.Contains(out, "keep=\"the newest 20 events\"") {
		t.Errorf("the pruner logged %q, want its prunes", out)
	}
}

// TestPrunedKindReserved: only Prune records prunes.
func TestPrunedKindReserved(t *testing.T) {
	l := audit.New(openStore(t))
	if _, err := l.Hook(chain.Event{Kind: audit.KindPruned}); err == nil {
		t.Errorf("Hook accepted a %q event", audit.KindPruned)
	}
	if _, err := l.Append(t.Context(), chain.Event{Kind: audit.KindPruned, Data: json.RawMessage(`{"seq":1}`)}); err == nil {
		t.Errorf("Append accepted a %q event", audit.KindPruned)
	}
}

// syncBuffer is a bytes.Buffer the pruner's logger writes to while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingStore is a real store that records how many events each of the
// writer's transactions (AppendAuditBatch) appends.
type countingStore struct {
	*sqlite.Store
	mu      sync.Mutex
	batches []int
}

func (s *countingStore) AppendAuditBatch(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	s.mu.Lock()
	s.batches = append(s.batches, n)
	s.mu.Unlock()
	return s.Store.AppendAuditBatch(ctx, n, next)
}

func (s *countingStore) commits() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// TestGroupCommit checks that enqueued events wait, within the group
// delay, for others to share their commit, and that nothing that someone
// waits for waits for the delay: a Flush, an Append and Close end it (the
// delay here is an hour, so a wait that did not end would time the test
// out).
func TestGroupCommit(t *testing.T) {
	data := map[string]any{"n": 1}
	newLog := func(t *testing.T, delay time.Duration) (*countingStore, *audit.Log) {
		st := &countingStore{Store: openStore(t)}
		l := audit.New(st, audit.WithGroupCommitDelay(delay))
		t.Cleanup(func() { l.Close() })
		return st, l
	}
	count := func(t *testing.T, st chain.Store) int {
		t.Helper()
		events, err := st.ListAudit(t.Context(), chain.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(events)
	}
	t.Run("enqueued events share a commit", func(t *testing.T) {
		st, l := newLog(t, time.Hour)
		for range 10 {
			l.Enqueue(audit.KindInvocation, "a", "u", data)
		}
		if err := l.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := st.commits(); len(got) != 1 || got[0] != 10 {
			t.Errorf("commits = %v, want one of 10 events", got)
		}
	})
	t.Run("an append does not wait", func(t *testing.T) {
		st, l := newLog(t, time.Hour)
		for range 3 {
			l.Enqueue(audit.KindInvocation, "a", "u", data)
		}
		e, err := l.Record(t.Context(), audit.KindApproval, "a", "u", data)
		if err != nil || e.Seq != 4 {
			t.Fatalf("Record = %+v, %v; want event 4", e, err)
		}
		if got := st.commits(); len(got) != 1 || got[0] != 4 {
			t.Errorf("commits = %v, want one of 4 events", got)
		}
	})
	t.Run("close writes at once", func(t *testing.T) {
		st, l := newLog(t, time.Hour)
		for range 5 {
			l.Enqueue(audit.KindInvocation, "a", "u", data)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if n := count(t, st); n != 5 {
			t.Errorf("%d events after Close, want 5", n)
		}
	})
	t.Run("no delay", func(t *testing.T) {
		st, l := newLog(t, 0)
		for range 2 {
			l.Enqueue(audit.KindInvocation, "a", "u", data)
			if err := l.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if got := st.commits(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
			t.Errorf("commits = %v, want two of one event", got)
		}
		if v, err := l.Verify(t.Context()); err != nil || !v.OK || v.Count != 2 {
			t.Errorf("Verify = %v, %v; want 2 intact events", v, err)
		}
	})
}
