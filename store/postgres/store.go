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
// rows it created. A row is inserted as its capability's latest when it is
// the highest of the batch's versions of its capability ($19, top) and
// above the stored latest (read after the capability's lock, so no other
// writer of the capability can commit meanwhile), so that it need not be
// updated afterwards: an update of a capability row writes a whole new
// row version, definition and search vector, into every index.
const insertSQL = `INSERT INTO capabilities AS c
	(scheme, domain, name, version, version_key, stability, source, definition, digest, trust_tier, registered_at, is_latest, search)
SELECT u.scheme, u.domain, u.name, u.version, u.version_key, u.stability, u.source, u.definition::json, u.digest, u.trust_tier, u.registered_at,
	u.top AND NOT EXISTS (SELECT FROM capabilities l
		WHERE l.is_latest AND l.scheme = u.scheme AND l.domain = u.domain AND l.name = u.name
		AND (l.version_key, l.version) >= (u.version_key COLLATE "C", u.version COLLATE "C")),
	setweight(to_tsvector('english', u.t_name || ' ' || u.t_title), 'A') ||
	setweight(to_tsvector('english', u.t_keywords || ' ' || u.t_intents), 'B') ||
	setweight(to_tsvector('english', u.t_domains || ' ' || u.t_categories), 'C') ||
	setweight(to_tsvector('english', u.t_description), 'D')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[],
	$12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::bool[])
	AS u(scheme, domain, name, version, version_key, stability, source, definition, digest, trust_tier, registered_at,
	t_name, t_title, t_description, t_keywords, t_intents, t_domains, t_categories, top)
ON CONFLICT (scheme, domain, name, version) DO NOTHING
RETURNING c.id, c.scheme, c.domain, c.name, c.version, c.is_latest`

// demoteSQL clears the latest flag of the capabilities named by three
// parallel arrays but on their new latest rows ($4): the rows that were
// their latest before the batch inserted a higher version.
const demoteSQL = `UPDATE capabilities SET is_latest = false
WHERE is_latest AND (scheme, domain, name) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])) AND id <> ALL($4::bigint[])`

// searchLatestDeleteSQL and searchLatestInsertSQL replace the rows of
// search_latest of the capabilities named by three parallel arrays by
// their new latest rows ($1 of searchLatestInsertSQL).
const searchLatestDeleteSQL = `DELETE FROM search_latest
WHERE (scheme, domain, name) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`

const searchLatestInsertSQL = `INSERT INTO search_latest (id, scheme, domain, name, version_key, version, search)
SELECT id, scheme, domain, name, version_key, version, search FROM capabilities WHERE id = ANY($1::bigint[])`

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
// of hook for the versions it creates; see registry.Store. The chain's
// lock is taken after everything else, just before the events are
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
	b, err := preparePut(recs)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		results[i].Key = r.Key
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		err = s.putOnce(ctx, b, results, hook)
		if !retryable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	if err != nil {
		var ce *registry.ConflictError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("put %d records into postgres %s: %w: nothing was written", len(recs), s.where, err)
	}
	return results, nil
}

// putBatch is a batch of records checked and encoded for Put.
type putBatch struct {
	recs  []registry.Record
	preps []write.Prepared
	first map[registry.Key]int // key → index of its first record
	// unique are the indexes of each key's first record, in key order, so
	// that transactions sharing keys insert (and wait for each other) in
	// the same order and never deadlock.
	unique []int
}

// preparePut checks and encodes recs, before any I/O.
func preparePut(recs []registry.Record) (*putBatch, error) {
	now := time.Now()
	b := &putBatch{recs: recs, preps: make([]write.Prepared, len(recs)), first: map[registry.Key]int{}}
	for i, r := range recs {
		p, err := write.Prepare(r, now)
		if err != nil {
			return nil, err
		}
		p.FTS = p.FTS.Map(clean) // text PostgreSQL can hold
		b.preps[i] = p
		if _, dup := b.first[r.Key]; !dup {
			b.first[r.Key] = i
			b.unique = append(b.unique, i)
		}
	}
	slices.SortFunc(b.unique, func(x, y int) int { return compareKeys(recs[x].Key, recs[y].Key) })
	return b, nil
}

// querier is what the steps of a write send statements through: a
// connection in a transaction begun by hand (putOnce), or a pgx.Tx.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// putOnce is one attempt of PutAudited's transaction, in four round trips
// (five when some keys existed): BEGIN with the capabilities' locks; the
// insert; the side tables, the latest versions and the notifications,
// pipelined with the audit chain's lock and the read of its last event;
// the events' inserts pipelined with COMMIT. The chain's lock, which every
// appender on every replica waits for, is so held for one round trip. It
// fills results; a failure rolls back.
func (s *Store) putOnce(ctx context.Context, b *putBatch, results []registry.PutResult, hook *chain.Hook) (err error) {
	for i := range results {
		results[i].Created = false
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	conn := c.Conn()
	defer func() {
		if err != nil {
			rollback(ctx, conn)
		}
	}()
	if err := s.lockCapabilities(ctx, conn, b, beginAuditSQL); err != nil {
		return err
	}
	created, err := insertVersions(ctx, conn, b)
	if err != nil {
		return err
	}
	stored, err := storedDigests(ctx, conn, b, created)
	if err != nil {
		return err
	}
	if err := b.settle(results, created, stored); err != nil {
		return err
	}
	final := &pgx.Batch{}
	if len(created) > 0 {
		batch := s.indexBatch(b, created, results)
		keep := func(i int) bool { return results[i].Created }
		if hook != nil && write.HookAppends(hook, keep) {
			last, err := s.lockAuditAfter(ctx, conn, batch)
			if err != nil {
				return err
			}
			events, err := write.ChainHook(hook, last, keep)
			if err != nil {
				return err
			}
			for _, ev := range events {
				queueInsert(final, ev)
			}
		} else if err := conn.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("index: %w", err)
		}
	}
	final.Queue(commitSQL).Exec(checkCommit)
	if err := conn.SendBatch(ctx, final).Close(); err != nil {
		return fmt.Errorf("insert the audit events and commit: %w", err)
	}
	return nil
}

// lockCapabilities takes the advisory locks of the batch's capabilities,
// in ascending order, after the statements first (such as BEGIN) in the
// same pipeline.
func (s *Store) lockCapabilities(ctx context.Context, tx querier, b *putBatch, first ...string) error {
	var locks []int64
	for _, i := range b.unique {
		locks = append(locks, s.capabilityLock(b.recs[i].Key))
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	batch := &pgx.Batch{}
	for _, sql := range first {
		batch.Queue(sql)
	}
	// One statement takes them all, in the array's (ascending) order: a
	// function scan yields its rows in order, and each row's lock is taken
	// as the row is produced.
	batch.Queue(`SELECT count(pg_advisory_xact_lock(l)) FROM unnest($1::bigint[]) AS l`, locks)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("lock capabilities: %w", err)
	}
	return nil
}

// insertColumns are the parameters of insertSQL: parallel arrays, one
// element per version to insert.
type insertColumns struct {
	scheme, domain, name, version, versionKey, stability, source, definition, digest, trustTier []string
	registeredAt                                                                                []time.Time
	tName, tTitle, tDescription, tKeywords, tIntents, tDomains, tCategories                     []string
	top                                                                                         []bool
}

// add appends one prepared record; top says whether it is the highest
// version of its capability in the batch.
func (c *insertColumns) add(p write.Prepared, top bool) {
	k := p.Rec.Key
	c.scheme = append(c.scheme, k.Scheme)
	c.domain = append(c.domain, k.Domain)
	c.name = append(c.name, k.Name)
	c.version = append(c.version, k.Version)
	c.versionKey = append(c.versionKey, p.VersionKey)
	c.stability = append(c.stability, p.Stability)
	c.source = append(c.source, p.Source)
	c.definition = append(c.definition, p.Definition)
	c.digest = append(c.digest, p.Rec.Digest)
	c.trustTier = append(c.trustTier, p.Rec.TrustTier)
	c.registeredAt = append(c.registeredAt, p.RegisteredAt)
	c.tName = append(c.tName, p.FTS.Name)
	c.tTitle = append(c.tTitle, p.FTS.Title)
	c.tDescription = append(c.tDescription, p.FTS.Description)
	c.tKeywords = append(c.tKeywords, p.FTS.Keywords)
	c.tIntents = append(c.tIntents, p.FTS.Intents)
	c.tDomains = append(c.tDomains, p.FTS.Domains)
	c.tCategories = append(c.tCategories, p.FTS.Categories)
	c.top = append(c.top, top)
}

// args returns the columns in the order of insertSQL's parameters.
func (c *insertColumns) args() []any {
	return []any{c.scheme, c.domain, c.name, c.version, c.versionKey, c.stability, c.source, c.definition, c.digest, c.trustTier,
		c.registeredAt, c.tName, c.tTitle, c.tDescription, c.tKeywords, c.tIntents, c.tDomains, c.tCategories, c.top}
}

// createdRow is a version a Put created: its id, and whether it was
// inserted as its capability's latest.
type createdRow struct {
	id     int64
	latest bool
}

// insertVersions inserts the batch's keys that do not exist yet and
// returns those it created.
func insertVersions(ctx context.Context, tx querier, b *putBatch) (map[registry.Key]createdRow, error) {
	// top: the index of each capability's highest version in the batch,
	// as the stores order versions (version key, then version text).
	top := map[registry.Key]int{}
	for _, i := range b.unique {
		k := b.recs[i].Key
		c := registry.Key{Scheme: k.Scheme, Domain: k.Domain, Name: k.Name}
		if t, ok := top[c]; !ok || above(b.preps[i], b.preps[t]) {
			top[c] = i
		}
	}
	var cols insertColumns
	for _, i := range b.unique {
		k := b.recs[i].Key
		cols.add(b.preps[i], top[registry.Key{Scheme: k.Scheme, Domain: k.Domain, Name: k.Name}] == i)
	}
	rows, err := tx.Query(ctx, insertSQL, cols.args()...)
	if err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}
	defer rows.Close()
	created := map[registry.Key]createdRow{}
	for rows.Next() {
		var c createdRow
		var k registry.Key
		if err := rows.Scan(&c.id, &k.Scheme, &k.Domain, &k.Name, &k.Version, &c.latest); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		created[k] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}
	return created, nil
}

// above reports whether p is a higher version than q of the same
// capability: by version key, then by version text (versions differing
// only in build metadata), byte-wise as the COLLATE "C" columns compare.
func above(p, q write.Prepared) bool {
	if p.VersionKey != q.VersionKey {
		return p.VersionKey > q.VersionKey
	}
	return p.Rec.Key.Version > q.Rec.Key.Version
}

// keyColumns are parallel arrays of keys, for unnest.
type keyColumns struct{ scheme, domain, name, version []string }

func (c *keyColumns) add(k registry.Key) {
	c.scheme = append(c.scheme, k.Scheme)
	c.domain = append(c.domain, k.Domain)
	c.name = append(c.name, k.Name)
	c.version = append(c.version, k.Version)
}

// storedDigests returns the digest of every key of the batch: the new
// one of a created key, the stored one of a key that existed.
func storedDigests(ctx context.Context, tx querier, b *putBatch, created map[registry.Key]createdRow) (map[registry.Key]string, error) {
	stored := map[registry.Key]string{}
	var missing keyColumns
	for _, i := range b.unique {
		k := b.recs[i].Key
		if _, ok := created[k]; ok {
			stored[k] = b.recs[i].Digest
			continue
		}
		missing.add(k)
	}
	if len(missing.scheme) == 0 {
		return stored, nil
	}
	rows, err := tx.Query(ctx, `SELECT scheme, domain, name, version, digest FROM capabilities
		WHERE (scheme, domain, name, version) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))`,
		missing.scheme, missing.domain, missing.name, missing.version)
	if err != nil {
		return nil, fmt.Errorf("read stored digests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k registry.Key
		var digest string
		if err := rows.Scan(&k.Scheme, &k.Domain, &k.Name, &k.Version, &digest); err != nil {
			return nil, fmt.Errorf("read stored digests: %w", err)
		}
		stored[k] = digest
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored digests: %w", err)
	}
	return stored, nil
}

// settle sets results from what was created, or refuses the batch: a key
// that existed with other content is a conflict that rolls back the whole
// batch; with identical content it is a no-op.
func (b *putBatch) settle(results []registry.PutResult, created map[registry.Key]createdRow, stored map[registry.Key]string) error {
	for i, r := range b.recs {
		existing, ok := stored[r.Key]
		if !ok {
			return fmt.Errorf("put %s: the version was neither inserted nor found: retry", r.Key)
		}
		if existing != r.Digest {
			return &registry.ConflictError{Key: r.Key, ExistingDigest: existing, NewDigest: r.Digest}
		}
		_, isNew := created[r.Key]
		results[i].Created = isNew && b.first[r.Key] == i
	}
	return nil
}

// sideTables are the capability_* tables of the filters, with the values
// of a prepared record each holds.
var sideTables = []struct {
	table  string
	values func(p write.Prepared) []string
}{
	{"capability_domains (capability_id, domain)", func(p write.Prepared) []string { return p.Domains }},
	{"capability_categories (capability_id, category)", func(p write.Prepared) []string { return p.Categories }},
	{"capability_intents (capability_id, intent)", func(p write.Prepared) []string { return p.Intents }},
	{"capability_bindings (capability_id, binding_type)", func(p write.Prepared) []string { return p.Bindings }},
}

// indexBatch queues what indexes the created versions: their side
// tables, the latest flag and search_latest of the capabilities whose
// latest version they are, and the notifications to watchers.
func (s *Store) indexBatch(b *putBatch, created map[registry.Key]createdRow, results []registry.PutResult) *pgx.Batch {
	batch := &pgx.Batch{}
	for _, side := range sideTables {
		var ids []int64
		var vals []string
		for _, i := range b.unique {
			c, ok := created[b.recs[i].Key]
			if !ok {
				continue
			}
			for _, v := range side.values(b.preps[i]) {
				ids, vals = append(ids, c.id), append(vals, v)
			}
		}
		if len(ids) > 0 {
			batch.Queue(`INSERT INTO `+side.table+` SELECT * FROM unnest($1::bigint[], $2::text[]) ON CONFLICT DO NOTHING`, ids, vals)
		}
	}
	var caps keyColumns
	var latest []int64
	for _, i := range b.unique {
		k := b.recs[i].Key
		if c := created[k]; c.latest {
			caps.add(registry.Key{Scheme: k.Scheme, Domain: k.Domain, Name: k.Name})
			latest = append(latest, c.id)
		}
	}
	if len(latest) > 0 {
		batch.Queue(demoteSQL, caps.scheme, caps.domain, caps.name, latest)
		batch.Queue(searchLatestDeleteSQL, caps.scheme, caps.domain, caps.name)
		batch.Queue(searchLatestInsertSQL, latest)
	}
	var notes []string
	for i, r := range b.recs {
		if results[i].Created {
			notes = append(notes, payload(registry.EventRegistered, r.Key))
		}
	}
	batch.Queue(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, s.channel, notes)
	return batch
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

// PrecedingVersions returns the version just below or level with each
// key in one query; see registry.Store.
func (s *Store) PrecedingVersions(ctx context.Context, keys []registry.Key) ([]*registry.Record, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	out := make([]*registry.Record, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	bounds, err := read.VersionBounds(keys)
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions: %w", len(keys), err)
	}
	var cols keyColumns
	for _, k := range keys {
		cols.add(k)
	}
	// Per key, one descent of capabilities_order to the highest version
	// not above it.
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+`, u.i - 1 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
			WITH ORDINALITY AS u(scheme, domain, name, version_key, i)
		CROSS JOIN LATERAL (SELECT * FROM capabilities p
			WHERE p.scheme = u.scheme AND p.domain = u.domain AND p.name = u.name AND p.version_key <= u.version_key COLLATE "C"
			ORDER BY p.version_key DESC, p.version DESC LIMIT 1) AS c`, cols.scheme, cols.domain, cols.name, bounds)
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions in postgres %s: %w", len(keys), s.where, err)
	}
	defer rows.Close()
	err = read.CollectPreceding(rows, out, func() (registry.Record, int, error) {
		var i int
		r, err := scanRecord(rows, &i)
		return r, i, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the versions preceding %d versions in postgres %s: %w", len(keys), s.where, err)
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
