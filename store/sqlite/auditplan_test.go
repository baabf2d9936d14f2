package sqlite

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/storetest"
)

// fillSyntheticAudit writes storetest's synthetic audit chain of n events
// into s's empty audit_events, in one statement.
func fillSyntheticAudit(tb testing.TB, s *Store, n int64) {
	tb.Helper()
	_, err := s.writer.ExecContext(tb.Context(), `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO audit_events (`+auditColumns+`)
		SELECT i,
			strftime('%Y-%m-%dT%H:%M:%f', ?, '+' || (i / 1000) || '.' || printf('%03d', i % 1000) || ' seconds') || '000Z',
			CASE WHEN i % ? = 0 THEN ? ELSE ? END, 'agent' || (i % 10), 'ossa:bench/c' || (i % ?) || '@1.0', '{}', 'p', 'h'
		FROM n`,
		n, storetest.SyntheticAuditStart.Format("2006-01-02 15:04:05"), storetest.SyntheticRareEvery, audit.KindRegistered, audit.KindInvocation, storetest.SyntheticCapabilities)
	if err != nil {
		tb.Fatalf("fill the synthetic audit chain: %v", err)
	}
}

// TestAuditListUsesIndex checks the plan of every listing caphub runs on
// the audit chain: each reads an index or a range of the primary key, and
// only a listing of invocations alone reads the table in seq order (the
// kind index leaves them out, migration 0006).
func TestAuditListUsesIndex(t *testing.T) {
	if read.AuditKindUnindexed != audit.KindInvocation {
		t.Fatalf("read.AuditKindUnindexed is %q, audit.KindInvocation %q: the kind index must leave out invocations", read.AuditKindUnindexed, audit.KindInvocation)
	}
	s := open(t, filepath.Join(t.TempDir(), "caphub.db"))
	const n = 20000
	fillSyntheticAudit(t, s, n)
	storetest.CheckSyntheticAudit(t, s, n)
	for _, c := range storetest.AuditFilterCases(n) {
		query, args := read.AuditListQuery(dialect, auditColumns, c.Filter)
		got := queryPlan(t, s, query, args)
		t.Logf("%s: %s", c.Name, got)
		if c.InSeqOrder {
			if got != "SCAN audit_events" {
				t.Errorf("%s: plan %q; want the table in seq order (SCAN audit_events, no sort)", c.Name, got)
			}
		} else if strings.Contains(got, "SCAN") || !strings.Contains(got, "SEARCH audit_events USING") {
			t.Errorf("%s: plan %q; want a search of an index or of the primary key", c.Name, got)
		}
	}
}

// BenchmarkAuditFilters measures the audit listings of
// storetest.AuditFilterCases on a chain of CAPHUB_BENCH_AUDIT_N events
// (default 1,000,000), mostly invocations.
func BenchmarkAuditFilters(b *testing.B) {
	n := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("CAPHUB_BENCH_AUDIT_N"), 10, 64); err == nil && v > 0 {
		n = v
	}
	s := open(b, filepath.Join(b.TempDir(), "caphub.db"))
	fillSyntheticAudit(b, s, n)
	storetest.BenchAuditFilters(b, s, n)
}
