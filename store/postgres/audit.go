package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/contract"
)

var _ registry.AuditStore = (*Store)(nil)

// auditColumns are the columns scanAudit reads.
const auditColumns = `seq, time, kind, actor, capability, data::text, prev_hash, hash`

// auditPage is how many events ScanAudit reads at a time.
const auditPage = 500

// AppendAudit appends one event to the audit chain; see
// registry.AuditStore. The transaction first takes the chain's advisory lock
// (one per schema, released at commit), so appenders on every replica
// queue: each reads the last event only once the previous append has
// committed (in READ COMMITTED every statement sees what committed before
// it), and none can insert a second event with the same seq. The primary
// key on seq refuses a fork even if the lock were bypassed.
func (s *Store) AppendAudit(ctx context.Context, next func(last *registry.AuditEvent) (registry.AuditEvent, error)) (registry.AuditEvent, error) {
	if err := s.checkOpen(); err != nil {
		return registry.AuditEvent{}, err
	}
	var ev registry.AuditEvent
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('caphub_audit:' || $1, 0))`, s.schema); err != nil {
			return fmt.Errorf("take the audit chain lock: %w", err)
		}
		var last *registry.AuditEvent
		e, err := scanAudit(tx.QueryRow(ctx, `SELECT `+auditColumns+` FROM audit_events ORDER BY seq DESC LIMIT 1`))
		switch {
		case err == nil:
			last = &e
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read the last event: %w", err)
		}
		ev, err = next(last)
		if err != nil {
			return err
		}
		if err := contract.CheckAuditEvent(ev, last); err != nil {
			return fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO audit_events (seq, time, kind, actor, capability, data, prev_hash, hash)
			VALUES ($1, $2, $3, $4, $5, $6::text::json, $7, $8)`,
			ev.Seq, ev.Time, ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash)
		if err != nil {
			return fmt.Errorf("insert event %d: %w", ev.Seq, err)
		}
		return nil
	})
	if err != nil {
		return registry.AuditEvent{}, fmt.Errorf("append audit event to postgres %s: %w: nothing was written", s.where, err)
	}
	ev.Time = ev.Time.UTC()
	return ev, nil
}

// AppendAuditBatch appends n events in one transaction; see
// registry.AuditStore.
func (s *Store) AppendAuditBatch(ctx context.Context, n int, next func(last *registry.AuditEvent, i int) (registry.AuditEvent, error)) ([]registry.AuditEvent, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []registry.AuditEvent
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('caphub_audit:' || $1, 0))`, s.schema); err != nil {
			return fmt.Errorf("take the audit chain lock: %w", err)
		}
		var last *registry.AuditEvent
		e, err := scanAudit(tx.QueryRow(ctx, `SELECT `+auditColumns+` FROM audit_events ORDER BY seq DESC LIMIT 1`))
		switch {
		case err == nil:
			last = &e
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read the last event: %w", err)
		}
		batch := &pgx.Batch{}
		for i := 0; i < n; i++ {
			ev, err := next(last, i)
			if err != nil {
				return err
			}
			if err := contract.CheckAuditEvent(ev, last); err != nil {
				return fmt.Errorf("event %d: %w", ev.Seq, err)
			}
			batch.Queue(`INSERT INTO audit_events (seq, time, kind, actor, capability, data, prev_hash, hash)
				VALUES ($1, $2, $3, $4, $5, $6::text::json, $7, $8)`,
				ev.Seq, ev.Time, ev.Kind, ev.Actor, ev.Capability, string(ev.Data), ev.PrevHash, ev.Hash)
			ev.Time = ev.Time.UTC()
			out = append(out, ev)
			last = &out[len(out)-1]
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("append audit events to postgres %s: %w: nothing was written", s.where, err)
	}
	return out, nil
}

// ListAudit returns the events the filter selects, in ascending seq; see
// registry.AuditStore.
func (s *Store) ListAudit(ctx context.Context, f registry.AuditFilter) ([]registry.AuditEvent, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := contract.CheckAuditFilter(f); err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	query, args := listAuditSQL(f)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events in postgres %s: %w", s.where, err)
	}
	defer rows.Close()
	out, err := contract.Collect(rows, func() (registry.AuditEvent, error) { return scanAudit(rows) })
	if err != nil {
		return nil, fmt.Errorf("list audit events in postgres %s: %w", s.where, err)
	}
	return out, nil
}

// listAuditSQL returns the query of ListAudit and its arguments. A
// capability without a version matches itself and the range of its
// versioned URIs, [uri@, uriA) in byte order ('A' follows '@'; the column is
// COLLATE "C", which the parameters take on), which the (capability, seq)
// index serves.
func listAuditSQL(f registry.AuditFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.AfterSeq > 0 {
		where = append(where, `seq > `+arg(f.AfterSeq))
	}
	if !f.Since.IsZero() {
		where = append(where, `time >= `+arg(contract.CeilMicro(f.Since)))
	}
	if f.Kind != "" {
		where = append(where, `kind = `+arg(f.Kind))
	}
	if f.Capability != "" {
		if strings.Contains(f.Capability, "@") {
			where = append(where, `capability = `+arg(f.Capability))
		} else {
			where = append(where, `(capability = `+arg(f.Capability)+` OR (capability >= `+arg(f.Capability+"@")+` AND capability < `+arg(f.Capability+"A")+`))`)
		}
	}
	query := `SELECT ` + auditColumns + ` FROM audit_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY seq`
	if f.Limit > 0 {
		query += ` LIMIT ` + arg(f.Limit)
	}
	return query, args
}

// ScanAudit calls fn with every event in ascending seq, a page at a time;
// see registry.AuditStore.
func (s *Store) ScanAudit(ctx context.Context, fn func(registry.AuditEvent) error) error {
	var after int64
	for {
		page, err := s.ListAudit(ctx, registry.AuditFilter{AfterSeq: after, Limit: auditPage})
		if err != nil {
			return fmt.Errorf("scan the audit chain after event %d: %w", after, err)
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < auditPage {
			return nil
		}
		after = page[len(page)-1].Seq
	}
}

// scanAudit reads one row of auditColumns.
func scanAudit(row pgx.Row) (registry.AuditEvent, error) {
	var (
		e    registry.AuditEvent
		data string
	)
	if err := row.Scan(&e.Seq, &e.Time, &e.Kind, &e.Actor, &e.Capability, &data, &e.PrevHash, &e.Hash); err != nil {
		return registry.AuditEvent{}, err
	}
	e.Time = e.Time.UTC()
	e.Data = json.RawMessage(data)
	return e, nil
}
