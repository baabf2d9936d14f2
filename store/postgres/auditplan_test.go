package postgres

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/storetest"
	"github.com/jackc/pgx/v5"
)

// fillSyntheticAudit writes storetest's synthetic audit chain of n events
// into s's empty audit_events, in one statement, and analyzes it.
func fillSyntheticAudit(tb testing.TB, s *Store, n int64) {
	tb.Helper()
	_, err := s.pool.Exec(tb.Context(), `INSERT INTO audit_events (seq, time, kind, actor, capability, data, prev_hash, hash)
		SELECT i, $2::timestamptz + i * interval '1 millisecond',
			CASE WHEN i % $3 = 0 THEN $4 ELSE $5 END, 'agent' || (i % 10), 'ossa:bench/c' || (i % $6) || '@1.0', '{}', 'p', 'h'
		FROM generate_series(1, $1::bigint) AS i`,
		n, storetest.SyntheticAuditStart, storetest.SyntheticRareEvery, audit.KindRegistered, audit.KindInvocation, storetest.SyntheticCapabilities)
	if err == nil {
		_, err = s.pool.Exec(tb.Context(), `ANALYZE audit_events`)
	}
	if err != nil {
		tb.Fatalf("fill the synthetic audit chain: %v", err)
	}
}

// TestAuditListUsesIndex checks the plan of every listing caphub runs on
// the audit chain: each reads an index (the primary key's included), and
// only a listing of invocations alone reads the table in seq order (the
// kind index leaves them out, migration 0007). The plans are the generic
// ones, as for a statement pgx has prepared and runs again.
func TestAuditListUsesIndex(t *testing.T) {
	testURL(t)
	s := open(t, newSchema(t))
	const n = 100000
	fillSyntheticAudit(t, s, n)
	storetest.CheckSyntheticAudit(t, s, n)
	for _, c := range storetest.AuditFilterCases(n) {
		query, args := read.AuditListQuery(dialect, auditColumns, c.Filter)
		plan := explainGeneric(t, s, query, args)
		t.Logf("%s:\n%s", c.Name, plan)
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: plan reads every event:\n%s", c.Name, plan)
		}
		if c.InSeqOrder && !strings.Contains(plan, "Index Scan using audit_events_pkey") {
			t.Errorf("%s: plan does not read the primary key in order:\n%s", c.Name, plan)
		}
	}
}

// explainGeneric is the generic plan of query, the one a statement
// prepared and run again may settle on, which sees no parameter's value:
// the query is prepared in SQL and explained with plan_cache_mode
// force_generic_plan.
func explainGeneric(tb testing.TB, s *Store, query string, args []any) string {
	tb.Helper()
	tx, err := s.pool.Begin(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(tb.Context())
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = sqlLiteral(tb, a)
	}
	for _, q := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE audit_plan AS ` + query} {
		if _, err := tx.Exec(tb.Context(), q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := tx.Query(tb.Context(), `EXPLAIN EXECUTE audit_plan(`+strings.Join(params, ", ")+`)`)
	if err != nil {
		tb.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(tb.Context(), `DEALLOCATE audit_plan`); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// sqlLiteral writes a parameter of an audit listing as a SQL literal (an
// EXECUTE's arguments cannot be parameters).
func sqlLiteral(tb testing.TB, v any) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := v.(type) {
	case string:
		return quote(v)
	case int, int64:
		return fmt.Sprint(v)
	case time.Time:
		return quote(v.Format(time.RFC3339Nano)) + "::timestamptz"
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	}
	tb.Fatalf("no SQL literal for %T", v)
	return ""
}

// BenchmarkAuditFilters measures the audit listings of
// storetest.AuditFilterCases on a chain of CAPHUB_BENCH_AUDIT_N events
// (default 1,000,000), mostly invocations.
func BenchmarkAuditFilters(b *testing.B) {
	testURL(b)
	n := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("CAPHUB_BENCH_AUDIT_N"), 10, 64); err == nil && v > 0 {
		n = v
	}
	s := open(b, newSchema(b))
	fillSyntheticAudit(b, s, n)
	storetest.BenchAuditFilters(b, s, n)
}
