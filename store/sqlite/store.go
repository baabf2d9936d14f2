package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

// Put stores the records in one transaction; see registry.Store.
func (s *Store) Put(ctx context.Context, recs []registry.Record) ([]registry.PutResult, error) {
	return s.PutAudited(ctx, recs, nil)
}

// PutAudited is Put committing, in the same transaction, the audit events
// of hook for the versions it creates; see registry.Store. The
// transaction's BEGIN IMMEDIATE already makes it the database's only
// writer, so the chain's last event cannot change under it.
func (s *Store) PutAudited(ctx context.Context, recs []registry.Record, hook *chain.Hook) ([]registry.PutResult, error) {
	results := make([]registry.PutResult, len(recs))
	if len(recs) == 0 {
		return results, nil
	}
	if err := write.CheckHook(hook, len(recs)); err != nil {
		return nil, fmt.Errorf("put %d records into sqlite database %s: %w: nothing was written", len(recs), s.path, err)
	}
	preps, err := prepareAll(recs)
	if err != nil {
		return nil, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("put %d records into sqlite database %s: begin: %w", len(recs), s.path, err)
	}
	defer tx.Rollback()
	st := s.put.in(ctx, tx)
	defer st.close()

	var created []createdRow
	var events []registry.Event
	for i, p := range preps {
		k := p.Rec.Key
		results[i].Key = k
		id, ok, err := st.insertRecord(ctx, p)
		if err != nil {
			return nil, err
		}
		if ok {
			results[i].Created = true
			created = append(created, createdRow{id: id, prep: &preps[i]})
			events = append(events, registry.Event{Kind: registry.EventRegistered, Key: k})
		}
	}
	if err := st.indexRecords(ctx, created); err != nil {
		return nil, fmt.Errorf("put %d records into sqlite database %s: %w", len(recs), s.path, err)
	}
	if err := st.markLatest(ctx, created); err != nil {
		return nil, fmt.Errorf("put %d records into sqlite database %s: %w", len(recs), s.path, err)
	}
	if hook != nil {
		if err := s.appendHook(ctx, tx, hook, func(i int) bool { return results[i].Created }); err != nil {
			return nil, fmt.Errorf("put %d records into sqlite database %s: %w: nothing was written", len(recs), s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("put %d records into sqlite database %s: commit: %w", len(recs), s.path, err)
	}
	s.hub.publish(events)
	return results, nil
}

// prepareAll checks and encodes recs, before any I/O.
func prepareAll(recs []registry.Record) ([]write.Prepared, error) {
	now := time.Now()
	preps := make([]write.Prepared, len(recs))
	for i, r := range recs {
		p, err := write.Prepare(r, now)
		if err != nil {
			return nil, err
		}
		preps[i] = p
	}
	return preps, nil
}

// insertRecord inserts one version's row and reports its id and whether
// it created it; indexRecords and markLatest do the rest for all the
// created rows at once. A key that exists with the same digest is a no-op
// (false); with another digest it is a conflict that rolls back the whole
// batch.
func (st *statements) insertRecord(ctx context.Context, p write.Prepared) (int64, bool, error) {
	k := p.Rec.Key
	var id int64
	err := st.insert.QueryRowContext(ctx, k.Scheme, k.Domain, k.Name, k.Version, p.VersionKey, p.Stability, p.Source,
		p.Definition, p.Rec.Digest, p.Rec.TrustTier, formatTime(p.RegisteredAt)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, st.checkSameDigest(ctx, p.Rec)
	}
	if err != nil {
		return 0, false, fmt.Errorf("put %s into sqlite database %s: %w", k, st.path, err)
	}
	return id, true, nil
}

// checkSameDigest returns a *registry.ConflictError when r's key is
// stored with another digest.
func (st *statements) checkSameDigest(ctx context.Context, r registry.Record) error {
	var existing string
	if err := st.digest.QueryRowContext(ctx, r.Key.Scheme, r.Key.Domain, r.Key.Name, r.Key.Version).Scan(&existing); err != nil {
		return fmt.Errorf("put %s: read the stored digest: %w", r.Key, err)
	}
	if existing != r.Digest {
		return &registry.ConflictError{Key: r.Key, ExistingDigest: existing, NewDigest: r.Digest}
	}
	return nil
}

// statements are the statements Put runs: the writer's, prepared once
// (Store.put), or those bound to one transaction (in).
type statements struct {
	path           string // the database, for messages
	insert, digest *sql.Stmt
	// rows[t][b] inserts 1<<b rows into the table of rowHeads[t].
	rows [len(rowHeads)][maxRowsBits + 1]*sql.Stmt
	// latest are markLatest's statements, by latestSQL's order.
	latest [len(latestSQL)]*sql.Stmt
	tx     *sql.Tx // in a transaction: what exec binds the statements to
}

// prepare prepares the statements on the writer, once (Open): modernc.org/sqlite
// would otherwise parse each statement's SQL in every transaction.
func (st *statements) prepare(ctx context.Context, db *sql.DB) error {
	st.close() // from an attempt of Open that failed after it
	type prep struct {
		dst **sql.Stmt
		sql string
	}
	list := []prep{
		{&st.insert, `INSERT INTO capabilities (scheme, domain, name, version, version_key, stability, source, definition, digest, trust_tier, registered_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (scheme, domain, name, version) DO NOTHING
			RETURNING id`},
		{&st.digest, `SELECT digest FROM capabilities WHERE scheme = ? AND domain = ? AND name = ? AND version = ?`},
	}
	for t, h := range rowHeads {
		row := "(?" + strings.Repeat(", ?", h.width-1) + ")"
		for b := range st.rows[t] {
			list = append(list, prep{&st.rows[t][b], h.sql + row + strings.Repeat(", "+row, 1<<b-1)})
		}
	}
	for i, q := range latestSQL {
		list = append(list, prep{&st.latest[i], q})
	}
	for _, p := range list {
		stmt, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			st.close()
			return fmt.Errorf("prepare the statements of Put: %w", err)
		}
		*p.dst = stmt
	}
	return nil
}

// in returns the statements bound to tx, a transaction of the writer (on
// whose one connection they are already prepared). Close them before tx
// ends.
func (st *statements) in(ctx context.Context, tx *sql.Tx) *statements {
	out := *st
	out.insert, out.digest, out.tx = tx.StmtContext(ctx, st.insert), tx.StmtContext(ctx, st.digest), tx
	return &out
}

// exec runs one of the writer's prepared statements in the transaction.
func (st *statements) exec(ctx context.Context, stmt *sql.Stmt, args ...any) error {
	s := st.tx.StmtContext(ctx, stmt)
	defer s.Close()
	_, err := s.ExecContext(ctx, args...)
	return err
}

// query is exec for a statement that returns rows.
func (st *statements) query(ctx context.Context, stmt *sql.Stmt, args ...any) (*sql.Rows, func(), error) {
	s := st.tx.StmtContext(ctx, stmt)
	rows, err := s.QueryContext(ctx, args...)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return rows, func() { rows.Close(); s.Close() }, nil
}

// close closes the statements: the writer's (Open's, at Close) or those
// bound to a transaction (in's, only insert and digest).
func (st *statements) close() {
	list := []**sql.Stmt{&st.insert, &st.digest}
	if st.tx == nil {
		for t := range st.rows {
			for b := range st.rows[t] {
				list = append(list, &st.rows[t][b])
			}
		}
		for i := range st.latest {
			list = append(list, &st.latest[i])
		}
	}
	for _, s := range list {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
}

// Get returns one version; see registry.Store.
func (s *Store) Get(ctx context.Context, k registry.Key) (registry.Record, error) {
	row := s.reads.queryRow(ctx, `SELECT `+recordColumns+` FROM capabilities c
		WHERE c.scheme = ? AND c.domain = ? AND c.name = ? AND c.version = ?`, k.Scheme, k.Domain, k.Name, k.Version)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Record{}, fmt.Errorf("capability %s: %w", k, registry.ErrNotFound)
	}
	if err != nil {
		return registry.Record{}, fmt.Errorf("get %s from sqlite database %s: %w", k, s.path, err)
	}
	return r, nil
}

// Versions returns every version of a capability in ascending precedence;
// see registry.Store.
func (s *Store) Versions(ctx context.Context, scheme, domain, name string) ([]registry.Record, error) {
	rows, err := s.reads.query(ctx, `SELECT `+recordColumns+` FROM capabilities c
		WHERE c.scheme = ? AND c.domain = ? AND c.name = ?
		ORDER BY c.version_key, c.version`, scheme, domain, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of %s:%s/%s in sqlite database %s: %w", scheme, domain, name, s.path, err)
	}
	out, err := collect(rows)
	if err != nil {
		return nil, fmt.Errorf("list versions of %s:%s/%s in sqlite database %s: %w", scheme, domain, name, s.path, err)
	}
	return out, nil
}

// PrecedingVersions returns the version just below or level with each
// key in one query; see registry.Store.
func (s *Store) PrecedingVersions(ctx context.Context, keys []registry.Key) ([]*registry.Record, error) {
	out := make([]*registry.Record, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	bounds, err := read.VersionBounds(keys)
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions: %w", len(keys), err)
	}
	args := make([][4]string, len(keys))
	for i, k := range keys {
		args[i] = [4]string{k.Scheme, k.Domain, k.Name, bounds[i]}
	}
	list, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions: %w", len(keys), err)
	}
	// Per key, one descent of capabilities_order to the highest version
	// not above it.
	rows, err := s.reads.query(ctx, `SELECT `+recordColumns+`, j.key FROM json_each(?) j
		JOIN capabilities c ON c.id = (SELECT p.id FROM capabilities p
			WHERE p.scheme = j.value ->> 0 AND p.domain = j.value ->> 1 AND p.name = j.value ->> 2 AND p.version_key <= j.value ->> 3
			ORDER BY p.version_key DESC, p.version DESC LIMIT 1)`, string(list))
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions in sqlite database %s: %w", len(keys), s.path, err)
	}
	defer rows.Close()
	err = read.CollectPreceding(rows, out, func() (registry.Record, int, error) {
		var i int
		r, err := scanRecord(rows, &i)
		return r, i, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions in sqlite database %s: %w", len(keys), s.path, err)
	}
	return out, nil
}

// collect reads and closes rows of recordColumns. It returns an empty,
// non-nil slice when there are none.
func collect(rows *sql.Rows) ([]registry.Record, error) { return collectWith(rows) }

// collectWith is collect for rows with extra columns after recordColumns,
// scanned into extra (so that the last row's values remain).
func collectWith(rows *sql.Rows, extra ...any) ([]registry.Record, error) {
	defer rows.Close()
	return read.Collect(rows, func() (registry.Record, error) { return scanRecord(rows, extra...) })
}

// Deprecate marks a version deprecated; see registry.Store.
func (s *Store) Deprecate(ctx context.Context, ds []registry.Deprecation) ([]registry.Record, error) {
	return s.DeprecateAudited(ctx, ds, nil)
}

// DeprecateAudited is Deprecate committing the events of hook in the same
// transaction; see registry.Store.
func (s *Store) DeprecateAudited(ctx context.Context, ds []registry.Deprecation, hook *chain.Hook) ([]registry.Record, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	if err := write.CheckHook(hook, 0); err != nil {
		return nil, fmt.Errorf("deprecate %s in sqlite database %s: %w: nothing was written", ds[0].Key, s.path, err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("deprecate %s in sqlite database %s: begin: %w", ds[0].Key, s.path, err)
	}
	defer tx.Rollback()
	out := make([]registry.Record, len(ds))
	events := make([]registry.Event, len(ds))
	for i, d := range ds {
		k := d.Key
		var id int64
		r, err := scanRecord(tx.QueryRowContext(ctx, `SELECT `+recordColumns+`, c.id FROM capabilities c
			WHERE c.scheme = ? AND c.domain = ? AND c.name = ? AND c.version = ?`, k.Scheme, k.Domain, k.Name, k.Version), &id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("deprecate capability %s: %w", k, registry.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("deprecate %s in sqlite database %s: %w", k, s.path, err)
		}
		at := write.DeprecationTime(d.At)
		write.ApplyDeprecation(&r, d, at)
		b, err := write.MarshalDefinition(r.Definition)
		if err != nil {
			return nil, fmt.Errorf("deprecate %s: %w", k, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE capabilities SET stability = ?, definition = ?, deprecated_at = ? WHERE id = ?`,
			capability.StabilityDeprecated, b, formatTime(at), id); err != nil {
			return nil, fmt.Errorf("deprecate %s in sqlite database %s: %w", k, s.path, err)
		}
		out[i], events[i] = r, registry.Event{Kind: registry.EventDeprecated, Key: k}
	}
	if hook != nil {
		if err := s.appendHook(ctx, tx, hook, nil); err != nil {
			return nil, fmt.Errorf("deprecate %s in sqlite database %s: %w: nothing was written", ds[0].Key, s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("deprecate %s in sqlite database %s: commit: %w", ds[0].Key, s.path, err)
	}
	s.hub.publish(events)
	return out, nil
}

// GetRaw returns one version's stored definition JSON; see
// registry.Store.
func (s *Store) GetRaw(ctx context.Context, k registry.Key) (registry.RawRecord, error) {
	if err := s.checkOpen(); err != nil {
		return registry.RawRecord{}, err
	}
	var def string
	var r registry.RawRecord
	err := s.reads.queryRow(ctx, `SELECT definition, digest, trust_tier FROM capabilities
		WHERE scheme = ? AND domain = ? AND name = ? AND version = ?`, k.Scheme, k.Domain, k.Name, k.Version).Scan(&def, &r.Digest, &r.TrustTier)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.RawRecord{}, fmt.Errorf("capability %s: %w", k, registry.ErrNotFound)
	}
	if err != nil {
		return registry.RawRecord{}, fmt.Errorf("get %s from sqlite database %s: %w", k, s.path, err)
	}
	r.Definition = []byte(def)
	return r, nil
}
