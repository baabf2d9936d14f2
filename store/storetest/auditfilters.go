package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
)

// The synthetic audit chain of the filter benchmarks and query plan
// tests: a gateway's chain, mostly invocations. Each store fills it with
// one SQL statement of its own (no hashes: only the listing is measured),
// following these rules for event seq (1 to n):
//
//   - kind: KindRegistered when seq is a multiple of SyntheticRareEvery,
//     else KindInvocation;
//   - capability: "ossa:bench/c" + seq%SyntheticCapabilities + "@1.0";
//   - actor: "agent" + seq%10;
//   - time: SyntheticAuditStart plus seq milliseconds.
const (
	SyntheticRareEvery    = 1000
	SyntheticCapabilities = 100
)

// SyntheticAuditStart is the time of the synthetic chain's event 0.
var SyntheticAuditStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// AuditFilterCase is a listing caphub runs on the audit chain.
type AuditFilterCase struct {
	Name   string
	Filter chain.Filter
	// InSeqOrder is a listing the planners serve by reading the table in
	// seq order (the primary key), until the page is full: invocations
	// alone, which the kind index leaves out (they are most of a chain),
	// and a time bound alone, for which neither SQLite (no statistics) nor
	// a generic PostgreSQL plan picks the time index over the order of the
	// page (so far; events are appended in time order, so the scan reads
	// the events before the bound).
	InSeqOrder bool
}

// AuditFilterCases are the listings caphub runs on the audit chain (GET
// /v1/audit and caphub audit list, audit/stats' refresh, the check of
// registrations, retention), over the synthetic chain of n events: each
// must read an index or a range of the primary key, never every event.
func AuditFilterCases(n int64) []AuditFilterCase {
	return []AuditFilterCase{
		{Name: "kind=registered", Filter: chain.Filter{Kind: audit.KindRegistered, Limit: 50}},
		{Name: "kind=registered/after", Filter: chain.Filter{Kind: audit.KindRegistered, AfterSeq: n / 2, Limit: 50}},
		{Name: "kind=invocation/after", Filter: chain.Filter{Kind: audit.KindInvocation, AfterSeq: n - 2000, Limit: 1000}},
		{Name: "kind=invocation", Filter: chain.Filter{Kind: audit.KindInvocation, Limit: 50}, InSeqOrder: true},
		{Name: "capability", Filter: chain.Filter{Capability: "ossa:bench/c7@1.0", Limit: 50}},
		{Name: "capability/any-version", Filter: chain.Filter{Capability: "ossa:bench/c7", Limit: 50}},
		{Name: "capability/kind=invocation", Filter: chain.Filter{Capability: "ossa:bench/c7@1.0", Kind: audit.KindInvocation, Limit: 50}},
		{Name: "capabilities/kind=registered", Filter: chain.Filter{Capabilities: []string{"ossa:bench/c0@1.0", "ossa:bench/c1@1.0"}, Kind: audit.KindRegistered, Limit: 50}},
		{Name: "since", Filter: chain.Filter{Since: SyntheticAuditStart.Add(time.Duration(n-500) * time.Millisecond), Limit: 50}, InSeqOrder: true},
		{Name: "since/until", Filter: chain.Filter{Since: SyntheticAuditStart.Add(time.Duration(n/2) * time.Millisecond), Until: SyntheticAuditStart.Add(time.Duration(n/2+500) * time.Millisecond), Limit: 50}},
		{Name: "until", Filter: chain.Filter{Until: SyntheticAuditStart.Add(time.Duration(500) * time.Millisecond), Limit: 50}, InSeqOrder: true},
		{Name: "since/kind=registered", Filter: chain.Filter{Since: SyntheticAuditStart.Add(time.Duration(n/2) * time.Millisecond), Kind: audit.KindRegistered, Limit: 50}},
		{Name: "after", Filter: chain.Filter{AfterSeq: n - 100, Limit: 50}},
	}
}

// BenchAuditFilters measures ListAudit of each of AuditFilterCases(n) on
// s, which holds the synthetic chain of n events.
func BenchAuditFilters(b *testing.B, s chain.Store, n int64) {
	for _, c := range AuditFilterCases(n) {
		b.Run(c.Name, func(b *testing.B) {
			for b.Loop() {
				evs, err := s.ListAudit(b.Context(), c.Filter)
				if err != nil || len(evs) == 0 {
					b.Fatalf("ListAudit(%+v) = %d events, %v", c.Filter, len(evs), err)
				}
			}
		})
	}
}

// CheckSyntheticAudit checks that s holds the synthetic chain of n events:
// each of AuditFilterCases(n) lists events that match its filter.
func CheckSyntheticAudit(tb testing.TB, s chain.Store, n int64) {
	tb.Helper()
	for _, c := range AuditFilterCases(n) {
		evs, err := s.ListAudit(tb.Context(), c.Filter)
		if err != nil || len(evs) == 0 {
			tb.Fatalf("%s: ListAudit(%+v) = %d events, %v; want some", c.Name, c.Filter, len(evs), err)
		}
		for _, e := range evs {
			if f := c.Filter; f.Kind != "" && e.Kind != f.Kind || f.Capability != "" && strings.TrimSuffix(e.Capability, "@1.0") != strings.TrimSuffix(f.Capability, "@1.0") ||
				e.Seq <= f.AfterSeq || e.Time.Before(f.Since) || e.Capability != fmt.Sprintf("ossa:bench/c%d@1.0", e.Seq%SyntheticCapabilities) {
				tb.Fatalf("%s: ListAudit(%+v) listed %+v", c.Name, c.Filter, e)
			}
		}
	}
}
