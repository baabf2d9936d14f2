// Package sqlite is the embedded registry.Store: one SQLite file (pure-Go
// driver modernc.org/sqlite, no cgo) in WAL mode, with an FTS5 index ranked
// by BM25 for search.
//
// Writes go through one connection that begins every transaction with BEGIN
// IMMEDIATE, so writers in this process queue in Go and writers in other
// processes wait on the busy timeout instead of failing; reads use a pool of
// read-only connections that WAL lets run alongside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// busyTimeout is how long a connection waits for a lock another process
// holds before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Page cache sizes (SQLite's cache_size: negative is KiB), each
// connection its own. A write rewrites the pages of several indexes and of
// the full-text index: the one writer keeps 8 MiB. A read of one version
// walks a few pages of a B-tree whose upper levels fit in 2 MiB, and the
// kernel's page cache holds the rest of the file: each reader keeps 2 MiB,
// where 8 MiB each held 30 to 60 MiB more of caphub serve's RSS under GET
// load (bench/registry at 100k) for no measurable read speed.
const (
	writerCache = "-8192"
	readerCache = "-2048"
)

// Store is a registry.Store on a SQLite database. It is safe for concurrent
// use; several Stores (in this or other processes) may share one file.
type Store struct {
	path   string  // as given to Open, for messages
	writer *sql.DB // one connection, BEGIN IMMEDIATE
	reader *sql.DB // read-only connections; == writer for :memory:
	hub    *hub
	audit  preparedAudit // the append path's statements, on writer
	put    statements    // Put's statements, on writer
	reads  readStmts     // the reader's frequent queries, prepared

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ registry.Store = (*Store)(nil)

// Open opens (creating it, and its parent directories, when missing) the
// SQLite database at path and brings its schema up to date. path ":memory:"
// opens a private in-memory database, gone when the Store is closed.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite database: the path is empty: give a file path such as ./caphub.db (or :memory: for a private in-memory database)")
	}
	s := &Store{path: path}
	busy := strconv.FormatInt(busyTimeout.Milliseconds(), 10)
	if path == ":memory:" {
		// Every connection to :memory: is a database of its own, so the
		// store keeps exactly one, forever.
		db, err := sql.Open("sqlite", ":memory:?_pragma=foreign_keys(1)&_pragma=busy_timeout("+busy+")&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("open in-memory sqlite database: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		s.writer, s.reader = db, db
		s.hub = newHub("")
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("open sqlite database %s: %w: give a valid file path", path, err)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("open sqlite database %s: create its directory: %w: check that the parent directory is writable", path, err)
		}
		name := "file:" + (&url.URL{Path: abs}).EscapedPath()
		// No mmap: each connection mapped the file's first 32 MiB on its
		// own, and a page mapped by several counts in the process's RSS
		// once per mapping (100 of the 458 MiB of caphub serve under GET
		// load at 100k, bench/registry), for no measurable read speed; the
		// kernel's page cache holds the file either way.
		common := "_pragma=busy_timeout(" + busy + ")&_pragma=foreign_keys(1)&_pragma=mmap_size(0)&_pragma=temp_store(MEMORY)"
		// WAL with synchronous=NORMAL: a committed transaction is in the WAL
		// before Commit returns, so it survives the process being killed
		// (tested with kill -9); only a power loss can drop the last
		// commits. FULL would fsync every commit and cap writes (and so the
		// audit chain, written on every invocation) at the disk's sync rate.
		writer, err := sql.Open("sqlite", name+"?"+common+"&_pragma=cache_size("+writerCache+")&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
		}
		writer.SetMaxOpenConns(1)
		writer.SetMaxIdleConns(1)
		writer.SetConnMaxIdleTime(0)
		writer.SetConnMaxLifetime(0)
		reader, err := sql.Open("sqlite", name+"?"+common+"&_pragma=cache_size("+readerCache+")&_pragma=query_only(1)")
		if err != nil {
			writer.Close()
			return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
		}
		n := max(4, runtime.GOMAXPROCS(0))
		reader.SetMaxOpenConns(n)
		reader.SetMaxIdleConns(n)
		s.writer, s.reader = writer, reader
		s.hub = acquireHub(canonicalPath(abs))
	}
	s.reads.db = s.reader
	// Opening a new file turns it to WAL mode, which needs a lock that
	// SQLite does not wait for: when other connections open it at the same
	// moment, try again until the busy timeout.
	deadline := time.Now().Add(busyTimeout)
	for {
		err := s.writer.PingContext(ctx)
		if err != nil {
			err = fmt.Errorf("open sqlite database %s: %w: check that the path is a writable SQLite file (or a new one in a writable directory)", path, err)
		} else if err = s.migrate(ctx); err == nil {
			if err = s.prepareAudit(ctx); err == nil {
				s.put.path = s.path
				if err = s.put.prepare(ctx, s.writer); err != nil {
					err = fmt.Errorf("open sqlite database %s: %w", s.path, err)
				}
			}
		}
		if err == nil {
			return s, nil
		}
		if !isBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			s.Close()
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY (or one of its extended codes):
// another connection holds a lock.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// canonicalPath resolves symbolic links so that two Stores on the same file
// share one event hub.
func canonicalPath(abs string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return abs
	}
	full := filepath.Join(dir, filepath.Base(abs))
	if resolved, err := filepath.EvalSymlinks(full); err == nil {
		return resolved
	}
	return full
}

// Close closes the database connections and this store's Watch channels. It
// is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.hub != nil {
			s.hub.detach(s)
		}
		s.audit.close()
		s.put.close()
		s.reads.close()
		var errs []error
		if s.reader != nil && s.reader != s.writer {
			errs = append(errs, s.reader.Close())
		}
		if s.writer != nil {
			errs = append(errs, s.writer.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close sqlite database %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// migrate applies the migrations the database lacks, all in one IMMEDIATE
// transaction, so that two processes opening a new file at once apply them
// exactly once.
func (s *Store) migrate(ctx context.Context) error {
	migs, err := migrate.Load(migrationFiles)
	if err != nil {
		return fmt.Errorf("migrate sqlite database %s: %w (a build problem: report it)", s.path, err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate sqlite database %s: begin: %w: check that no other program holds a lock on it", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate sqlite database %s: create schema_migrations: %w", s.path, err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate sqlite database %s: read schema_migrations: %w", s.path, err)
	}
	highest := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate sqlite database %s: read schema_migrations: %w", s.path, err)
		}
		applied[v] = true
		highest = max(highest, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrate sqlite database %s: read schema_migrations: %w", s.path, err)
	}
	if known := migs[len(migs)-1].Version; highest > known {
		return fmt.Errorf("open sqlite database %s: its schema is version %d, newer than this caphub knows (%d): upgrade caphub", s.path, highest, known)
	}
	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate sqlite database %s to schema version %d (%s): %w", s.path, m.Version, m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, formatTime(time.Now())); err != nil {
			return fmt.Errorf("migrate sqlite database %s: record schema version %d: %w", s.path, m.Version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate sqlite database %s: commit: %w", s.path, err)
	}
	return nil
}

// timeLayout stores times as sortable UTC text with microseconds, the
// precision PostgreSQL keeps too.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}
