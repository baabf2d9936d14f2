package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

var _ chain.Store = (*Store)(nil)

// auditColumns are the columns scanAudit reads.
const auditColumns = `seq, time, kind, actor, capability, data::text, prev_hash, hash`

// AppendAudit appends one event to the audit chain; see chain.Store. The
// transaction first takes the chain's advisory lock (one per schema,
// released at commit), so appenders on every replica queue: each reads the
// last event only once the previous append has committed (in READ
// COMMITTED every statement sees what committed before it), and none can
// insert a second event with the same seq. The primary key on seq refuses
// a fork even if the lock were bypassed.
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

// appendAudit is AppendAudit and AppendAuditBatch, retried as inTx
// retries a transaction. what is "event" or "events", for messages.
func (s *Store) appendAudit(ctx context.Context, what string, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var (
		out []chain.Event
		err error
	)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		out, err = s.appendOnce(ctx, n, next)
		if !retryable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("append audit %s to postgres %s: %w: nothing was written", what, s.where, err)
	}
	return out, nil
}

// The statements of an append transaction. pgx prepares each once per
// connection and keeps it in the connection's statement cache (the
// default QueryExecModeCacheStatement), so no SQL is parsed again.
const (
	// beginAuditSQL begins an append: READ COMMITTED whatever the
	// database's default, so that the read after the lock sees every
	// append committed before the lock was granted.
	beginAuditSQL = `BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE`
	// lockAuditSQL takes the chain's advisory lock ($1: the schema).
	lockAuditSQL = `SELECT pg_advisory_xact_lock(hashtextextended('caphub_audit:' || $1, 0))`
	// lastAuditSQL reads the chain's last event (an index lookup).
	lastAuditSQL = `SELECT ` + auditColumns + ` FROM audit_events ORDER BY seq DESC LIMIT 1`
	// insertAuditSQL inserts one event.
	insertAuditSQL = `INSERT INTO audit_events (seq, time, kind, actor, capability, data, prev_hash, hash)
	VALUES ($1, $2, $3, $4, $5, $6::text::json, $7, $8)`
	// insertAfterSQL inserts one event only if the chain's last event is
	// the one it follows: event $1-1 with hash $7 (read as lastAuditSQL
	// reads it, by the index, whatever plan the statement gets). Otherwise
	// it inserts nothing (appendAfter).
	insertAfterSQL = `INSERT INTO audit_events (seq, time, kind, actor, capability, data, prev_hash, hash)
	SELECT $1::bigint, $2::timestamptz, $3::text, $4::text, $5::text, $6::text::json, $7::text, $8::text
	WHERE ROW($1::bigint - 1, $7::text) = (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)`
)

// commitSQL ends an append's pipeline; checkCommit checks its answer.
const commitSQL = `COMMIT`

func checkCommit(tag pgconn.CommandTag) error {
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: the server answered %q: the transaction was rolled back", tag.String())
	}
	return nil
}

// headCache keeps the chain's last event as this store's last append left
// it, so that the next append can chain onto it in one round trip
// (appendAfter) instead of reading it first. Another appender (a replica,
// an audited write, a prune) makes it stale, which the next append finds
// under the lock, and then it reads the last event as usual; after that,
// the cache stays unused for a while (staleSkip appends), so that
// replicas appending by turns do not pay the wasted round trip each time.
type headCache struct {
	mu   sync.Mutex
	last *chain.Event // nil: none
	skip int          // appends left to make without the cache
}

// staleSkip is how many appends after a stale head read the last event
// instead of trying the cache.
const staleSkip = 64

// get returns the cached last event, or nil when there is none or it is
// not to be used now.
func (h *headCache) get() *chain.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.skip > 0 {
		h.skip--
		return nil
	}
	return h.last
}

// set caches e, just committed as the chain's last event, unless a later
// one was cached meanwhile.
func (h *headCache) set(e chain.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil || e.Seq > h.last.Seq {
		e.Data = bytes.Clone(e.Data)
		h.last = &e
	}
}

// stale forgets the cached event, found not to be the last one.
func (h *headCache) stale() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.skip = nil, staleSkip
}

// appendOnce is one append transaction. When this store knows the chain's
// last event from its previous append, it is one round trip
// (appendAfter); otherwise, or when that event is not the last any more,
// two: BEGIN, the lock and the read of the last event go in one pipeline
// (the server runs them in order, each statement with a snapshot of its
// own, so the read starts once the lock is held), then the inserts and
// COMMIT in another. A failure rolls back; a connection left in a
// transaction is dropped by the pool.
func (s *Store) appendOnce(ctx context.Context, n int, next func(last *chain.Event, i int) (chain.Event, error)) (out []chain.Event, err error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	defer func() {
		if err != nil {
			rollback(ctx, c.Conn())
		}
	}()
	if head := s.head.get(); head != nil && n > 0 {
		out, err := s.appendAfter(ctx, c.Conn(), head, n, next)
		if err != nil || out != nil {
			return out, err
		}
		s.head.stale()
	}
	var last *chain.Event
	b := &pgx.Batch{}
	b.Queue(beginAuditSQL)
	b.Queue(lockAuditSQL, s.schema)
	b.Queue(lastAuditSQL).QueryRow(func(row pgx.Row) error {
		var err error
		last, err = lastEvent(row)
		return err
	})
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("take the audit chain lock and read the last event: %w", err)
	}
	out = make([]chain.Event, 0, n)
	b = &pgx.Batch{}
	for i := range n {
		ev, err := next(last, i)
		if err != nil {
			return nil, err
		}
		if err := write.CheckAuditEvent(ev, last); err != nil {
			return nil, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		queueInsert(b, ev)
		ev.Time = ev.Time.UTC()
		out = append(out, ev)
		last = &out[len(out)-1]
	}
	b.Queue(commitSQL).Exec(checkCommit)
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("insert the events and commit: %w", err)
	}
	if last != nil {
		s.head.set(*last)
	}
	return out, nil
}

// appendAfter appends n events onto head, the chain's last event as this
// store's previous append left it, in one round trip: BEGIN, the lock, the
// inserts and COMMIT go in one pipeline, and each insert takes effect only
// if the event it follows is then the chain's last (insertAfterSQL), which
// checks head under the lock as reading it would. When head is not the
// last event any more, the first insert, and so every one after it,
// inserts nothing, the empty transaction commits, and appendAfter returns
// no events and no error: the caller reads the last event instead. next is
// then called again for every event, as in a retried transaction.
func (s *Store) appendAfter(ctx context.Context, conn *pgx.Conn, head *chain.Event, n int, next func(last *chain.Event, i int) (chain.Event, error)) ([]chain.Event, error) {
	b := &pgx.Batch{}
	b.Queue(beginAuditSQL)
	b.Queue(lockAuditSQL, s.schema)
	out := make([]chain.Event, 0, n)
	var inserted int64
	last := head
	for i := range n {
		ev, err := next(last, i)
		if err != nil {
			return nil, err
		}
		if err := write.CheckAuditEvent(ev, last); err != nil {
			return nil, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		b.Queue(insertAfterSQL, ev.Seq, ev.Time, ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash).
			Exec(func(tag pgconn.CommandTag) error {
				inserted += tag.RowsAffected()
				return nil
			})
		ev.Time = ev.Time.UTC()
		out = append(out, ev)
		last = &out[len(out)-1]
	}
	b.Queue(commitSQL).Exec(checkCommit)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("insert the events after event %d and commit: %w", head.Seq, err)
	}
	switch inserted {
	case 0:
		return nil, nil // head is not the last event: nothing was written
	case int64(n):
		s.head.set(*last)
		return out, nil
	}
	// Each insert follows the one before it in the same transaction, so
	// they insert all or none of the events.
	return nil, fmt.Errorf("only %d of the %d events after event %d were inserted (a bug: report it); run caphub audit verify", inserted, n, head.Seq)
}

// rollback ends the transaction a failed append left open on conn, so that
// the connection can go back to the pool (which drops it if this fails
// too). It runs even when ctx is done, for a few seconds at most.
func rollback(ctx context.Context, conn *pgx.Conn) {
	if conn.IsClosed() || conn.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	conn.Exec(ctx, "ROLLBACK")
}

// queueInsert queues the insert of ev.
func queueInsert(b *pgx.Batch, ev chain.Event) {
	b.Queue(insertAuditSQL, ev.Seq, ev.Time, ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash)
}

// lockAuditAfter runs batch, then takes the chain's advisory lock and reads
// its last event (nil when it is empty), all in one pipeline on conn, in
// a transaction: the lock is taken only once batch's statements are done.
func (s *Store) lockAuditAfter(ctx context.Context, conn querier, batch *pgx.Batch) (*chain.Event, error) {
	var last *chain.Event
	batch.Queue(lockAuditSQL, s.schema)
	batch.Queue(lastAuditSQL).QueryRow(func(row pgx.Row) error {
		var err error
		last, err = lastEvent(row)
		return err
	})
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("index, take the audit chain lock and read the last event: %w", err)
	}
	return last, nil
}

// lockAudit takes the chain's advisory lock in tx (one per schema, released
// at commit) and reads the chain's last event (nil when it is empty), in
// one round trip: the two statements go in one pipeline and run in order.
// Once it returns, no other transaction can append until tx ends: in READ
// COMMITTED the read sees every append committed before the lock was
// granted.
func (s *Store) lockAudit(ctx context.Context, tx pgx.Tx) (*chain.Event, error) {
	var last *chain.Event
	b := &pgx.Batch{}
	b.Queue(lockAuditSQL, s.schema)
	b.Queue(lastAuditSQL).QueryRow(func(row pgx.Row) error {
		var err error
		last, err = lastEvent(row)
		return err
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("take the audit chain lock and read the last event: %w", err)
	}
	return last, nil
}

// lastEvent reads the chain's last event from row, the result of
// lastAuditSQL (nil when the chain is empty).
func lastEvent(row pgx.Row) (*chain.Event, error) {
	e, err := scanAudit(row)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the last event: %w", err)
	}
	return &e, nil
}

// appendHook appends, in tx, the events of hook that keep selects (nil:
// all), chained onto the chain's last event; see registry.Store. It
// is the last thing a write transaction does before it commits, so that
// the chain's lock, which every appender on every replica waits for, is
// held only for the inserts and the commit.
func (s *Store) appendHook(ctx context.Context, tx pgx.Tx, hook *chain.Hook, keep func(i int) bool) error {
	if !write.HookAppends(hook, keep) {
		return nil
	}
	last, err := s.lockAudit(ctx, tx)
	if err != nil {
		return err
	}
	events, err := write.ChainHook(hook, last, keep)
	if err != nil || len(events) == 0 {
		return err
	}
	b := &pgx.Batch{}
	for _, ev := range events {
		queueInsert(b, ev)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("insert audit events: %w", err)
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
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events in postgres %s: %w", s.where, err)
	}
	defer rows.Close()
	out, err := read.Collect(rows, func() (chain.Event, error) { return scanAudit(rows) })
	if err != nil {
		return nil, fmt.Errorf("list audit events in postgres %s: %w", s.where, err)
	}
	return out, nil
}

// ScanAudit calls fn with every event in ascending seq, a page at a time;
// see chain.Store.
func (s *Store) ScanAudit(ctx context.Context, fn func(chain.Event) error) error {
	return read.ScanAudit(ctx, s.ListAudit, fn)
}

// scanAudit reads one row of auditColumns.
func scanAudit(row pgx.Row) (chain.Event, error) {
	var (
		e    chain.Event
		data string
	)
	if err := row.Scan(&e.Seq, &e.Time, &e.Kind, &e.Actor, &e.Capability, &data, &e.PrevHash, &e.Hash); err != nil {
		return chain.Event{}, err
	}
	e.Time = e.Time.UTC()
	e.Data = json.RawMessage(data)
	return e, nil
}

// checkpointColumns are the columns readCheckpoint reads.
const checkpointColumns = `seq, hash, time, pruned, at, record`

// AuditState returns the checkpoint and the last event in one read-only
// REPEATABLE READ transaction (one snapshot); see chain.Store.
func (s *Store) AuditState(ctx context.Context) (chain.State, error) {
	if err := s.checkOpen(); err != nil {
		return chain.State{}, err
	}
	var st chain.State
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if st.Checkpoint, err = readCheckpoint(ctx, tx); err != nil {
			return err
		}
		st.Last, err = lastEvent(tx.QueryRow(ctx, lastAuditSQL))
		return err
	})
	if err != nil {
		return chain.State{}, fmt.Errorf("read the audit chain's state in postgres %s: %w", s.where, err)
	}
	return st, nil
}

// readCheckpoint reads the chain's checkpoint in tx (nil when there is
// none).
func readCheckpoint(ctx context.Context, tx pgx.Tx) (*chain.Checkpoint, error) {
	var cp chain.Checkpoint
	err := tx.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoint WHERE id = 1`).
		Scan(&cp.Seq, &cp.Hash, &cp.Time, &cp.Pruned, &cp.At, &cp.Record)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the audit checkpoint: %w", err)
	}
	cp.Time, cp.At = cp.Time.UTC(), cp.At.UTC()
	return &cp, nil
}

// PruneAudit removes the oldest events up to upTo (a batch at most) and
// records the cut, in one transaction that holds the chain's advisory lock,
// so no append on any replica runs in between; see chain.Store.
func (s *Store) PruneAudit(ctx context.Context, upTo int64, record func(last *chain.Event, cp chain.Checkpoint) (chain.Event, error)) (*chain.Checkpoint, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out *chain.Checkpoint
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		last, err := s.lockAudit(ctx, tx)
		if err != nil {
			return err
		}
		prev, err := readCheckpoint(ctx, tx)
		if err != nil {
			return err
		}
		from, to, ok := write.PruneRange(prev, last, upTo)
		if !ok {
			return nil
		}
		cut, err := scanAudit(tx.QueryRow(ctx, `SELECT `+auditColumns+` FROM audit_events WHERE seq = $1`, to))
		if errors.Is(err, pgx.ErrNoRows) {
			return write.MissingCut(to)
		}
		if err != nil {
			return fmt.Errorf("read audit event %d: %w", to, err)
		}
		cp := write.NewCheckpoint(cut, from)
		ev, err := record(last, cp)
		if err != nil {
			return err
		}
		if err := write.CheckAuditEvent(ev, last); err != nil {
			return fmt.Errorf("the record of the prune, event %d: %w", ev.Seq, err)
		}
		if _, err := tx.Exec(ctx, insertAuditSQL,
			ev.Seq, ev.Time, ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash); err != nil {
			return fmt.Errorf("append the record of the prune, event %d: %w", ev.Seq, err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM audit_events WHERE seq <= $1`, to)
		if err != nil {
			return fmt.Errorf("delete audit events %d to %d: %w", from, to, err)
		}
		if n := tag.RowsAffected(); n != cp.Pruned {
			return write.PrunedCount(from, to, n, nil)
		}
		cp.At, cp.Record = ev.Time.UTC(), ev.Seq
		if _, err := tx.Exec(ctx, `INSERT INTO audit_checkpoint (id, `+checkpointColumns+`) VALUES (1, $1, $2, $3, $4, $5, $6)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
				pruned = excluded.pruned, at = excluded.at, record = excluded.record`,
			cp.Seq, cp.Hash, cp.Time, cp.Pruned, cp.At, cp.Record); err != nil {
			return fmt.Errorf("store the audit checkpoint: %w", err)
		}
		out = &cp
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("prune the audit chain in postgres %s: %w: nothing was pruned", s.where, err)
	}
	return out, nil
}
