package audit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/store/sqlite"
)

// BenchmarkEnqueue measures how many invocation events the audit writer
// commits per second to a SQLite file (WAL, as caphub serve runs it): each
// op enqueues one invoke.Record, and the clock stops once all are
// committed. The writer encodes, hashes and group-commits them, so this is
// the rate of calls whose records the chain keeps up with.
func BenchmarkEnqueue(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "caphub.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l := audit.New(st)
	defer l.Close()
	rec := invoke.Record{Time: time.Now().UTC(), URI: "ossa:everruns/add@1.0", Version: "1.0.0", Caller: "bench-agent", Binding: "native",
		Attempts: []invoke.Attempt{{Binding: "native", Attempt: 1, DurationMS: 0.004}}, DurationMS: 0.005}
	start := time.Now()
	for b.Loop() {
		l.RecordInvocation(ctx, rec)
	}
	if err := l.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
