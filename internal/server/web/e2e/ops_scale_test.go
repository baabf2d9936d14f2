package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/stats"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/store/sqlite"
)

// BenchmarkOverviewAtScale measures the Overview on the catalog benchmark's
// registry (about 100k capabilities, 300k versions and their registration
// events) with 100,000 calls in the audit chain over the last 24 hours:
// the server time of GET /v1/stats, the first one (the server reads the
// whole bound of events) and the next ones (it reads only what was
// appended since), and the time until headless Chromium shows the page
// with its charts.
//
//	go test -run '^$' -bench OverviewAtScale -benchtime 100x ./internal/server/web/e2e/
func BenchmarkOverviewAtScale(b *testing.B) {
	if testing.Short() {
		b.Skip("loads 300,000 versions and 100,000 calls")
	}
	// A copy of the catalog's database, so that its cache stays as loaded.
	src := scaleDB(b, scaleVersions(b))
	dir := b.TempDir()
	db := filepath.Join(dir, "caphub.db")
	copyFile(b, src, db)
	calls := fillCalls(b, db, stats.DefaultMaxEvents)
	s := &site{tb: b, dir: dir, db: db, logs: &bytes.Buffer{}}
	s.serve()
	const path = "/v1/stats?window=24h&bucket=1h"
	start := time.Now()
	if code, _ := get(b, s.url+path); code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, code)
	}
	first := time.Since(start)
	b.Run("first", func(b *testing.B) {
		b.Logf("the first GET %s over %d calls (the server reads them all): %s", path, calls, first.Round(time.Millisecond))
		for b.Loop() {
		}
		b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	})
	b.Run("stats", func(b *testing.B) {
		var times []time.Duration
		for b.Loop() {
			start := time.Now()
			code, _ := get(b, s.url+path)
			times = append(times, time.Since(start))
			if code != http.StatusOK {
				b.Fatalf("GET %s: %d", path, code)
			}
		}
		slices.Sort(times)
		p50, p95 := times[len(times)/2], times[len(times)*95/100]
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
		b.Logf("GET %s over %d calls: p50 %s, p95 %s", path, calls, p50, p95)
	})
	b.Run("browser", func(b *testing.B) {
		s.tb = b
		var shown []float64
		for range 5 {
			r := s.opsBrowse("overview", map[string]any{"suffix": "-scale"})
			if r.Checks["charts"] != float64(3) {
				b.Fatalf("%v charts drawn, want 3", r.Checks["charts"])
			}
			shown = append(shown, r.Checks["shownMS"].(float64))
		}
		slices.Sort(shown)
		b.Logf("the overview shown with its charts %v ms after the driver asked for it (a new tab each time)", shown)
		b.ReportMetric(shown[len(shown)/2], "shown-ms")
		for b.Loop() {
		}
	})
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	in, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

// fillCalls appends n invocation events to db's audit chain, spread over
// 300 capabilities, 2.5 % of them failed, the newest now.
func fillCalls(tb testing.TB, db string, n int) int {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	start := time.Now().Add(-24 * time.Hour)
	var tick atomic.Int64
	l := audit.New(st, audit.WithClock(func() time.Time { return start.Add(time.Duration(tick.Add(1)) * 24 * time.Hour / time.Duration(n+1)) }))
	for i := range n {
		code := ""
		if i%40 == 0 {
			code = invoke.CodeUpstreamUnavailable
		}
		rec := invoke.Record{URI: fmt.Sprintf("ossa:synthetic/cap%d@1.0", (i*i)%300), Caller: "agent-a", Binding: "http", DurationMS: float64(i%97)*float64(1+i%7) + 0.5, Code: code,
			Attempts: []invoke.Attempt{{Binding: "http", Attempt: 1, DurationMS: float64(i%97) + 0.4}}}
		l.Enqueue(audit.KindInvocation, rec.Caller, rec.URI, rec)
	}
	if err := l.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return n
}
