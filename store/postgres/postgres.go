// Package postgres is the registry.Store for a shared PostgreSQL database
// (pgx), for any number of caphub replicas: versions are unique through a
// constraint, search ranks a weighted tsvector with ts_rank (cheaper than
// ts_rank_cd over thousands of matches), and replicas learn of each other's
// changes through LISTEN/NOTIFY.
//
// The store lives in the current schema (the first of search_path), so one
// database can hold several registries, or a test its own schema: add
// search_path=NAME to the URL.
package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a registry.Store on a PostgreSQL schema. It is safe for
// concurrent use, and any number of Stores, in any number of processes, may
// share a schema.
type Store struct {
	pool    *pgxpool.Pool
	where   string // the database and schema, for messages (no password)
	schema  string
	channel string // NOTIFY channel of this schema

	hub      *hub
	listenMu sync.Mutex
	listener *listener // nil until the first Watch, and after it failed

	head headCache // the chain's last event as this store's last append left it

	closed    atomic.Bool
	closeOnce sync.Once
}

var _ registry.Store = (*Store)(nil)

// Open connects to the PostgreSQL database at url (postgres://user@host/db
// ?search_path=schema&…, or key=value form) and brings the schema up to
// date. The schema must exist.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres database: parse the URL: %w: write it as postgres://user[:password]@host[:port]/database[?search_path=schema]", err)
	}
	where := describe(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres database %s: %w", where, err)
	}
	s := &Store{pool: pool, where: where, hub: newHub()}
	var schema *string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres database %s: %w: check that the server is running and the URL, user and password are right", where, err)
	}
	if schema == nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres database %s: no schema of the search_path (%q) exists: create it first (CREATE SCHEMA name) or fix search_path", where, cfg.ConnConfig.RuntimeParams["search_path"])
	}
	s.schema = *schema
	s.where = where + " schema " + s.schema
	s.channel = channelName(s.schema)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// describe names the server and database of cfg, without credentials.
func describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return (&url.URL{Scheme: "postgres", Host: c.Host + ":" + strconv.Itoa(int(c.Port)), Path: "/" + c.Database}).String()
}

// channelName is the NOTIFY channel of a schema: "caphub_" and the schema
// name, or a hash of it when that would be longer than PostgreSQL's 63-byte
// identifiers.
func channelName(schema string) string {
	if name := "caphub_" + schema; len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(schema))
	return "caphub_" + hex.EncodeToString(sum[:16])
}

// Close stops the listener, closes this store's Watch channels and the
// connection pool. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.listenMu.Lock()
		if s.listener != nil {
			s.listener.stop()
			s.listener = nil
		}
		s.listenMu.Unlock()
		s.hub.haltAll()
		s.pool.Close()
	})
	return nil
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("postgres store %s is closed", s.where)
	}
	return nil
}

// migrate applies the migrations the schema lacks in one transaction that
// holds an advisory lock on the schema, so that replicas starting at once
// apply each exactly once.
func (s *Store) migrate(ctx context.Context) error {
	migs, err := migrate.Load(migrationFiles)
	if err != nil {
		return fmt.Errorf("migrate postgres %s: %w (a build problem: report it)", s.where, err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate postgres %s: begin: %w", s.where, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('caphub_migrate:' || $1, 0))`, s.schema); err != nil {
		return fmt.Errorf("migrate postgres %s: take the migration lock: %w", s.where, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("migrate postgres %s: create schema_migrations: %w: check that the user may create tables in the schema", s.where, err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate postgres %s: read schema_migrations: %w", s.where, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("migrate postgres %s: read schema_migrations: %w", s.where, err)
	}
	done := map[int]bool{}
	highest := 0
	for _, v := range applied {
		done[int(v)] = true
		highest = max(highest, int(v))
	}
	if known := migs[len(migs)-1].Version; highest > known {
		return fmt.Errorf("open postgres %s: its schema is version %d, newer than this caphub knows (%d): upgrade caphub", s.where, highest, known)
	}
	for _, m := range migs {
		if done[m.Version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate postgres %s to schema version %d (%s): %w", s.where, m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate postgres %s: record schema version %d: %w", s.where, m.Version, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate postgres %s: commit: %w", s.where, err)
	}
	return nil
}

// retryable reports whether a transaction failed only because of another
// one (serialization failure, deadlock) and may simply be run again.
func retryable(err error) bool {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		switch pe.SQLState() {
		case "40001", "40P01":
			return true
		}
	}
	return false
}
