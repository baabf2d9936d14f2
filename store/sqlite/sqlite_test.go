package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
	"github.com/caphub/caphub/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.WriterProcess(func(ctx context.Context, path string) (registry.Store, error) { return Open(ctx, path) })
	code := m.Run()
	closeBenchStore()
	os.Exit(code)
}

func open(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return open(t, filepath.Join(t.TempDir(), "caphub.db")) })
}

func TestStoreInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return open(t, ":memory:") })
}

func TestDocs(t *testing.T) {
	storetest.RunDocs(t, func(t *testing.T) registry.DocStore { return open(t, filepath.Join(t.TempDir(), "caphub.db")) })
}

func TestAudit(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditTarget {
		path := filepath.Join(t.TempDir(), "caphub.db")
		s := open(t, path)
		return storetest.AuditTarget{
			Store:   s,
			Exec:    func(ctx context.Context, q string) error { _, err := s.writer.ExecContext(ctx, q); return err },
			Replica: func(t *testing.T) chain.Store { return open(t, path) },
		}
	})
}

func TestAuditInMemory(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditTarget {
		s := open(t, ":memory:")
		return storetest.AuditTarget{
			Store: s,
			Exec:  func(ctx context.Context, q string) error { _, err := s.writer.ExecContext(ctx, q); return err },
		}
	})
}

func TestDocsInMemory(t *testing.T) {
	storetest.RunDocs(t, func(t *testing.T) registry.DocStore { return open(t, ":memory:") })
}

func record(domain, name, version string) registry.Record {
	v := capability.MustParseVersion(version)
	return storetest.NewRecord(capability.Definition{
		URI: capability.NewURI("ossa", domain, name, v).String(), Name: name, Domain: domain, Version: version,
		Stability: capability.StabilityStable, Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	})
}

// TestReopen checks that data survives closing, that migrations run once,
// and that missing parent directories are created.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "caphub.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open in a missing directory: %v", err)
	}
	rec := record("text", "echo", "1.0.0")
	if _, err := s.Put(t.Context(), []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	if _, err := s.Get(t.Context(), rec.Key); err != nil {
		t.Errorf("Get after reopening: %v", err)
	}
	var n int
	var mode string
	migs, _ := migrate.Load(migrationFiles)
	if err := s.reader.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migs) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(migs))
	}
	if err := s.reader.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
	// No connection maps the file (each mapping counts in the RSS), and a
	// reader's page cache is small.
	for _, c := range []struct {
		db    *sql.DB
		name  string
		cache string
	}{{s.reader, "reader", readerCache}, {s.writer, "writer", writerCache}} {
		var mmap int64
		var cache string
		if err := c.db.QueryRowContext(t.Context(), `PRAGMA mmap_size`).Scan(&mmap); err != nil || mmap != 0 {
			t.Errorf("the %s's mmap_size = %d (%v), want 0", c.name, mmap, err)
		}
		if err := c.db.QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&cache); err != nil || cache != c.cache {
			t.Errorf("the %s's cache_size = %s (%v), want %s", c.name, cache, err, c.cache)
		}
	}
}

// TestSchemaTooNew checks that a database migrated by a newer caphub is
// refused with a message saying what to do.
func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caphub.db")
	s := open(t, path)
	if _, err := s.writer.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "upgrade caphub") {
		t.Errorf("Open of a newer schema: %v; want an error saying to upgrade", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("not a database, just text that is long enough to be read as a header........"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"empty":          "",
		"directory":      dir,
		"under a file":   filepath.Join(file, "x.db"),
		"not a database": file,
	} {
		s, err := Open(t.Context(), path)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open(%q) succeeded", name, path)
			continue
		}
		t.Logf("%s: %v", name, err)
		if path != "" && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the path", name, err)
		}
	}
}

// TestSharedFile checks that two Stores on one file see each other's writes
// and Watch events, and that closing one leaves the other's watchers alone.
func TestSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caphub.db")
	a, b := open(t, path), open(t, path)
	evA, err := a.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	evB, err := b.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rec := record("text", "echo", "1.0.0")
	if _, err := a.Put(t.Context(), []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), rec.Key); err != nil {
		t.Errorf("the other store does not see the write: %v", err)
	}
	want := registry.Event{Kind: registry.EventRegistered, Key: rec.Key}
	for name, ch := range map[string]<-chan registry.Event{"writer": evA, "other": evB} {
		select {
		case e := <-ch:
			if e != want {
				t.Errorf("%s store: event %+v, want %+v", name, e, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s store: no event", name)
		}
	}
	a.Close()
	if _, err := b.Deprecate(t.Context(), []registry.Deprecation{{Key: rec.Key}}); err != nil {
		t.Fatal(err)
	}
	select {
	case e, ok := <-evB:
		if !ok || e.Kind != registry.EventDeprecated {
			t.Errorf("after the other store closed: %+v, %v; want the deprecation", e, ok)
		}
	case <-time.After(5 * time.Second):
		t.Error("no event after the other store closed")
	}
	if _, ok := <-evA; ok {
		t.Error("the closed store's watcher still receives")
	}
}

// TestConcurrentOpen opens one new file from several goroutines at once:
// the migrations must be applied exactly once and every Open succeed.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caphub.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(t.Context(), path)
			if err == nil {
				_, err = s.Put(t.Context(), []registry.Record{record("text", "echo", "1.0.0")})
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
}

// TestConcurrentProcesses races Puts of one version from several processes
// on one file.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "caphub.db")
	s := open(t, path)
	storetest.ConcurrentProcesses(t, s, path, 4, 4)
}

// TestSearchSyntaxSafe checks the FTS5 query built from hostile text.
func TestSearchSyntaxSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`scan code`, `"scan" "code"*`},
		{`"foo`, `"foo"*`},
		{`AND OR (`, ``},
		{`the scanner`, `"scanner"*`},
		{`Ünïcode_NAME`, `"ünïcode" "name"*`},
		{`x.y-z*w`, `"x" "y" "z" "w"*`},
		{`x x X`, `"x"*`},
	} {
		if got := matchQuery(tt.in); got != tt.want {
			t.Errorf("matchQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClosed(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "caphub.db"))
	s.Close()
	if _, err := s.Watch(t.Context()); err == nil {
		t.Error("Watch after Close: no error")
	}
	if _, err := s.Put(t.Context(), []registry.Record{record("a", "b", "1.0.0")}); err == nil || errors.Is(err, registry.ErrConflict) {
		t.Errorf("Put after Close: %v", err)
	}
}

var (
	benchOnce   sync.Once
	benchStore  *Store
	benchLoaded []registry.Record
	benchDir    string
)

// loadedStore returns a store pre-loaded with storetest.BenchSize()
// synthetic capabilities, shared by the benchmarks.
func loadedStore(b *testing.B) (*Store, []registry.Record) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "caphub-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		s, err := Open(context.Background(), filepath.Join(dir, "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		recs, err := storetest.Load(context.Background(), s, storetest.BenchSize())
		if err != nil {
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
	if benchDir != "" {
		os.RemoveAll(benchDir)
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
	storetest.BenchPrune(b, open(b, filepath.Join(b.TempDir(), "caphub.db")))
}

func BenchmarkPruneAudit(b *testing.B) {
	storetest.BenchPruneAudit(b, open(b, filepath.Join(b.TempDir(), "caphub.db")))
}

// BenchmarkAppendAudit appends audit events to a SQLite file (WAL, as
// caphub serve runs it) in transactions of 1, 8 and 64 events.
func BenchmarkAppendAudit(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			storetest.BenchAppendAudit(b, open(b, filepath.Join(b.TempDir(), "caphub.db")), n)
		})
	}
}

// TestService runs the registry service over stores on one file, as
// caphub serve and a second process on the same file do.
func TestService(t *testing.T) {
	storetest.RunService(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "caphub.db") },
		func(ctx context.Context, path string) (registry.Store, error) { return Open(ctx, path) })
}

// BenchmarkRegister registers through a Service with the audit recorder
// from 32 concurrent callers into the loaded store.
func BenchmarkRegister(b *testing.B) {
	s, loaded := loadedStore(b)
	storetest.BenchRegister(b, s, loaded, nil)
}
