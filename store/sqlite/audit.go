package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

var _ chain.Store = (*Store)(nil)

// auditColumns are the columns scanAudit reads.
const auditColumns = `seq, time, kind, actor, capability, data, prev_hash, hash`

// AppendAudit appends one event to the audit chain; see
// chain.Store. The read of the last event and the insert run in one
// BEGIN IMMEDIATE transaction on the single writer connection: writers in
// this process queue for that connection, writers in other processes wait
// for SQLite's write lock, so no two appends ever see the same last event.
func (s *Store) AppendAudit(ctx context.Context, next func(last *chain.Event) (chain.Event, error)) (chain.Event, error) {
	if err := s.checkOpen(); err != nil {
		return chain.Event{}, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return chain.Event{}, fmt.Errorf("append audit event to sqlite database %s: begin: %w: check that no other program holds a lock on it", s.path, err)
	}
	defer tx.Rollback()
	last, err := lastAudit(ctx, tx)
	if err != nil {
		return chain.Event{}, fmt.Errorf("append audit event to sqlite database %s: %w", s.path, err)
	}
	ev, err := next(last)
	if err != nil {
		return chain.Event{}, fmt.Errorf("append audit event to sqlite database %s: %w: nothing was written", s.path, err)
	}
	if err := write.CheckAuditEvent(ev, last); err != nil {
		return chain.Event{}, fmt.Errorf("append audit event %d to sqlite database %s: %w: nothing was written", ev.Seq, s.path, err)
	}
	if _, err := tx.ExecContext(ctx, insertAuditSQL,
		ev.Seq, formatTime(ev.Time), ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash); err != nil {
		return chain.Event{}, fmt.Errorf("append audit event %d to sqlite database %s: %w: nothing was written", ev.Seq, s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return chain.Event{}, fmt.Errorf("append audit event %d to sqlite database %s: commit: %w: nothing was written", ev.Seq, s.path, err)
	}
	ev.Time = ev.Time.UTC()
	return ev, nil
}

// AppendAuditBatch appends n events in one transaction; see
// chain.Store.
func (s *Store) AppendAuditBatch(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("append audit events to sqlite database %s: begin: %w: check that no other program holds a lock on it", s.path, err)
	}
	defer tx.Rollback()
	last, err := lastAudit(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("append audit events to sqlite database %s: %w", s.path, err)
	}
	stmt, err := tx.PrepareContext(ctx, insertAuditSQL)
	if err != nil {
		return nil, fmt.Errorf("append audit events to sqlite database %s: %w", s.path, err)
	}
	defer stmt.Close()
	out := make([]chain.Event, 0, n)
	for i := 0; i < n; i++ {
		ev, err := next(last, i)
		if err != nil {
			return nil, fmt.Errorf("append audit events to sqlite database %s: %w: nothing was written", s.path, err)
		}
		if err := write.CheckAuditEvent(ev, last); err != nil {
			return nil, fmt.Errorf("append audit event %d to sqlite database %s: %w: nothing was written", ev.Seq, s.path, err)
		}
		if _, err := stmt.ExecContext(ctx, ev.Seq, formatTime(ev.Time), ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash); err != nil {
			return nil, fmt.Errorf("append audit event %d to sqlite database %s: %w: nothing was written", ev.Seq, s.path, err)
		}
		ev.Time = ev.Time.UTC()
		out = append(out, ev)
		last = &out[len(out)-1]
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("append audit events to sqlite database %s: commit: %w: nothing was written", s.path, err)
	}
	return out, nil
}

// insertAuditSQL inserts one event.
const insertAuditSQL = `INSERT INTO audit_events (` + auditColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// lastAudit reads the chain's last event in tx (nil when the chain is
// empty). tx is a write transaction: BEGIN IMMEDIATE holds the database's
// write lock, so no other writer can append before it commits.
func lastAudit(ctx context.Context, tx *sql.Tx) (*chain.Event, error) {
	e, err := scanAudit(tx.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_events ORDER BY seq DESC LIMIT 1`))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the last audit event: %w", err)
	}
	return &e, nil
}

// appendHook appends, in the write transaction tx, the events of hook that
// keep selects (nil: all), chained onto the chain's last event; see
// registry.Store.
func appendHook(ctx context.Context, tx *sql.Tx, hook *chain.Hook, keep func(i int) bool) error {
	if !write.HookAppends(hook, keep) {
		return nil
	}
	last, err := lastAudit(ctx, tx)
	if err != nil {
		return err
	}
	events, err := write.ChainHook(hook, last, keep)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if _, err := tx.ExecContext(ctx, insertAuditSQL, ev.Seq, formatTime(ev.Time), ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash); err != nil {
			return fmt.Errorf("insert audit event %d: %w", ev.Seq, err)
		}
	}
	return nil
}

// ListAudit returns the events the filter selects, in ascending seq; see
// chain.Store.
func (s *Store) ListAudit(ctx context.Context, f chain.Filter) ([]chain.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := read.CheckAuditFilter(f); err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	query, args := read.AuditListQuery(dialect, auditColumns, f)
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events in sqlite database %s: %w", s.path, err)
	}
	defer rows.Close()
	out, err := read.Collect(rows, func() (chain.Event, error) { return scanAudit(rows) })
	if err != nil {
		return nil, fmt.Errorf("list audit events in sqlite database %s: %w", s.path, err)
	}
	return out, nil
}

// ScanAudit calls fn with every event in ascending seq, a page at a time;
// see chain.Store.
func (s *Store) ScanAudit(ctx context.Context, fn func(chain.Event) error) error {
	return read.ScanAudit(ctx, s.ListAudit, fn)
}

// scanAudit reads one row of auditColumns.
func scanAudit(sc scanner) (chain.Event, error) {
	var (
		e        chain.Event
		at, data string
	)
	if err := sc.Scan(&e.Seq, &at, &e.Kind, &e.Actor, &e.Capability, &data, &e.PrevHash, &e.Hash); err != nil {
		return chain.Event{}, err
	}
	t, err := parseTime(at)
	if err != nil {
		return chain.Event{}, fmt.Errorf("decode the time of audit event %d: %w: the database is damaged (run caphub audit verify)", e.Seq, err)
	}
	e.Time = t
	e.Data = json.RawMessage(data)
	return e, nil
}
