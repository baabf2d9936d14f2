// Command registry is the registry's load benchmark (issue: registry at
// scale). It loads N synthetic capabilities (storetest.Synthetic: varied text
// over 50 domains) through registry.Service into a fresh SQLite file and,
// when a PostgreSQL URL is given, a fresh PostgreSQL schema, then measures:
//
//   - register throughput (batches through the service: validation,
//     inference, version rules, store);
//   - resolve latency p50/p99 over random URIs;
//   - search latency p50/p95 over random one- and two-word queries and
//     phrases: the Service's search index and the store's own search,
//     alternating, and the time the index takes to build;
//   - with -http, `caphub serve` (the real binary, built here) on the SQLite
//     file: GET /registry/capabilities/{domain}/{name}@{version} from C
//     concurrent clients on loopback for a fixed time, throughput and p99, and
//     the server's RSS (VmRSS and peak VmHWM).
//
// Run: go run ./bench/registry -n 100000 -http
// (PostgreSQL too: add -postgres postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
	"github.com/jackc/pgx/v5"
)

func main() {
	n := flag.Int("n", 100000, "capabilities to load")
	batch := flag.Int("batch", 1000, "definitions per registration batch")
	resolves := flag.Int("resolves", 20000, "resolve calls to time")
	searches := flag.Int("searches", 2000, "search calls to time")
	pgURL := flag.String("postgres", os.Getenv("CAPHUB_TEST_POSTGRES"), "PostgreSQL URL (empty: SQLite only)")
	doHTTP := flag.Bool("http", false, "also measure `caphub serve` over HTTP with concurrent clients")
	clients := flag.Int("clients", 32, "concurrent HTTP clients")
	duration := flag.Duration("duration", 10*time.Second, "HTTP load duration")
	reuse := flag.String("sqlite", "", "SQLite file to use; when it already holds the capabilities, loading is skipped (for repeated runs)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the measured queries")
	pgSchema := flag.String("pg-schema", "", "PostgreSQL schema to use and keep (loading is skipped when it holds the capabilities); default: a fresh one, dropped at the end")
	flag.Parse()

	ctx := context.Background()
	defs := storetest.Synthetic(*n, 1)
	dir, err := os.MkdirTemp("", "caphub-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "caphub.db")
	if *reuse != "" {
		dbPath = *reuse
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		profileFile = f
	}

	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("## SQLite, %d capabilities\n\n", *n)
	run(ctx, st, defs, *batch, *resolves, *searches)
	st.Close()

	if *pgURL != "" {
		schema := fmt.Sprintf("caphub_bench_%d", time.Now().UnixNano())
		conn, err := pgx.Connect(ctx, *pgURL)
		if err != nil {
			log.Fatal(err)
		}
		if *pgSchema != "" {
			schema = *pgSchema
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
				log.Fatal(err)
			}
		} else {
			if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
				log.Fatal(err)
			}
			defer conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		}
		sep := "?"
		if strings.Contains(*pgURL, "?") {
			sep = "&"
		}
		pst, err := postgres.Open(ctx, *pgURL+sep+"search_path="+schema)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\n## PostgreSQL, %d capabilities\n\n", *n)
		run(ctx, pst, defs, *batch, *resolves, *searches)
		pst.Close()
	}

	if *doHTTP {
		fmt.Printf("\n## caphub serve (SQLite), GET one version, %d clients, %s\n\n", *clients, *duration)
		httpLoad(defs, dbPath, *clients, *duration)
	}
}

// profileFile receives a CPU profile of the queries, when asked for.
var profileFile *os.File

func run(ctx context.Context, st registry.Store, defs []capability.Definition, batch, resolves, searches int) {
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	fmt.Printf("| measure | value |\n|---|---|\n")
	if p, err := st.List(ctx, registry.ListFilter{AllVersions: true, Limit: 1}); err == nil && p.Total >= len(defs) {
		fmt.Printf("| register | (already loaded: %d) |\n", p.Total)
	} else {
		start := time.Now()
		for i := 0; i < len(defs); i += batch {
			end := min(i+batch, len(defs))
			if _, err := svc.RegisterBatch(ctx, defs[i:end]); err != nil {
				log.Fatalf("register batch at %d: %v", i, err)
			}
		}
		took := time.Since(start)
		fmt.Printf("| register (batches of %d) | %.0f capabilities/s (%s for %d) |\n", batch, float64(len(defs))/took.Seconds(), took.Round(time.Millisecond), len(defs))
	}
	if profileFile != nil {
		pprof.StartCPUProfile(profileFile)
		defer pprof.StopCPUProfile()
	}

	r := rand.New(rand.NewSource(2))
	lat := make([]time.Duration, 0, resolves)
	for i := 0; i < resolves; i++ {
		d := defs[r.Intn(len(defs))]
		u := capability.MustParseURI(d.URI)
		t0 := time.Now()
		_, err := svc.Resolve(ctx, u.String())
		lat = append(lat, time.Since(t0))
		if err != nil && !strings.Contains(err.Error(), "compatible") {
			log.Fatalf("resolve %s: %v", d.URI, err)
		}
	}
	fmt.Printf("| resolve p50 / p99 | %s / %s |\n", load.Pct(lat, 50), load.Pct(lat, 99))

	searchBoth(ctx, st, r, searches)
}

// searchBoth times the Service's search (package search's index) and the
// store's own full-text search on the same queries, in alternating rounds:
// one- and two-word queries and phrases as agents write them.
func searchBoth(ctx context.Context, st registry.Store, r *rand.Rand, searches int) {
	start := time.Now()
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), registry.WithSearchIndex(true), registry.WithCache())
	if _, err := svc.Search(ctx, registry.SearchQuery{Text: "warm up"}); err != nil {
		log.Fatalf("search index: %v", err)
	}
	fmt.Printf("| search index built (Service start to first answer) | %s |\n", time.Since(start).Round(time.Millisecond))
	words := []string{"scan", "invoice", "message", "secure", "repository", "export", "ticket", "streaming", "quota", "webhook", "vulnerability", "calendar", "report", "tenant", "archive"}
	phrases := []string{"open a new ticket for a customer", "who am I", "send a message to the team", "list the invoices of last month", "scan my repository for vulnerabilities"}
	var idx, own []time.Duration
	for i := 0; i < searches; i++ {
		q := words[r.Intn(len(words))]
		switch r.Intn(3) {
		case 0:
			q += " " + words[r.Intn(len(words))]
		case 1:
			q = phrases[r.Intn(len(phrases))]
		}
		sq := registry.SearchQuery{Text: q, Filter: registry.ListFilter{Limit: 10}}
		t0 := time.Now()
		if _, err := svc.Search(ctx, sq); err != nil {
			log.Fatalf("search %q: %v", q, err)
		}
		idx = append(idx, time.Since(t0))
		t0 = time.Now()
		if _, err := st.Search(ctx, sq); err != nil {
			log.Fatalf("store search %q: %v", q, err)
		}
		own = append(own, time.Since(t0))
	}
	fmt.Printf("| search (10 results) p50 / p95, search index | %s / %s |\n", load.Pct(idx, 50), load.Pct(idx, 95))
	fmt.Printf("| search (10 results) p50 / p95, the store's own full-text search | %s / %s |\n", load.Pct(own, 50), load.Pct(own, 95))
}

func httpLoad(defs []capability.Definition, dbPath string, clients int, duration time.Duration) {
	base, srv, stop := load.Serve(filepath.Dir(dbPath), dbPath)
	defer stop()
	rands := make([]*rand.Rand, clients)
	for c := range rands {
		rands[c] = rand.New(rand.NewSource(int64(c)))
	}
	load.Run(clients, duration, func(hc *http.Client, c int) (*http.Response, error) {
		d := defs[rands[c].Intn(len(defs))]
		return hc.Get(base + "/registry/capabilities/" + d.Domain + "/" + d.Name + "@" + d.Version)
	}).Print()
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", srv.Process.Pid))
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmRSS") || strings.HasPrefix(line, "VmHWM") {
			f := strings.Fields(line)
			fmt.Printf("| server %s | %s %s |\n", strings.TrimSuffix(f[0], ":"), f[1], f[2])
		}
	}
}
