package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
	"github.com/caphub/caphub/store/storetest"
)

// testURL returns the database of CAPHUB_TEST_POSTGRES, or skips the test.
func testURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("CAPHUB_TEST_POSTGRES")
	if u == "" {
		tb.Skip("CAPHUB_TEST_POSTGRES not set: skipping PostgreSQL store tests")
	}
	return u
}

// newSchema creates an empty schema caphub_test_<random> in the test
// database, dropped (CASCADE) when the test ends, and returns a URL whose
// search_path selects it.
func newSchema(tb testing.TB) string {
	tb.Helper()
	base := testURL(tb)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("connect to CAPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "caphub_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("CAPHUB_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(tb testing.TB, url string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestMain(m *testing.M) {
	storetest.WriterProcess(func(ctx context.Context, url string) (registry.Store, error) { return Open(ctx, url) })
	code := m.Run()
	closeBenchStore()
	os.Exit(code)
}

func TestStore(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) registry.Store { return open(t, newSchema(t)) })
}

func TestDocs(t *testing.T) {
	testURL(t)
	storetest.RunDocs(t, func(t *testing.T) registry.DocStore { return open(t, newSchema(t)) })
}

func TestAudit(t *testing.T) {
	testURL(t)
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditTarget {
		url := newSchema(t)
		s := open(t, url)
		return storetest.AuditTarget{
			Store:   s,
			Exec:    func(ctx context.Context, q string) error { _, err := s.pool.Exec(ctx, q); return err },
			Replica: func(t *testing.T) chain.Store { return open(t, url) },
		}
	})
}

func record(domain, name, version string) registry.Record {
	v := capability.MustParseVersion(version)
	return storetest.NewRecord(capability.Definition{
		URI: capability.NewURI("ossa", domain, name, v).String(), Name: name, Domain: domain, Version: version,
		Stability: capability.StabilityStable, Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	})
}

func nextEvent(t *testing.T, name string, ch <-chan registry.Event) registry.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", name)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event within 10s", name)
	}
	return registry.Event{}
}

// TestTwoStores checks that two Stores on one schema (two replicas) see
// each other's writes at once and receive each other's events.
func TestTwoStores(t *testing.T) {
	url := newSchema(t)
	a, b := open(t, url), open(t, url)
	evA, err := a.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	evB, err := b.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r1 := record("text", "echo", "1.0.0")
	if _, err := a.Put(t.Context(), []registry.Record{r1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), r1.Key); err != nil {
		t.Errorf("b does not see a's write: %v", err)
	}
	r2 := record("text", "echo", "1.1.0")
	if _, err := b.Put(t.Context(), []registry.Record{r2}); err != nil {
		t.Fatal(err)
	}
	if p, err := a.List(t.Context(), registry.ListFilter{Name: "echo"}); err != nil || len(p.Items) != 1 || p.Items[0].Key != r2.Key {
		t.Errorf("a's latest of echo = %+v, %v; want b's 1.1.0", p.Items, err)
	}
	if _, err := b.Deprecate(t.Context(), []registry.Deprecation{{Key: r1.Key, DeprecatedBy: "ossa:text/echo@1.1"}}); err != nil {
		t.Fatal(err)
	}
	want := []registry.Event{
		{Kind: registry.EventRegistered, Key: r1.Key},
		{Kind: registry.EventRegistered, Key: r2.Key},
		{Kind: registry.EventDeprecated, Key: r1.Key},
	}
	for name, ch := range map[string]<-chan registry.Event{"a": evA, "b": evB} {
		for _, w := range want {
			if e := nextEvent(t, name, ch); e != w {
				t.Errorf("%s: event %+v, want %+v", name, e, w)
			}
		}
	}
	// A conflict through the other replica.
	changed := r1
	changed.Digest = "other"
	if _, err := b.Put(t.Context(), []registry.Record{changed}); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("b.Put of other content under a's version: %v; want ErrConflict", err)
	}
}

// TestSchemasIsolated checks that a store sees neither the data nor the
// events of another schema in the same database.
func TestSchemasIsolated(t *testing.T) {
	a, b := open(t, newSchema(t)), open(t, newSchema(t))
	evB, err := b.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := record("text", "echo", "1.0.0")
	if _, err := a.Put(t.Context(), []registry.Record{r}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), r.Key); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("another schema's record is visible: %v", err)
	}
	r2 := record("text", "other", "1.0.0")
	if _, err := b.Put(t.Context(), []registry.Record{r2}); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, "b", evB); e.Key != r2.Key {
		t.Errorf("b received %+v, want only its own %s", e, r2.Key)
	}
}

// TestConcurrentOpen starts several replicas on one new schema at once: the
// advisory lock must let exactly one apply the migrations.
func TestConcurrentOpen(t *testing.T) {
	url := newSchema(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(t.Context(), url)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
	s := open(t, url)
	var n int
	migs, _ := migrate.Load(migrationFiles)
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migs) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(migs))
	}
}

// TestConcurrentProcesses races Puts of one version from several processes
// (each with its own pool) on one schema.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	url := newSchema(t)
	s := open(t, url)
	storetest.ConcurrentProcesses(t, s, url, 4, 4)
}

// TestWatchConnectionLost kills the LISTEN connection: watchers must see
// their channel closed (they may have missed events) and a new Watch must
// work again.
func TestWatchConnectionLost(t *testing.T) {
	s := open(t, newSchema(t))
	ch, err := s.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query = $1`, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the LISTEN connection: killed %d, %v", killed, err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after the connection was lost; want the channel closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch channel not closed within 10s of losing the connection")
	}
	ch, err = s.Watch(t.Context())
	if err != nil {
		t.Fatalf("Watch after the connection was lost: %v", err)
	}
	r := record("text", "echo", "1.0.0")
	if _, err := s.Put(t.Context(), []registry.Record{r}); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, "rewatch", ch); e.Key != r.Key {
		t.Errorf("event %+v, want %s", e, r.Key)
	}
}

func TestOpenErrors(t *testing.T) {
	base := testURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "caphub_no_such_schema")
	u.RawQuery = q.Encode()
	for name, target := range map[string]string{
		"missing schema": u.String(),
		"bad url":        "postgres://%zz",
		"no server":      "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2",
	} {
		s, err := Open(t.Context(), target)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

var (
	benchOnce   sync.Once
	benchStore  *Store
	benchLoaded []registry.Record
	benchDrop   func()
)

// loadedStore returns a store pre-loaded with storetest.BenchSize()
// synthetic capabilities, shared by the benchmarks, in a schema dropped
// when the benchmarks end.
func loadedStore(b *testing.B) (*Store, []registry.Record) {
	base := testURL(b)
	benchOnce.Do(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			b.Fatal(err)
		}
		schema := "caphub_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			b.Fatal(err)
		}
		conn.Close(ctx)
		benchDrop = func() {
			conn, err := pgx.Connect(ctx, base)
			if err == nil {
				conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
				conn.Close(ctx)
			}
		}
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		q.Set("application_name", schema) // for backendCPU
		u.RawQuery = q.Encode()
		s, err := Open(ctx, u.String())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		recs, err := storetest.Load(ctx, s, storetest.BenchSize())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		b.Logf("loaded %d capabilities in %v", len(recs), time.Since(start))
		benchStore, benchLoaded = s, recs
	})
	if benchStore == nil {
		b.Fatal("the benchmark store failed to load")
	}
	return benchStore, benchLoaded
}

func closeBenchStore() {
	if benchStore != nil {
		benchStore.Close()
	}
	if benchDrop != nil {
		benchDrop()
	}
}

func BenchmarkPut(b *testing.B) {
	s, _ := loadedStore(b)
	storetest.BenchPut(b, s)
}

func BenchmarkGet(b *testing.B) {
	s, loaded := loadedStore(b)
	storetest.BenchGet(b, s, loaded)
}

func BenchmarkVersions(b *testing.B) {
	s, loaded := loadedStore(b)
	storetest.BenchVersions(b, s, loaded)
}

func BenchmarkSearch(b *testing.B) {
	s, _ := loadedStore(b)
	storetest.BenchSearch(b, s)
}

func BenchmarkList(b *testing.B) {
	s, _ := loadedStore(b)
	storetest.BenchList(b, s)
}

func BenchmarkPrune(b *testing.B) {
	storetest.BenchPrune(b, open(b, newSchema(b)))
}

func BenchmarkPruneAudit(b *testing.B) {
	storetest.BenchPruneAudit(b, open(b, newSchema(b)))
}

// BenchmarkAppendAudit appends audit events to a fresh schema in
// transactions of 1, 8 and 64 events.
func BenchmarkAppendAudit(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			storetest.BenchAppendAudit(b, open(b, newSchema(b)), n)
		})
	}
}

// TestService runs the registry service over stores on one schema, as
// replicas of caphub serve do.
func TestService(t *testing.T) {
	testURL(t)
	storetest.RunService(t, func(t *testing.T) string { return newSchema(t) },
		func(ctx context.Context, url string) (registry.Store, error) { return Open(ctx, url) })
}

// BenchmarkRegister registers through a Service with the audit recorder
// from 32 concurrent callers into the loaded schema; with the server on
// this machine, it reports the CPU its backends used too.
func BenchmarkRegister(b *testing.B) {
	s, loaded := loadedStore(b)
	storetest.BenchRegister(b, s, loaded, backendCPU(s))
}

// backendCPU returns what sums the CPU time used by the PostgreSQL backends
// of s's connections, read from /proc: ok is false when the server is not
// on this machine (or not readable). A backend counts from when it is
// first seen; one that ends keeps what it had used when last seen.
func backendCPU(s *Store) func() (time.Duration, bool) {
	seen := map[int]time.Duration{}
	return func() (time.Duration, bool) {
		rows, err := s.pool.Query(context.Background(),
			`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = current_setting('application_name')`)
		if err != nil {
			return 0, false
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return 0, false
		}
		for _, pid := range pids {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return 0, false
			}
			// Fields 14 and 15, after the command in parentheses: utime
			// and stime in clock ticks (USER_HZ, 100 on Linux).
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) < 13 {
				return 0, false
			}
			u, err1 := strconv.ParseInt(f[11], 10, 64)
			st, err2 := strconv.ParseInt(f[12], 10, 64)
			if err1 != nil || err2 != nil {
				return 0, false
			}
			seen[pid] = time.Duration(u+st) * 10 * time.Millisecond
		}
		var sum time.Duration
		for _, d := range seen {
			sum += d
		}
		return sum, true
	}
}
