package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

var _ chain.Store = (*Store)(nil)

// auditColumns are the columns scanAudit reads.
const auditColumns = `seq, time, kind, actor, capability, data, prev_hash, hash`

// AppendAudit appends one event to the audit chain; see chain.Store. The
// read of the last event and the insert run in one BEGIN IMMEDIATE
// transaction on the single writer connection: writers in this process
// queue for that connection, writers in other processes wait for SQLite's
// write lock, so no two appends ever see the same last event.
func (s *Store) AppendAudit(ctx context.Context, next func(last *chain.Event) (chain.Event, error)) (chain.Event, error) {
	evs, err := s.appendAudit(ctx, "event", 1, func(last *chain.Event, _ int) (chain.Event, error) { return next(last) })
	if err != nil {
		return chain.Event{}, err
	}
	return evs[0], nil
}

// AppendAuditBatch appends n events in one such transaction; see
// chain.Store.
func (s *Store) AppendAuditBatch(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	return s.appendAudit(ctx, "events", n, next)
}

// appendAudit is AppendAudit and AppendAuditBatch: one transaction that
// reads the last event, chains the n events onto it and inserts them with
// the writer's prepared multi-row inserts (no SQL is parsed on this path,
// and a batch is a few statements, not one per event). what is "event" or
// "events", for messages.
func (s *Store) appendAudit(ctx context.Context, what string, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("append audit %s to sqlite database %s: %w: nothing was written", what, s.path, err)
	}
	// The statements run on a context without ctx's cancellation: for a
	// cancellable one, modernc.org/sqlite starts a goroutine per statement
	// to interrupt it, which cost the audit writer more than some of the
	// statements themselves. A wait for another process's lock is bounded
	// by busy_timeout instead, and ctx is checked before the inserts.
	run := context.WithoutCancel(ctx)
	tx, err := s.writer.BeginTx(run, nil)
	if err != nil {
		return nil, fmt.Errorf("append audit %s to sqlite database %s: begin: %w: check that no other program holds a lock on it", what, s.path, err)
	}
	defer tx.Rollback()
	st := s.auditStmts(run, tx)
	defer st.close()
	last, err := lastAudit(st.last.QueryRowContext(run))
	if err != nil {
		return nil, fmt.Errorf("append audit %s to sqlite database %s: %w", what, s.path, err)
	}
	out := make([]chain.Event, 0, n)
	for i := range n {
		ev, err := next(last, i)
		if err != nil {
			return nil, fmt.Errorf("append audit %s to sqlite database %s: %w: nothing was written", what, s.path, err)
		}
		if err := write.CheckAuditEvent(ev, last); err != nil {
			return nil, fmt.Errorf("append audit event %d to sqlite database %s: %w: nothing was written", ev.Seq, s.path, err)
		}
		ev.Time = ev.Time.UTC()
		out = append(out, ev)
		last = &out[len(out)-1]
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("append audit %s to sqlite database %s: %w: nothing was written", what, s.path, err)
	}
	if err := st.insertEvents(run, out); err != nil {
		return nil, fmt.Errorf("append audit %s %d to %d to sqlite database %s: %w: nothing was written", what, out[0].Seq, last.Seq, s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("append audit %s to sqlite database %s: commit: %w: nothing was written", what, s.path, err)
	}
	return out, nil
}

// The statements of the append path, prepared once on the writer
// connection (Open) and reused by every write transaction (auditStmts):
// modernc.org/sqlite parses a statement's SQL on every call otherwise,
// which cost more than the rest of a small append.
const (
	// lastAuditSQL reads the chain's last event: seq is the rowid, so it
	// is one descent to the end of the table's b-tree.
	lastAuditSQL = `SELECT ` + auditColumns + ` FROM audit_events ORDER BY seq DESC LIMIT 1`
	// insertAuditSQL is the start of the insert of events: a row of
	// auditRow for each.
	insertAuditSQL = `INSERT INTO audit_events (` + auditColumns + `) VALUES `
	auditRow       = `(?, ?, ?, ?, ?, ?, ?, ?)`
	auditWidth     = 8 // values in auditRow
)

// preparedAudit holds the writer's prepared statements of the append
// path, or those of one transaction (auditStmts).
type preparedAudit struct {
	last *sql.Stmt
	// rows[b] inserts 1<<b events: a batch is inserted a power of two
	// events a statement (as Put's rows are), so every statement is
	// prepared once.
	rows [maxRowsBits + 1]*sql.Stmt
	tx   *sql.Tx // in a transaction: what insertEvents binds rows to
}

// prepareAudit prepares the append path's statements on the writer.
func (s *Store) prepareAudit(ctx context.Context) error {
	s.audit.close() // from an attempt of Open that failed after it
	var err error
	s.audit.last, err = s.writer.PrepareContext(ctx, lastAuditSQL)
	for b := 0; err == nil && b < len(s.audit.rows); b++ {
		s.audit.rows[b], err = s.writer.PrepareContext(ctx, insertAuditSQL+auditRow+strings.Repeat(", "+auditRow, 1<<b-1))
	}
	if err != nil {
		s.audit.close()
		return fmt.Errorf("open sqlite database %s: prepare the audit chain's statements: %w", s.path, err)
	}
	return nil
}

// close closes the writer's statements when the store closes, or a
// transaction's statement before it ends.
func (p *preparedAudit) close() {
	if p.last != nil {
		p.last.Close()
	}
	if p.tx == nil {
		for _, st := range p.rows {
			if st != nil {
				st.Close()
			}
		}
	}
	*p = preparedAudit{}
}

// auditStmts returns the writer's prepared statements for tx, a
// transaction of the writer: database/sql hands tx the statements already
// prepared on the writer's one connection. Close them before tx ends.
func (s *Store) auditStmts(ctx context.Context, tx *sql.Tx) *preparedAudit {
	return &preparedAudit{last: tx.StmtContext(ctx, s.audit.last), rows: s.audit.rows, tx: tx}
}

// insertEvents inserts events, in order, the largest power of two of them
// (up to 1<<maxRowsBits) a statement.
func (p *preparedAudit) insertEvents(ctx context.Context, events []chain.Event) error {
	values := make([]any, 0, auditWidth*min(len(events), 1<<maxRowsBits))
	for len(events) > 0 {
		b := min(bits.Len(uint(len(events)))-1, maxRowsBits)
		k := 1 << b
		values = values[:0]
		for _, ev := range events[:k] {
			values = append(values, ev.Seq, formatTime(ev.Time), ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash)
		}
		st := p.tx.StmtContext(ctx, p.rows[b])
		_, err := st.ExecContext(ctx, values...)
		st.Close()
		if err != nil {
			if k == 1 {
				return fmt.Errorf("insert audit event %d: %w", events[0].Seq, err)
			}
			return fmt.Errorf("insert audit events %d to %d: %w", events[0].Seq, events[k-1].Seq, err)
		}
		events = events[k:]
	}
	return nil
}

// lastAudit reads the chain's last event from row, the result of
// lastAuditSQL (nil when the chain is empty). In a write transaction
// BEGIN IMMEDIATE holds the database's write lock, so no other writer can
// append before it commits.
func lastAudit(row *sql.Row) (*chain.Event, error) {
	e, err := scanAudit(row)
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
func (s *Store) appendHook(ctx context.Context, tx *sql.Tx, hook *chain.Hook, keep func(i int) bool) error {
	if !write.HookAppends(hook, keep) {
		return nil
	}
	st := s.auditStmts(ctx, tx)
	defer st.close()
	last, err := lastAudit(st.last.QueryRowContext(ctx))
	if err != nil {
		return err
	}
	events, err := write.ChainHook(hook, last, keep)
	if err != nil {
		return err
	}
	return st.insertEvents(ctx, events)
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

// checkpointColumns are the columns scanCheckpoint reads.
const checkpointColumns = `seq, hash, time, pruned, at, record`

// AuditState returns the checkpoint and the last event in one read
// transaction; see chain.Store.
func (s *Store) AuditState(ctx context.Context) (chain.State, error) {
	if err := s.checkOpen(); err != nil {
		return chain.State{}, err
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return chain.State{}, fmt.Errorf("read the audit chain's state in sqlite database %s: begin: %w", s.path, err)
	}
	defer tx.Rollback()
	var st chain.State
	if st.Checkpoint, err = readCheckpoint(ctx, tx); err == nil {
		st.Last, err = lastAudit(tx.QueryRowContext(ctx, lastAuditSQL))
	}
	if err != nil {
		return chain.State{}, fmt.Errorf("read the audit chain's state in sqlite database %s: %w", s.path, err)
	}
	return st, nil
}

// readCheckpoint reads the chain's checkpoint in tx (nil when there is
// none).
func readCheckpoint(ctx context.Context, tx *sql.Tx) (*chain.Checkpoint, error) {
	var (
		cp       chain.Checkpoint
		when, at string
	)
	err := tx.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoint WHERE id = 1`).
		Scan(&cp.Seq, &cp.Hash, &when, &cp.Pruned, &at, &cp.Record)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the audit checkpoint: %w", err)
	}
	if cp.Time, err = parseTime(when); err == nil {
		cp.At, err = parseTime(at)
	}
	if err != nil {
		return nil, fmt.Errorf("decode the audit checkpoint's times: %w: the database is damaged (run caphub audit verify)", err)
	}
	return &cp, nil
}

// PruneAudit removes the oldest events up to upTo (a batch at most) and
// records the cut, in one BEGIN IMMEDIATE transaction on the single writer
// connection, so no append runs in between; see chain.Store.
func (s *Store) PruneAudit(ctx context.Context, upTo int64, record func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error)) (*chain.Checkpoint, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("prune the audit chain in sqlite database %s: begin: %w: check that no other program holds a lock on it", s.path, err)
	}
	defer tx.Rollback()
	cp, err := s.pruneInTx(ctx, tx, upTo, record)
	if err != nil || cp == nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("prune the audit chain in sqlite database %s: commit: %w: nothing was pruned", s.path, err)
	}
	return cp, nil
}

// pruneInTx is PruneAudit's transaction.
func (s *Store) pruneInTx(ctx context.Context, tx *sql.Tx, upTo int64, record func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error)) (*chain.Checkpoint, error) {
	fail := func(err error) (*chain.Checkpoint, error) {
		return nil, fmt.Errorf("prune the audit chain in sqlite database %s: %w: nothing was pruned", s.path, err)
	}
	prev, err := readCheckpoint(ctx, tx)
	if err != nil {
		return fail(err)
	}
	st := s.auditStmts(ctx, tx)
	defer st.close()
	last, err := lastAudit(st.last.QueryRowContext(ctx))
	if err != nil {
		return fail(err)
	}
	from, to, ok := write.PruneRange(prev, last, upTo)
	if !ok {
		return nil, nil
	}
	cut, err := scanAudit(tx.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_events WHERE seq = ?`, to))
	if errors.Is(err, sql.ErrNoRows) {
		return fail(write.MissingCut(to))
	}
	if err != nil {
		return fail(fmt.Errorf("read audit event %d: %w", to, err))
	}
	cp := write.NewCheckpoint(cut, from)
	ev, err := record(last, cp)
	if err != nil {
		return fail(err)
	}
	if err := write.CheckAuditEvent(ev, last); err != nil {
		return fail(fmt.Errorf("the record of the prune, event %d: %w", ev.Seq, err))
	}
	if err := st.insertEvents(ctx, []chain.Event{ev}); err != nil {
		return fail(fmt.Errorf("append the record of the prune: %w", err))
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM audit_events WHERE seq <= ?`, to)
	if err != nil {
		return fail(fmt.Errorf("delete audit events %d to %d: %w", from, to, err))
	}
	if n, err := res.RowsAffected(); err != nil || n != cp.Pruned {
		return fail(write.PrunedCount(from, to, n, err))
	}
	cp.At, cp.Record = ev.Time.UTC(), ev.Seq
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_checkpoint (id, `+checkpointColumns+`) VALUES (1, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
			pruned = excluded.pruned, at = excluded.at, record = excluded.record`,
		cp.Seq, cp.Hash, formatTime(cp.Time), cp.Pruned, formatTime(cp.At), cp.Record); err != nil {
		return fail(fmt.Errorf("store the audit checkpoint: %w", err))
	}
	return &cp, nil
}
