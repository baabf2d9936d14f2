package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/caphub/caphub/store/internal/write"
)

// createdRow is a version a Put created: its row id and what it was
// prepared from.
type createdRow struct {
	id   int64
	prep *write.Prepared
}

// The tables Put fills with multi-row inserts (statements.rows), by
// rowHeads' index.
const (
	rowsDomains = iota
	rowsCategories
	rowsIntents
	rowsBindings
	rowsFTS
	rowsFTSLatest
)

// rowHeads are the multi-row inserts of Put: the statement before its
// VALUES rows, and how many values a row has.
var rowHeads = [...]struct {
	sql   string
	width int
}{
	rowsDomains:    {`INSERT OR IGNORE INTO capability_domains (capability_id, domain) VALUES `, 2},
	rowsCategories: {`INSERT OR IGNORE INTO capability_categories (capability_id, category) VALUES `, 2},
	rowsIntents:    {`INSERT OR IGNORE INTO capability_intents (capability_id, intent) VALUES `, 2},
	rowsBindings:   {`INSERT OR IGNORE INTO capability_bindings (capability_id, binding_type) VALUES `, 2},
	rowsFTS:        {`INSERT INTO capabilities_fts (rowid, name, title, description, keywords, intents, domains, categories) VALUES `, 8},
	rowsFTSLatest:  {`INSERT INTO capabilities_fts_latest (rowid, name, title, description, keywords, intents, domains, categories) VALUES `, 8},
}

// maxRowsBits bounds a multi-row insert to 1<<maxRowsBits rows (1,024
// values at most, well within SQLite's 32,766). A batch is inserted a
// power of two rows a statement, so every statement is prepared once.
const maxRowsBits = 7

// markLatest's statements, by index in latestSQL.
const (
	latestRead = iota
	latestDemote
	latestDemoteFTS
	latestPromote
)

// latestSQL are markLatest's statements; each takes a JSON array of row
// ids (json_each).
var latestSQL = [...]string{
	// The created rows are not flagged yet, so the flagged rows of their
	// capabilities are those stored before the Put.
	latestRead: `SELECT DISTINCT l.id, l.scheme, l.domain, l.name, l.version_key, l.version
		FROM capabilities n JOIN capabilities l
			ON l.scheme = n.scheme AND l.domain = n.domain AND l.name = n.name AND l.is_latest = 1
		WHERE n.id IN (SELECT value FROM json_each(?))`,
	latestDemote:    `UPDATE capabilities SET is_latest = 0 WHERE id IN (SELECT value FROM json_each(?))`,
	latestDemoteFTS: `DELETE FROM capabilities_fts_latest WHERE rowid IN (SELECT value FROM json_each(?))`,
	latestPromote:   `UPDATE capabilities SET is_latest = 1 WHERE id IN (SELECT value FROM json_each(?))`,
}

// indexRecords fills the side tables and the full-text index of the
// created rows, a few multi-row statements for the whole batch rather than
// one statement per value.
func (st *statements) indexRecords(ctx context.Context, created []createdRow) error {
	var side [rowsBindings + 1][]any
	fts := make([]any, 0, 8*len(created))
	for _, c := range created {
		p := c.prep
		for t, values := range [...][]string{rowsDomains: p.Domains, rowsCategories: p.Categories, rowsIntents: p.Intents, rowsBindings: p.Bindings} {
			for _, v := range values {
				side[t] = append(side[t], c.id, v)
			}
		}
		fts = appendFTS(fts, c)
	}
	for t, values := range side {
		if err := st.insertRows(ctx, t, values); err != nil {
			return fmt.Errorf("index the filters: %w", err)
		}
	}
	if err := st.insertRows(ctx, rowsFTS, fts); err != nil {
		return fmt.Errorf("full-text index: %w", err)
	}
	return nil
}

// appendFTS appends the values of c's row of a full-text table.
func appendFTS(values []any, c createdRow) []any {
	f := c.prep.FTS
	return append(values, c.id, f.Name, f.Title, f.Description, f.Keywords, f.Intents, f.Domains, f.Categories)
}

// insertRows inserts the rows of values into the table of rowHeads[t],
// the largest power of two rows (up to 1<<maxRowsBits) a statement.
func (st *statements) insertRows(ctx context.Context, t int, values []any) error {
	width := rowHeads[t].width
	for n := len(values) / width; n > 0; {
		b := min(bits.Len(uint(n))-1, maxRowsBits)
		k := 1 << b
		if err := st.exec(ctx, st.rows[t][b], values[:k*width]...); err != nil {
			return err
		}
		values, n = values[k*width:], n-k
	}
	return nil
}

// latestRow is a version that may be the latest of its capability.
type latestRow struct {
	id                  int64
	versionKey, version string
	created             *createdRow // nil: stored before this Put
}

// above reports whether r is a higher version than o: by precedence, then
// by version text (for versions differing only in build metadata), as
// SQLite orders the text columns (bytewise).
func (r latestRow) above(o latestRow) bool {
	if r.versionKey != o.versionKey {
		return r.versionKey > o.versionKey
	}
	return r.version > o.version
}

// capKey is a capability: a Key without Version.
type capKey struct{ scheme, domain, name string }

// markLatest moves the latest flag, and the latest-only full-text index,
// of every capability with a created version, in a fixed number of
// statements for the whole batch: it reads the capabilities' latest rows
// before this Put in one query, picks each one's highest version, and
// moves the flag only where a created version is above the stored one.
func (st *statements) markLatest(ctx context.Context, created []createdRow) error {
	if len(created) == 0 {
		return nil
	}
	best := map[capKey]latestRow{}
	ids := make([]int64, len(created))
	for i := range created {
		c := &created[i]
		ids[i] = c.id
		k := c.prep.Rec.Key
		ck := capKey{k.Scheme, k.Domain, k.Name}
		r := latestRow{id: c.id, versionKey: c.prep.VersionKey, version: k.Version, created: c}
		if b, ok := best[ck]; !ok || r.above(b) {
			best[ck] = r
		}
	}
	demote, err := st.readLatest(ctx, ids, best)
	if err != nil {
		return fmt.Errorf("read the latest versions: %w", err)
	}
	var promote []int64
	var fts []any
	for _, b := range best {
		if b.created != nil {
			promote = append(promote, b.id)
			fts = appendFTS(fts, *b.created)
		}
	}
	for _, u := range []struct {
		stmt int
		ids  []int64
	}{{latestDemote, demote}, {latestDemoteFTS, demote}, {latestPromote, promote}} {
		if len(u.ids) == 0 {
			continue
		}
		if err := st.exec(ctx, st.latest[u.stmt], idList(u.ids)); err != nil {
			return fmt.Errorf("mark the latest versions: %w", err)
		}
	}
	if err := st.insertRows(ctx, rowsFTSLatest, fts); err != nil {
		return fmt.Errorf("latest-only full-text index: %w", err)
	}
	return nil
}

// readLatest reads the stored latest rows of the capabilities of the
// created rows ids, and keeps each in best when it is above the created
// versions of its capability; it returns those it does not keep, to be
// demoted.
func (st *statements) readLatest(ctx context.Context, ids []int64, best map[capKey]latestRow) ([]int64, error) {
	rows, done, err := st.query(ctx, st.latest[latestRead], idList(ids))
	if err != nil {
		return nil, err
	}
	defer done()
	var demote []int64
	for rows.Next() {
		var r latestRow
		var ck capKey
		if err := rows.Scan(&r.id, &ck.scheme, &ck.domain, &ck.name, &r.versionKey, &r.version); err != nil {
			return nil, err
		}
		if b := best[ck]; b.above(r) {
			demote = append(demote, r.id)
		} else {
			best[ck] = r
		}
	}
	return demote, rows.Err()
}

// idList encodes row ids as a JSON array, for json_each.
func idList(ids []int64) string {
	b, _ := json.Marshal(ids) // []int64 always encodes
	return string(b)
}
