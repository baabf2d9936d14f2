package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

// maxAttempts bounds how often a write transaction is retried after a
// serialization failure or deadlock.
const maxAttempts = 5

// insertSQL inserts a batch of versions from parallel arrays, skipping keys
// that exist (another transaction's insert of the same key waits for that
// transaction, so exactly one of concurrent inserts wins), and returns the
// rows it created.
const insertSQL = `INSERT INTO capabilities AS c
	(scheme, domain, name, version, version_key, stability, source, definition, digest, trust_tier, registered_at, search)
SELECT u.scheme, u.domain, u.name, u.version, u.version_key, u.stability, u.source, u.definition::json, u.digest, u.trust_tier, u.registered_at,
	setweight(to_tsvector('english', u.t_name || ' ' || u.t_title), 'A') ||
	setweight(to_tsvector('english', u.t_keywords || ' ' || u.t_intents), 'B') ||
	setweight(to_tsvector('english', u.t_domains || ' ' || u.t_categories), 'C') ||
	setweight(to_tsvector('english', u.t_description), 'D')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[],
	$12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[])
	AS u(scheme, domain, name, version, version_key, stability, source, definition, digest, trust_tier, registered_at,
	t_name, t_title, t_description, t_keywords, t_intents, t_domains, t_categories)
ON CONFLICT (scheme, domain, name, version) DO NOTHING
RETURNING c.id, c.scheme, c.domain, c.name, c.version`

// latestSQL recomputes is_latest for the capabilities named by three
// parallel arrays: the highest version by precedence (then by version text,
// for versions differing only in build metadata).
const latestSQL = `UPDATE capabilities AS c SET is_latest = (c.id = l.id)
FROM (
	SELECT DISTINCT ON (scheme, domain, name) id, scheme, domain, name
	FROM capabilities
	WHERE (scheme, domain, name) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
	ORDER BY scheme, domain, name, version_key DESC, version DESC
) AS l
WHERE c.scheme = l.scheme AND c.domain = l.domain AND c.name = l.name AND c.is_latest <> (c.id = l.id)`

// searchLatestDeleteSQL and searchLatestInsertSQL keep search_latest equal
// to the latest rows of the capabilities named by three parallel arrays.
const searchLatestDeleteSQL = `DELETE FROM search_latest
WHERE (scheme, domain, name) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`

const searchLatestInsertSQL = `INSERT INTO search_latest (id, scheme, domain, name, version_key, version, search)
SELECT id, scheme, domain, name, version_key, version, search FROM capabilities
WHERE is_latest AND (scheme, domain, name) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`

// notification is the payload of a NOTIFY.
type notification struct {
	Kind    string `json:"k"`
	Scheme  string `json:"s"`
	Domain  string `json:"d"`
	Name    string `json:"n"`
	Version string `json:"v"`
}

func payload(kind string, k registry.Key) string {
	b, _ := json.Marshal(notification{kind, k.Scheme, k.Domain, k.Name, k.Version})
	return string(b)
}

// capabilityLock is the advisory lock key of a capability in this schema:
// writers of the same capability take it, in ascending order, so that the
// latest-version bookkeeping sees every committed version.
func (s *Store) capabilityLock(k registry.Key) int64 {
	h := fnv.New64a()
	for _, part := range []string{s.schema, k.Scheme, k.Domain, k.Name} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// inTx runs fn in a transaction, again when it fails with a serialization
// failure or deadlock.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	return err
}

// Put stores the records in one transaction; see registry.Store.
func (s *Store) Put(ctx context.Context, recs []registry.Record) ([]registry.PutResult, error) {
	return s.PutAudited(ctx, recs, nil)
}

// PutAudited is Put committing, in the same transaction, the audit events
// of hook for the versions it creates; see registry.Store. The
// chain's lock is taken after everything else, just before the events are
// inserted and the transaction commits.
func (s *Store) PutAudited(ctx context.Context, recs []registry.Record, hook *chain.Hook) ([]registry.PutResult, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	results := make([]registry.PutResult, len(recs))
	if len(recs) == 0 {
		return results, nil
	}
	if err := write.CheckHook(hook, len(recs)); err != nil {
		return nil, fmt.Errorf("put %d records into postgres %s: %w: nothing was written", len(recs), s.where, err)
	}
	now := time.Now()
	preps := make([]write.Prepared, len(recs))
	first := map[registry.Key]int{} // key → index of its first record
	var unique []int
	for i, r := range recs {
		p, err := write.Prepare(r, now)
		if err != nil {
			return nil, err
		}
		for f := range p.FTS {
			p.FTS[f] = clean(p.FTS[f]) // text PostgreSQL can hold
		}
		preps[i] = p
		results[i].Key = r.Key
		if _, dup := first[r.Key]; !dup {
			first[r.Key] = i
			unique = append(unique, i)
		}
	}
	// Insert in key order, so that transactions sharing keys wait for each
	// other in the same order and never deadlock.
	slices.SortFunc(unique, func(a, b int) int { return compareKeys(recs[a].Key, recs[b].Key) })

	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for i := range results {
			results[i].Created = false
		}
		var locks []int64
		for _, i := range unique {
			locks = append(locks, s.capabilityLock(recs[i].Key))
		}
		slices.Sort(locks)
		locks = slices.Compact(locks)
		lockBatch := &pgx.Batch{}
		for _, l := range locks {
			lockBatch.Queue(`SELECT pg_advisory_xact_lock($1)`, l)
		}
		if err := tx.SendBatch(ctx, lockBatch).Close(); err != nil {
			return fmt.Errorf("lock capabilities: %w", err)
		}

		var cols [18][]string
		var times []time.Time
		for _, i := range unique {
			p, k := preps[i], recs[i].Key
			for c, v := range []string{k.Scheme, k.Domain, k.Name, k.Version, p.VersionKey, p.Stability, p.Source, p.Definition, p.Rec.Digest, p.Rec.TrustTier} {
				cols[c] = append(cols[c], v)
			}
			for c, v := range p.FTS {
				cols[11+c] = append(cols[11+c], v)
			}
			times = append(times, p.RegisteredAt)
		}
		args := make([]any, 0, 18)
		for c := 0; c < 10; c++ {
			args = append(args, cols[c])
		}
		args = append(args, times)
		for c := 11; c < 18; c++ {
			args = append(args, cols[c])
		}
		rows, err := tx.Query(ctx, insertSQL, args...)
		if err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		created := map[registry.Key]int64{}
		for rows.Next() {
			var id int64
			var k registry.Key
			if err := rows.Scan(&id, &k.Scheme, &k.Domain, &k.Name, &k.Version); err != nil {
				rows.Close()
				return fmt.Errorf("insert: %w", err)
			}
			created[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("insert: %w", err)
		}

		// Keys that existed: identical content is a no-op, other content a
		// conflict that rolls back the whole batch.
		stored := map[registry.Key]string{}
		var missing [4][]string
		for _, i := range unique {
			k := recs[i].Key
			if _, ok := created[k]; ok {
				stored[k] = recs[i].Digest
				continue
			}
			for c, v := range []string{k.Scheme, k.Domain, k.Name, k.Version} {
				missing[c] = append(missing[c], v)
			}
		}
		if len(missing[0]) > 0 {
			rows, err := tx.Query(ctx, `SELECT scheme, domain, name, version, digest FROM capabilities
				WHERE (scheme, domain, name, version) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))`,
				missing[0], missing[1], missing[2], missing[3])
			if err != nil {
				return fmt.Errorf("read stored digests: %w", err)
			}
			for rows.Next() {
				var k registry.Key
				var digest string
				if err := rows.Scan(&k.Scheme, &k.Domain, &k.Name, &k.Version, &digest); err != nil {
					rows.Close()
					return fmt.Errorf("read stored digests: %w", err)
				}
				stored[k] = digest
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read stored digests: %w", err)
			}
		}
		for i, r := range recs {
			existing, ok := stored[r.Key]
			if !ok {
				return fmt.Errorf("put %s: the version was neither inserted nor found: retry", r.Key)
			}
			if existing != r.Digest {
				return &registry.ConflictError{Key: r.Key, ExistingDigest: existing, NewDigest: r.Digest}
			}
			_, isNew := created[r.Key]
			results[i].Created = isNew && first[r.Key] == i
		}
		if len(created) == 0 {
			return nil
		}

		// Side tables, latest versions and notifications of what was created.
		var sideIDs [4][]int64
		var sideVals [4][]string
		var capCols [3][]string
		var notes []string
		seenCap := map[[3]string]bool{}
		for _, i := range unique {
			k := recs[i].Key
			id, ok := created[k]
			if !ok {
				continue
			}
			for t, vals := range [][]string{preps[i].Domains, preps[i].Categories, preps[i].Intents, preps[i].Bindings} {
				for _, v := range vals {
					sideIDs[t] = append(sideIDs[t], id)
					sideVals[t] = append(sideVals[t], v)
				}
			}
			if c := [3]string{k.Scheme, k.Domain, k.Name}; !seenCap[c] {
				seenCap[c] = true
				for j := range c {
					capCols[j] = append(capCols[j], c[j])
				}
			}
		}
		for i, r := range recs {
			if results[i].Created {
				notes = append(notes, payload(registry.EventRegistered, r.Key))
			}
		}
		b := &pgx.Batch{}
		for t, table := range []string{"capability_domains (capability_id, domain)", "capability_categories (capability_id, category)",
			"capability_intents (capability_id, intent)", "capability_bindings (capability_id, binding_type)"} {
			if len(sideIDs[t]) > 0 {
				b.Queue(`INSERT INTO `+table+` SELECT * FROM unnest($1::bigint[], $2::text[]) ON CONFLICT DO NOTHING`, sideIDs[t], sideVals[t])
			}
		}
		b.Queue(latestSQL, capCols[0], capCols[1], capCols[2])
		b.Queue(searchLatestDeleteSQL, capCols[0], capCols[1], capCols[2])
		b.Queue(searchLatestInsertSQL, capCols[0], capCols[1], capCols[2])
		b.Queue(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, s.channel, notes)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		if hook != nil {
			return s.appendHook(ctx, tx, hook, func(i int) bool { return results[i].Created })
		}
		return nil
	})
	if err != nil {
		var ce *registry.ConflictError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("put %d records into postgres %s: %w: nothing was written", len(recs), s.where, err)
	}
	return results, nil
}

func compareKeys(a, b registry.Key) int {
	for _, c := range [][2]string{{a.Scheme, b.Scheme}, {a.Domain, b.Domain}, {a.Name, b.Name}, {a.Version, b.Version}} {
		if r := strings.Compare(c[0], c[1]); r != 0 {
			return r
		}
	}
	return 0
}

// Get returns one version; see registry.Store.
func (s *Store) Get(ctx context.Context, k registry.Key) (registry.Record, error) {
	if err := s.checkOpen(); err != nil {
		return registry.Record{}, err
	}
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM capabilities c
		WHERE c.scheme = $1 AND c.domain = $2 AND c.name = $3 AND c.version = $4`, k.Scheme, k.Domain, k.Name, k.Version))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Record{}, fmt.Errorf("capability %s: %w", k, registry.ErrNotFound)
	}
	if err != nil {
		return registry.Record{}, fmt.Errorf("get %s from postgres %s: %w", k, s.where, err)
	}
	return r, nil
}

// Versions returns every version of a capability in ascending precedence;
// see registry.Store.
func (s *Store) Versions(ctx context.Context, scheme, domain, name string) ([]registry.Record, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM capabilities c
		WHERE c.scheme = $1 AND c.domain = $2 AND c.name = $3
		ORDER BY c.version_key, c.version`, scheme, domain, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of %s:%s/%s in postgres %s: %w", scheme, domain, name, s.where, err)
	}
	out, err := collect(rows)
	if err != nil {
		return nil, fmt.Errorf("list versions of %s:%s/%s in postgres %s: %w", scheme, domain, name, s.where, err)
	}
	return out, nil
}

// collect reads and closes rows of recordColumns. It returns an empty,
// non-nil slice when there are none.
func collect(rows pgx.Rows) ([]registry.Record, error) {
	defer rows.Close()
	return read.Collect(rows, func() (registry.Record, error) { return scanRecord(rows) })
}

// Deprecate marks a version deprecated; see registry.Store.
func (s *Store) Deprecate(ctx context.Context, ds []registry.Deprecation) ([]registry.Record, error) {
	return s.DeprecateAudited(ctx, ds, nil)
}

// DeprecateAudited is Deprecate committing the events of hook in the same
// transaction (the chain's lock taken last); see registry.Store.
func (s *Store) DeprecateAudited(ctx context.Context, ds []registry.Deprecation, hook *chain.Hook) ([]registry.Record, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, nil
	}
	if err := write.CheckHook(hook, 0); err != nil {
		return nil, fmt.Errorf("deprecate %s in postgres %s: %w: nothing was written", ds[0].Key, s.where, err)
	}
	out := make([]registry.Record, len(ds))
	var current registry.Key // the version being deprecated, for errors
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for i, d := range ds {
			k := d.Key
			current = k
			var id int64
			r, err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordColumns+`, c.id FROM capabilities c
				WHERE c.scheme = $1 AND c.domain = $2 AND c.name = $3 AND c.version = $4 FOR UPDATE`, k.Scheme, k.Domain, k.Name, k.Version), &id)
			if err != nil {
				return err
			}
			at := write.DeprecationTime(d.At)
			write.ApplyDeprecation(&r, d, at)
			def, err := write.MarshalDefinition(r.Definition)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE capabilities SET stability = $1, definition = $2::json, deprecated_at = $3 WHERE id = $4`,
				capability.StabilityDeprecated, def, at, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, payload(registry.EventDeprecated, k)); err != nil {
				return err
			}
			out[i] = r
		}
		if hook != nil {
			return s.appendHook(ctx, tx, hook, nil)
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("deprecate capability %s: %w", current, registry.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("deprecate %s in postgres %s: %w", current, s.where, err)
	}
	return out, nil
}

// GetRaw returns one version's stored definition JSON; see
// registry.Store.
func (s *Store) GetRaw(ctx context.Context, k registry.Key) (registry.RawRecord, error) {
	if err := s.checkOpen(); err != nil {
		return registry.RawRecord{}, err
	}
	var r registry.RawRecord
	err := s.pool.QueryRow(ctx, `SELECT definition::text, digest, trust_tier FROM capabilities
		WHERE scheme = $1 AND domain = $2 AND name = $3 AND version = $4`, k.Scheme, k.Domain, k.Name, k.Version).Scan(&r.Definition, &r.Digest, &r.TrustTier)
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.RawRecord{}, fmt.Errorf("capability %s: %w", k, registry.ErrNotFound)
	}
	if err != nil {
		return registry.RawRecord{}, fmt.Errorf("get %s from postgres %s: %w", k, s.where, err)
	}
	return r, nil
}
