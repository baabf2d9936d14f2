package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// target is caphub on one store: the store opened here, a Service over it
// assembled as `caphub serve` assembles its own (cache, audit recorder, no
// search index), and `caphub serve` on the same database.
type target struct {
	name  string // SQLite, PostgreSQL
	col   col
	db    string // what `caphub serve --db` takes
	store registry.Store
	audit *audit.Log
	svc   *registry.Service
	// idx is a Service with the search index, over a store of its own
	// (Close closes it), made by the first search measurement.
	idx *registry.Service
	srv *load.Server
	// deep is a cursor far into the list of latest versions (list).
	deep string
}

// bench is one run: its configuration, the loaded definitions, the
// targets, the reference and the results.
type bench struct {
	cfg  *config
	ctx  context.Context
	dir  string
	bin  string
	defs []capability.Definition
	// latest holds, per capability, its highest loaded version: the
	// templates of new versions (write).
	latest  []capability.Definition
	targets []*target
	ref     *reference
	peer    *peer
	tab     *table
	writes  *writer
	// schemas are the PostgreSQL schemas this run created (dropped at
	// the end unless -keep).
	schemas  []string
	closers  []func()
	replicaB *load.Server
	closed   sync.Once
}

// quiet is the services' logger: the harness prints its own progress.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// setup loads the stores (and the reference) and starts the servers the
// measurements need.
func setup(cfg *config) (*bench, error) {
	b := &bench{cfg: cfg, ctx: context.Background(), tab: newTable()}
	var err error
	if b.dir, err = os.MkdirTemp("", "caphub-bench-registry"); err != nil {
		return nil, err
	}
	if err := b.setup(); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) setup() error {
	cfg := b.cfg
	b.defs = storetest.Synthetic(cfg.n, 1)
	b.latest = highestVersions(b.defs)
	b.writes = newWriter(b.latest)
	if b.needsServer() {
		b.bin = cfg.caphub
		if b.bin == "" {
			cfg.progress.Printf("building caphub")
			bin, err := load.Build(b.dir)
			if err != nil {
				return err
			}
			b.bin = bin
		}
	}
	dbPath := cfg.sqlitePath
	if dbPath == "" {
		dbPath = filepath.Join(b.dir, "caphub.db")
	}
	if err := b.addTarget("SQLite", colSQLite, dbPath); err != nil {
		return err
	}
	if cfg.pgURL != "" {
		schema, err := b.schema(cfg.pgSchema, "caphub_bench")
		if err != nil {
			return err
		}
		if err := b.addTarget("PostgreSQL", colPG, withSearchPath(cfg.pgURL, schema)); err != nil {
			return err
		}
		if b.wants("resolve", "list", "search", "write") {
			if err := b.setupReference(); err != nil {
				return err
			}
		}
	}
	if cfg.peerURL != "" {
		p, err := newPeer(cfg)
		if err != nil {
			return err
		}
		b.peer = p
	}
	return nil
}

// wants reports whether any of the measurements named runs.
func (b *bench) wants(ms ...string) bool {
	for _, m := range ms {
		if b.cfg.wants(m) {
			return true
		}
	}
	return false
}

// needsServer reports whether a measurement runs over HTTP.
func (b *bench) needsServer() bool { return b.wants("get", "list", "write", "replicas", "batch") }

// addTarget opens db, loads it and starts `caphub serve` on it.
func (b *bench) addTarget(name string, c col, db string) error {
	st, err := openStore(b.ctx, db)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, col: c, db: db, store: st, audit: audit.New(st, audit.WithLogger(quiet))}
	t.svc = registry.NewService(st, registry.WithLogger(quiet), registry.WithRecorder(t.audit), registry.WithCache())
	b.targets = append(b.targets, t)
	if err := b.load(t); err != nil {
		return err
	}
	if b.needsServer() && b.wants("get", "list", "write", "replicas") {
		if t.srv, err = b.serve(t, "serve-"+strings.ToLower(name)); err != nil {
			return err
		}
	}
	return nil
}

// serve starts `caphub serve` on t's database, stopped at the end, and
// waits until its search index is built: a server measured before that
// holds neither the index nor the garbage of its build, and is not the
// server at N capabilities.
func (b *bench) serve(t *target, name string) (*load.Server, error) {
	b.cfg.progress.Printf("starting caphub serve on %s (%s)", t.name, name)
	s, err := load.Start(b.bin, t.db, filepath.Join(b.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, s.Stop)
	if err := waitIndexed(b.ctx, s.Base, indexTimeout); err != nil {
		return nil, fmt.Errorf("caphub serve on %s: %w", t.name, err)
	}
	return s, nil
}

// indexTimeout bounds how long serve waits for a server's search index.
const indexTimeout = 5 * time.Minute

// waitIndexed waits until the server at base answers a search from its
// search index: the hits of an explained search say why they rank (the
// store's own search, which answers until the index is built, does not).
func waitIndexed(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		var page struct {
			Hits []registry.Hit `json:"hits"`
		}
		resp, err := http.Get(base + "/registry/search?q=create&limit=1&explain=true")
		if err == nil {
			err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&page)
			resp.Body.Close()
		}
		switch {
		case err == nil && len(page.Hits) > 0 && len(page.Hits[0].Why) > 0:
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = "the search is answered by the store"
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("its search index was not built within %s (-n too large for this machine?); last: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// openStore opens the store db names, as `caphub serve --db` does.
func openStore(ctx context.Context, db string) (registry.Store, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return postgres.Open(ctx, db)
	}
	return sqlite.Open(ctx, db)
}

// load registers the definitions through t's Service in batches, unless
// the store already holds them; on PostgreSQL it then runs ANALYZE, as an
// operator would after a bulk load.
func (b *bench) load(t *target) error {
	if have, err := stored(b.ctx, t.store, []capability.Definition{b.defs[0], b.defs[len(b.defs)-1]}); err != nil {
		return fmt.Errorf("%s: look for the loaded versions: %w", t.name, err)
	} else if have == 2 {
		b.cfg.progress.Printf("%s already holds the %d versions: not loading", t.name, len(b.defs))
		return nil
	}
	start := time.Now()
	for i := 0; i < len(b.defs); i += b.cfg.loadBatch {
		end := min(i+b.cfg.loadBatch, len(b.defs))
		if _, err := t.svc.RegisterBatch(b.ctx, b.defs[i:end]); err != nil {
			return fmt.Errorf("%s: load batch at %d: %w", t.name, i, err)
		}
		if end%(20*b.cfg.loadBatch) == 0 {
			b.cfg.progress.Printf("%s: loaded %d of %d", t.name, end, len(b.defs))
		}
	}
	took := time.Since(start)
	b.tab.add(fmt.Sprintf("load %d capabilities (Service.RegisterBatch, %d a batch)", len(b.defs), b.cfg.loadBatch), kDuration, t.col, 0, stat{value: float64(took)})
	b.cfg.progress.Printf("%s: loaded %d in %s (%.0f/s)", t.name, len(b.defs), took.Round(time.Millisecond), float64(len(b.defs))/took.Seconds())
	if t.col == colPG {
		return b.analyze(t.db)
	}
	return nil
}

// stored counts the definitions of defs that st holds (by key, from 8
// clients at once): independent of whether a list counts its total.
func stored(ctx context.Context, st registry.Store, defs []capability.Definition) (int, error) {
	var found atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range defs {
		g.Go(func() error {
			k, err := registry.KeyOf(&defs[i])
			if err != nil {
				return err
			}
			_, err = st.Get(ctx, k)
			switch {
			case err == nil:
				found.Add(1)
			case !errors.Is(err, registry.ErrNotFound):
				return err
			}
			return nil
		})
	}
	err := g.Wait()
	return int(found.Load()), err
}

// analyze runs ANALYZE on the schema of the URL (its search_path).
func (b *bench) analyze(url string) error {
	conn, err := pgx.Connect(b.ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(b.ctx)
	_, err = conn.Exec(b.ctx, "ANALYZE")
	return err
}

// schema creates a fresh PostgreSQL schema prefix_TIME (dropped at the
// end unless -keep), or, when keep is set, makes sure that one exists and
// keeps it.
func (b *bench) schema(keep, prefix string) (string, error) {
	conn, err := pgx.Connect(b.ctx, b.cfg.pgURL)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL (-postgres): %w", err)
	}
	defer conn.Close(b.ctx)
	name := keep
	if name == "" {
		name = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	}
	if _, err := conn.Exec(b.ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	if keep == "" && !b.cfg.keep {
		b.schemas = append(b.schemas, name)
	}
	return name, nil
}

// withSearchPath is url with search_path set to schema.
func withSearchPath(url, schema string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// highestVersions returns, per capability of defs, its highest version.
func highestVersions(defs []capability.Definition) []capability.Definition {
	best := map[string]int{}
	var order []string
	for i, d := range defs {
		k := d.Domain + "/" + d.Name
		j, ok := best[k]
		if !ok {
			order = append(order, k)
			best[k] = i
			continue
		}
		if capability.MustParseVersion(defs[j].Version).Less(capability.MustParseVersion(d.Version)) {
			best[k] = i
		}
	}
	out := make([]capability.Definition, len(order))
	for i, k := range order {
		out[i] = defs[best[k]]
	}
	return out
}

// run measures in rounds, then the batch, and prints the table to w.
func (b *bench) run(w io.Writer) error {
	cfg := b.cfg
	steps := []struct {
		name string
		fn   func(round int) error
	}{{"get", b.measureGet}, {"resolve", b.measureResolve}, {"list", b.measureList}, {"search", b.measureSearch},
		{"write", b.measureWrite}, {"replicas", b.measureReplicas}}
	for r := range cfg.rounds {
		for _, s := range steps {
			if !cfg.wants(s.name) {
				continue
			}
			cfg.progress.Printf("round %d of %d: %s", r+1, cfg.rounds, s.name)
			if err := s.fn(r); err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, s.name, err)
			}
		}
	}
	if cfg.wants("batch") {
		for _, t := range b.targets {
			cfg.progress.Printf("batch of %d definitions on %s", cfg.batchDefs, t.name)
			if err := b.measureBatch(t); err != nil {
				return fmt.Errorf("batch on %s: %w", t.name, err)
			}
		}
	}
	b.header(w)
	b.tab.print(w)
	return nil
}

// header says what was measured, where and how.
func (b *bench) header(w io.Writer) {
	cfg := b.cfg
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "## caphub registry at %d capabilities (%d capabilities' latest versions), %d round(s) of %s per target, %d clients\n\n",
		len(b.defs), len(b.latest), cfg.rounds, cfg.duration, cfg.clients)
	fmt.Fprintf(w, "%s, %d CPUs, load average %s. Latency cells: p50 / p95 / p99 · successful operations per second (medians over rounds); ratios are medians of per-round ratios.\n\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
}

// close stops the servers, closes the stores and drops the schemas this
// run created.
func (b *bench) close() { b.closed.Do(b.closeAll) }

func (b *bench) closeAll() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
	for _, t := range b.targets {
		if t.idx != nil {
			t.idx.Close()
		}
		t.audit.Close()
		t.svc.Close()
	}
	b.targets = nil
	if b.ref != nil {
		b.ref.close()
	}
	if len(b.schemas) > 0 {
		if conn, err := pgx.Connect(context.Background(), b.cfg.pgURL); err == nil {
			for _, s := range b.schemas {
				if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
					b.cfg.progress.Printf("drop schema %s: %v", s, err)
				}
			}
			conn.Close(context.Background())
		}
		b.schemas = nil
	}
	if b.cfg.keep {
		b.cfg.progress.Printf("kept %s", b.dir)
	} else if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
