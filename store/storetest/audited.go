package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// The audited writes (registry.Store.PutAudited, DeprecateAudited and
// ApplyDocsAudited): a change and the events that
// record it commit in one transaction, or neither does.

// errRefused is what the failing hooks of the suite return.
var errRefused = errors.New("the audit hook refused")

// failingHook is a hook of n events whose Chain fails, as an append that
// cannot be written does.
func failingHook(n int) *chain.Hook {
	events := make([]chain.Event, n)
	for i := range events {
		events[i] = chain.Event{Kind: audit.KindRegistered, Data: json.RawMessage(`{}`)}
	}
	return &chain.Hook{Events: events, Chain: func(*chain.Event, []chain.Event) ([]chain.Event, error) {
		return nil, errRefused
	}}
}

// registeredHook is the hook the registry gives PutAudited: one
// "registered" event per record, made by package audit.
func registeredHook(t *testing.T, l *audit.Log, recs []registry.Record) *chain.Hook {
	t.Helper()
	results := make([]registry.RegisterResult, len(recs))
	for i, r := range recs {
		results[i] = registry.RegisterResult{URI: r.Key.String(), Version: r.Key.Version, Digest: r.Digest}
	}
	hook, err := l.RegisteredHook("tester", results)
	if err != nil {
		t.Fatal(err)
	}
	return hook
}

// chainCapabilities returns the Capability of every event of the chain, in
// order, and checks that the chain verifies.
func chainCapabilities(t *testing.T, s chain.Store) []string {
	t.Helper()
	res, err := audit.New(s).Verify(t.Context())
	if err != nil || !res.OK {
		t.Fatalf("Verify = %v, %v; want an intact chain", res, err)
	}
	out := []string{}
	for _, e := range listAudit(t, s, chain.Filter{}) {
		out = append(out, e.Capability)
	}
	return out
}

// testAuditedPutRollsBack: a hook that fails, or that chains its events
// wrongly, rolls the whole Put back: no version, no event.
func testAuditedPutRollsBack(t *testing.T, s registry.Store) {
	recs := []registry.Record{NewRecord(def("ossa", "audited", "alpha", "1.0.0")), NewRecord(def("ossa", "audited", "beta", "1.0.0"))}
	if _, err := s.PutAudited(t.Context(), recs, failingHook(len(recs))); !errors.Is(err, errRefused) {
		t.Fatalf("PutAudited with a failing hook: %v, want the hook's error", err)
	}
	// A hook whose events do not continue the chain (a fork) is refused too.
	forked := registeredHook(t, audit.New(s), recs)
	link := forked.Chain
	forked.Chain = func(last *chain.Event, events []chain.Event) ([]chain.Event, error) {
		out, err := link(last, events)
		if err == nil {
			out[1].Seq += 5
		}
		return out, err
	}
	if _, err := s.PutAudited(t.Context(), recs, forked); err == nil {
		t.Fatal("PutAudited with events that skip sequence numbers succeeded")
	}
	for _, r := range recs {
		if _, err := s.Get(t.Context(), r.Key); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("after the refused PutAudited, Get(%s) = %v, want ErrNotFound: the version was stored without its event", r.Key, err)
		}
	}
	if p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, CountTotal: true}); err != nil || p.Total != 0 {
		t.Errorf("after the refused PutAudited, List total = %d, %v; want 0", p.Total, err)
	}
	if got := chainCapabilities(t, s); len(got) != 0 {
		t.Errorf("after the refused PutAudited, the chain holds %v, want no event", got)
	}
	// The store still works: the same records with a good hook go in.
	if _, err := s.PutAudited(t.Context(), recs, registeredHook(t, audit.New(s), recs)); err != nil {
		t.Fatalf("PutAudited after a refused one: %v", err)
	}
	if got := chainCapabilities(t, s); !slices.Equal(got, []string{recs[0].Key.String(), recs[1].Key.String()}) {
		t.Errorf("chain = %v, want the two registrations", got)
	}
}

// testAuditedPutAtomic: PutAudited appends exactly the events of the
// versions it creates, in the order of the batch, in the chain (after any
// event appended before); a conflict stores neither version nor event.
func testAuditedPutAtomic(t *testing.T, s registry.Store) {
	l := audit.New(s)
	if _, err := l.Append(t.Context(), chain.Event{Kind: audit.KindInvocation, Capability: "ossa:before/call@1"}); err != nil {
		t.Fatal(err)
	}
	existing := NewRecord(def("ossa", "audited", "existing", "1.0.0"))
	put(t, s, existing.Definition) // stored without a hook: no event
	recs := []registry.Record{existing, NewRecord(def("ossa", "audited", "gamma", "1.0.0")), NewRecord(def("ossa", "audited", "delta", "2.1.0"))}
	res, err := s.PutAudited(t.Context(), recs, registeredHook(t, l, recs))
	if err != nil {
		t.Fatal(err)
	}
	if created := []bool{res[0].Created, res[1].Created, res[2].Created}; !slices.Equal(created, []bool{false, true, true}) {
		t.Errorf("Created = %v, want [false true true]", created)
	}
	want := []string{"ossa:before/call@1", recs[1].Key.String(), recs[2].Key.String()}
	if got := chainCapabilities(t, s); !slices.Equal(got, want) {
		t.Errorf("chain = %v, want %v (an event for each created version only)", got, want)
	}
	// Identical content again: nothing created, nothing recorded.
	if _, err := s.PutAudited(t.Context(), recs, registeredHook(t, l, recs)); err != nil {
		t.Fatal(err)
	}
	// A conflict refuses the batch: its new version and every event too.
	changed := def("ossa", "audited", "gamma", "1.0.0")
	changed.Description = "Other content."
	bad := []registry.Record{NewRecord(def("ossa", "audited", "epsilon", "1.0.0")), NewRecord(changed)}
	if _, err := s.PutAudited(t.Context(), bad, registeredHook(t, l, bad)); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("PutAudited with a conflicting version: %v, want ErrConflict", err)
	}
	if _, err := s.Get(t.Context(), bad[0].Key); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get(%s) after the conflict = %v, want ErrNotFound", bad[0].Key, err)
	}
	if got := chainCapabilities(t, s); !slices.Equal(got, want) {
		t.Errorf("chain after a no-op and a conflict = %v, want %v", got, want)
	}
	// A hook with the wrong number of events is refused before anything is
	// written.
	short := registeredHook(t, l, bad[:1])
	if _, err := s.PutAudited(t.Context(), []registry.Record{NewRecord(def("ossa", "audited", "zeta", "1.0.0")), NewRecord(def("ossa", "audited", "eta", "1.0.0"))}, short); err == nil {
		t.Error("PutAudited with one event for two records succeeded")
	}
}

// testAuditedConcurrent: audited Puts racing each other and plain appends
// (invocations) leave one intact chain in which every created version has
// exactly one event.
func testAuditedConcurrent(t *testing.T, s registry.Store) {
	l := audit.New(s)
	defer l.Close()
	const writers, batches = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*batches)
	for w := range writers {
		recs := make([][]registry.Record, batches)
		hooks := make([]*chain.Hook, batches)
		for b := range batches {
			recs[b] = []registry.Record{
				NewRecord(def("ossa", "audited", fmt.Sprintf("w%d_b%d", w, b), "1.0.0")),
				NewRecord(def("ossa", "audited", "shared", fmt.Sprintf("%d.%d.0", w+1, b))),
			}
			hooks[b] = registeredHook(t, l, recs[b])
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for b := range batches {
				_, err := s.PutAudited(t.Context(), recs[b], hooks[b])
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			for b := range batches {
				_, err := l.Append(t.Context(), chain.Event{Kind: audit.KindInvocation, Capability: fmt.Sprintf("ossa:calls/w%d@%d", w, b)})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write: %v", err)
		}
	}
	recorded := map[string]int{}
	for _, c := range chainCapabilities(t, s) {
		recorded[c]++
	}
	p, err := s.List(t.Context(), registry.ListFilter{AllVersions: true, CountTotal: true})
	if err != nil || p.Total != 2*writers*batches {
		t.Fatalf("List = %d versions, %v; want %d", p.Total, err, 2*writers*batches)
	}
	for _, r := range p.Items {
		if n := recorded[r.Key.String()]; n != 1 {
			t.Errorf("version %s has %d registration events, want 1", r.Key, n)
		}
	}
	if len(recorded) != 3*writers*batches {
		t.Errorf("the chain records %d subjects, want %d versions and %d invocations", len(recorded), 2*writers*batches, writers*batches)
	}
}

// testAuditedDeprecate: a deprecation commits with its events, and a
// failing hook leaves the version as it was.
func testAuditedDeprecate(t *testing.T, s registry.Store) {
	l := audit.New(s)
	rec := NewRecord(def("ossa", "audited", "old", "1.0.0"))
	put(t, s, rec.Definition)
	ds := []registry.Deprecation{{Key: rec.Key, MigrationGuide: "use new"}}
	if _, err := s.DeprecateAudited(t.Context(), ds, failingHook(1)); !errors.Is(err, errRefused) {
		t.Fatalf("DeprecateAudited with a failing hook: %v, want the hook's error", err)
	}
	if got, err := s.Get(t.Context(), rec.Key); err != nil || got.Definition.Stability == capability.StabilityDeprecated || got.DeprecatedAt != nil {
		t.Fatalf("after the refused deprecation: %+v, %v; want the version as it was", got.Definition.Stability, err)
	}
	hook, err := l.DeprecatedHook("tester", registry.DeprecateRequest{MigrationGuide: "use new"}, registry.DeprecateResult{Deprecated: []string{rec.Key.String()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeprecateAudited(t.Context(), ds, hook); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(t.Context(), rec.Key); err != nil || got.Definition.Stability != capability.StabilityDeprecated {
		t.Errorf("after DeprecateAudited: %v, %v; want deprecated", got.Definition.Stability, err)
	}
	events := listAudit(t, s, chain.Filter{})
	if len(events) != 1 || events[0].Kind != audit.KindDeprecated || events[0].Capability != rec.Key.String() {
		t.Errorf("chain = %+v, want one deprecated event for %s", events, rec.Key)
	}
}

// testAuditedDocs: document ops commit with their events, and a failing
// hook writes neither.
func testAuditedDocs(t *testing.T, s registry.Store) {
	ops := []registry.DocOp{{Kind: "agent", Key: "scanner", Value: []byte(`{"id":"scanner"}`)}}
	if err := s.ApplyDocsAudited(t.Context(), ops, failingHook(1)); !errors.Is(err, errRefused) {
		t.Fatalf("ApplyDocsAudited with a failing hook: %v, want the hook's error", err)
	}
	if _, err := s.GetDoc(t.Context(), "agent", "scanner"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("after the refused ApplyDocsAudited, GetDoc = %v, want ErrNotFound", err)
	}
	hook, err := audit.New(s).ChangeHook(audit.KindAgentApplied, "alice", "", map[string]any{"agent": "scanner"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyDocsAudited(t.Context(), ops, hook); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDoc(t.Context(), "agent", "scanner"); err != nil {
		t.Errorf("after ApplyDocsAudited, GetDoc = %v", err)
	}
	events := listAudit(t, s, chain.Filter{})
	if len(events) != 1 || events[0].Kind != audit.KindAgentApplied || events[0].Actor != "alice" || string(events[0].Data) != `{"agent":"scanner"}` {
		t.Errorf("chain = %+v, want one agent_applied event by alice", events)
	}
}
