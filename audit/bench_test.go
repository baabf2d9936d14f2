package audit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
)

// benchRecord is the invocation record the benchmarks append: what a
// relayed tools/call records.
var benchRecord = invoke.Record{Time: time.Now().UTC(), URI: "ossa:everruns/add@1.0", Version: "1.0.0", Caller: "bench-agent", Binding: "native",
	Attempts: []invoke.Attempt{{Binding: "native", Attempt: 1, DurationMS: 0.004}}, DurationMS: 0.005}

// benchStores runs bench against a SQLite file (WAL, as caphub serve runs
// it) and, when CAPHUB_TEST_POSTGRES is set, a fresh PostgreSQL schema.
func benchStores(b *testing.B, bench func(b *testing.B, st chain.Store)) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "caphub.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		bench(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		u := os.Getenv("CAPHUB_TEST_POSTGRES")
		if u == "" {
			b.Skip("CAPHUB_TEST_POSTGRES not set")
		}
		st, err := postgres.Open(b.Context(), benchSchema(b, u))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		bench(b, st)
	})
}

// benchSchema creates a schema of its own in the database at base, dropped
// when the benchmark ends, and returns the URL that selects it.
func benchSchema(b *testing.B, base string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Fatalf("connect to CAPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	schema := "caphub_bench_" + hex.EncodeToString([]byte(rand.Text()[:6]))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	pu, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := pu.Query()
	q.Set("search_path", schema)
	pu.RawQuery = q.Encode()
	return pu.String()
}

// cpuTime is the CPU time (user and system) this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countCommits counts the writer's transactions.
type countCommits struct {
	chain.Store
	n atomic.Int64
}

func (s *countCommits) AppendAuditBatch(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	s.n.Add(1)
	return s.Store.AppendAuditBatch(ctx, n, next)
}

// reportAppends reports events/s, the CPU this process spent per event
// (cpu-µs/event: a database server's is not in it) and the events per
// commit, for events appended since start, when the process had used cpu0.
func reportAppends(b *testing.B, events int, start time.Time, cpu0 time.Duration, st *countCommits) {
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(events), "cpu-µs/event")
	b.ReportMetric(float64(events)/float64(max(st.n.Load(), 1)), "events/commit")
}

// BenchmarkEnqueue measures how many invocation events the audit writer
// commits per second: each op enqueues one invoke.Record as fast as it
// can, and the clock stops once all are committed. The writer encodes,
// hashes and group-commits them, so this is the rate of calls whose
// records the chain keeps up with.
func BenchmarkEnqueue(b *testing.B) {
	benchStores(b, func(b *testing.B, s chain.Store) {
		st := &countCommits{Store: s}
		l := audit.New(st)
		defer l.Close()
		ctx := b.Context()
		start, cpu0 := time.Now(), cpuTime()
		for b.Loop() {
			l.RecordInvocation(ctx, benchRecord)
		}
		if err := l.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		reportAppends(b, b.N, start, cpu0, st)
	})
}

// BenchmarkRecordPaced is one client calling in a loop: each op enqueues
// one invoke.Record and then sleeps 200µs (a call's round trip), so the
// writer sees one event at a time, with the default group commit delay
// (delay=default), the former default (delay=2ms) and none (delay=0).
// Its cpu-µs/event (writer and client, the sleep costing next to nothing)
// is what recording a call costs caphub.
func BenchmarkRecordPaced(b *testing.B) {
	for _, d := range []struct {
		name  string
		delay time.Duration
	}{{"delay=0", 0}, {"delay=2ms", 2 * time.Millisecond}, {"delay=default", audit.DefaultGroupCommitDelay}} {
		b.Run(d.name, func(b *testing.B) {
			benchStores(b, func(b *testing.B, s chain.Store) {
				st := &countCommits{Store: s}
				l := audit.New(st, audit.WithGroupCommitDelay(d.delay))
				defer l.Close()
				ctx := b.Context()
				start, cpu0 := time.Now(), cpuTime()
				for b.Loop() {
					l.RecordInvocation(ctx, benchRecord)
					time.Sleep(200 * time.Microsecond)
				}
				if err := l.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				reportAppends(b, b.N, start, cpu0, st)
			})
		})
	}
}

// BenchmarkAppendParallel is 32 appenders that each wait for their event's
// commit (Append, as CAPHUB_AUDIT_SYNC makes invocations do): the writer
// group-commits what they hand it meanwhile.
func BenchmarkAppendParallel(b *testing.B) {
	benchStores(b, func(b *testing.B, s chain.Store) {
		st := &countCommits{Store: s}
		l := audit.New(st)
		defer l.Close()
		start, cpu0 := time.Now(), cpuTime()
		b.SetParallelism(16) // 32 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Record(context.Background(), audit.KindInvocation, benchRecord.Caller, benchRecord.URI, benchRecord); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportAppends(b, b.N, start, cpu0, st)
	})
}
