package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/registry"
)

// DefaultBenchSize is how many synthetic capabilities the benchmarks load.
const DefaultBenchSize = 10000

// BenchSize returns the number of capabilities benchmarks pre-load:
// CAPHUB_BENCH_N when set (e.g. 100000), else DefaultBenchSize.
func BenchSize() int {
	if n, err := strconv.Atoi(os.Getenv("CAPHUB_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return DefaultBenchSize
}

// Load puts Synthetic(n, 1) into s in batches of 100 and returns the
// records.
func Load(ctx context.Context, s registry.Store, n int) ([]registry.Record, error) {
	defs := Synthetic(n, 1)
	recs := make([]registry.Record, len(defs))
	for i, d := range defs {
		recs[i] = NewRecord(d)
	}
	for i := 0; i < len(recs); i += 100 {
		if _, err := s.Put(ctx, recs[i:min(i+100, len(recs))]); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// BenchPut measures Put of batches of 100 new versions into s.
func BenchPut(b *testing.B, s registry.Store) {
	template := Synthetic(100, 2)
	prefix := make([]byte, 4)
	rand.Read(prefix)
	run := hex.EncodeToString(prefix)
	base := make([]registry.Record, len(template))
	for i, d := range template {
		base[i] = NewRecord(d)
	}
	batch := make([]registry.Record, len(base))
	n := 0
	for b.Loop() {
		n++
		suffix := "_b" + run + "_" + strconv.Itoa(n)
		for i, r := range base {
			r.Key.Name += suffix
			r.Definition.Name = r.Key.Name
			r.Digest += suffix // opaque to the store
			batch[i] = r
		}
		if _, err := s.Put(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*len(batch)), "ns/record")
}

// BenchGet measures Get of loaded versions.
func BenchGet(b *testing.B, s registry.Store, loaded []registry.Record) {
	i := 0
	for b.Loop() {
		r := loaded[(i*7919)%len(loaded)]
		i++
		if _, err := s.Get(b.Context(), r.Key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchVersions measures Versions of loaded capabilities.
func BenchVersions(b *testing.B, s registry.Store, loaded []registry.Record) {
	i := 0
	for b.Loop() {
		k := loaded[(i*7919)%len(loaded)].Key
		i++
		vs, err := s.Versions(b.Context(), k.Scheme, k.Domain, k.Name)
		if err != nil || len(vs) == 0 {
			b.Fatalf("Versions(%s) = %d, %v", k, len(vs), err)
		}
	}
}

// benchQueries are the texts BenchSearch cycles through.
var benchQueries = []registry.SearchQuery{
	{Text: "scan vulnerability"},
	{Text: "send message"},
	{Text: "list issues", Filter: registry.ListFilter{Domain: "github"}},
	{Text: "invoice"},
	{Text: "weather forecast"},
	{Text: "export report", Filter: registry.ListFilter{BindingType: "http"}},
	{Text: "encrypted file"},
	{Text: "summ"},
}

// BenchSearch measures ranked Search, 20 results a page.
func BenchSearch(b *testing.B, s registry.Store) {
	i := 0
	for b.Loop() {
		q := benchQueries[i%len(benchQueries)]
		i++
		q.Filter.Limit = 20
		if _, err := s.Search(b.Context(), q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchList measures List of the latest versions: walking 50 a page
// with the cursor (and starting again at the end), and the first page of
// registry.DefaultPageSize without and with its total counted
// (CountTotal), whose cost grows with the registry.
func BenchList(b *testing.B, s registry.Store) {
	b.Run("walk", func(b *testing.B) {
		cursor := ""
		for b.Loop() {
			p, err := s.List(b.Context(), registry.ListFilter{Limit: 50, Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			cursor = p.NextCursor
		}
	})
	for _, count := range []bool{false, true} {
		name := "first"
		if count {
			name = "first+total"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.List(b.Context(), registry.ListFilter{CountTotal: count}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchPrune measures how fast Prune removes events from s's audit chain:
// each op appends a batch of chain.MaxPruneBatch invocation events of
// about 0.5 KB (clock stopped), then prunes them all but the newest (one
// PruneAudit transaction, checked first as Prune checks). It reports
// events pruned per second; ns/op is the time one batch holds the chain's
// lock and reads it beforehand.
func BenchPrune(b *testing.B, s chain.Store) {
	l := audit.New(s)
	defer l.Close()
	data := map[string]any{"uri": "ossa:everruns/add@1.0", "version": "1.0.0", "caller": "bench-agent", "binding": "native",
		"attempts": []map[string]any{{"binding": "native", "attempt": 1, "duration_ms": 0.004}}, "duration_ms": 0.005,
		"input": strings.Repeat("x", 300)}
	var pruned int64
	for b.Loop() {
		b.StopTimer()
		for range chain.MaxPruneBatch {
			l.Enqueue(audit.KindInvocation, "bench-agent", "ossa:everruns/add@1.0", data)
		}
		if err := l.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := l.Prune(b.Context(), audit.Retention{MaxEvents: 1})
		if err != nil {
			b.Fatal(err)
		}
		pruned += res.Pruned
	}
	b.ReportMetric(float64(pruned)/b.Elapsed().Seconds(), "events/s")
}

// BenchPruneAudit measures one PruneAudit transaction of
// chain.MaxPruneBatch events alone (events appended with the clock
// stopped): ns/op is how long a batch holds the chain's lock, which every
// appender waits for.
func BenchPruneAudit(b *testing.B, s chain.Store) {
	l := audit.New(s)
	defer l.Close()
	data := map[string]any{"caller": "bench-agent", "input": strings.Repeat("x", 400)}
	for b.Loop() {
		b.StopTimer()
		for range chain.MaxPruneBatch {
			l.Enqueue(audit.KindInvocation, "bench-agent", "ossa:everruns/add@1.0", data)
		}
		if err := l.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cp, err := s.PruneAudit(b.Context(), 1<<62, func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error) {
			e := chain.Event{Seq: last.Seq + 1, Time: last.Time, Kind: "bench_cut", Data: []byte(`{}`), PrevHash: last.Hash}
			e.Hash = audit.Hash(e)
			return e, nil
		})
		if err != nil || cp == nil || cp.Pruned != chain.MaxPruneBatch {
			b.Fatalf("PruneAudit = %+v, %v; want %d events pruned", cp, err, chain.MaxPruneBatch)
		}
	}
}

// benchEventData is the Data of BenchAppendAudit's events: about the size
// of an invocation record.
var benchEventData = []byte(`{"attempts":[{"attempt":1,"binding":"native","duration_ms":0.004}],"binding":"native","caller":"bench-agent",` +
	`"code":"","duration_ms":0.005,"time":"2025-01-02T03:04:05.123456Z","uri":"ossa:everruns/add@1.0","version":"1.0.0"}`)

// BenchAppendAudit measures AppendAuditBatch of batch events at a time
// (batch 1 is an append on its own): each op is one transaction, its
// events chained and hashed as audit.Log does. It reports events/s and the
// CPU this process spends per event (cpu-µs/event: the client's side only;
// a database server's own CPU is not in it).
func BenchAppendAudit(b *testing.B, s chain.Store, batch int) {
	ctx := b.Context()
	link := func(last *chain.Event, _ int) (chain.Event, error) {
		e := chain.Event{Seq: 1, Time: time.Now().UTC().Truncate(time.Microsecond), Kind: audit.KindInvocation,
			Actor: "bench-agent", Capability: "ossa:everruns/add@1.0", Data: benchEventData, PrevHash: audit.GenesisHash}
		if last != nil {
			e.Seq, e.PrevHash = last.Seq+1, last.Hash
			if last.Time.After(e.Time) {
				e.Time = last.Time
			}
		}
		e.Hash = audit.Hash(e)
		return e, nil
	}
	// One transaction first, so that the timed ones all follow an event.
	if _, err := s.AppendAuditBatch(ctx, 1, link); err != nil {
		b.Fatal(err)
	}
	cpu0, cpuOK := cpuTime()
	n := 0
	for b.Loop() {
		evs, err := s.AppendAuditBatch(ctx, batch, link)
		if err != nil || len(evs) != batch {
			b.Fatalf("AppendAuditBatch(%d) = %d events, %v", batch, len(evs), err)
		}
		n += batch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/event")
	}
}

// benchRegisterClients is how many callers BenchRegister registers from at
// once, as the acceptance's "32 concurrent registrations".
const benchRegisterClients = 32

// BenchRegister measures registrations through a registry.Service with
// the audit recorder over s, as caphub serve runs it, from 32 concurrent
// callers, one definition a call, as bench/registry writes: every other
// one a new capability (a copy of a loaded one under a new name), the
// others a new version (9.0.N) of a loaded one. It reports
// registrations/s; ns/op is the wall time of one registration divided by
// the concurrency; and the CPU time of a registration, in this process
// (cpu-µs/op) and, when serverCPU reads it (nil: not), in the database
// server (server-cpu-µs/op): on a loaded machine they vary much less than
// the wall time.
func BenchRegister(b *testing.B, s registry.Store, loaded []registry.Record, serverCPU func() (time.Duration, bool)) {
	l := audit.New(s)
	defer l.Close()
	svc := registry.NewService(s, registry.WithRecorder(l), registry.WithLogger(slog.New(slog.DiscardHandler)))
	prefix := make([]byte, 4)
	rand.Read(prefix)
	run := hex.EncodeToString(prefix)
	var seq atomic.Int64
	b.SetParallelism((benchRegisterClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	if serverCPU == nil {
		serverCPU = func() (time.Duration, bool) { return 0, false }
	}
	cpu0, cpuOK := cpuTime()
	server0, serverOK := serverCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			d := loaded[int(n*7919)%len(loaded)].Definition
			if n%2 == 0 {
				d = Renamed(d, fmt.Sprintf("%s_r%s_%d", d.Name, run, n), d.Version)
			} else {
				d = Renamed(d, d.Name, "9.0."+strconv.FormatInt(n, 10))
				d.Description = fmt.Sprintf("%s Revision %d.", d.Description, n)
			}
			if _, err := svc.Register(b.Context(), d); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
	if server1, ok := serverCPU(); ok && serverOK {
		b.ReportMetric(float64(server1-server0)/float64(time.Microsecond)/float64(b.N), "server-cpu-µs/op")
	}
}
