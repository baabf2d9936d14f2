package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/caphub/caphub/store/internal/write"
)

// createdRow is a version a Put created: its row id and what it was
// prepared from.
type createdRow struct {
	id   int64
	prep *write.Prepared
}

// indexRecords fills the side tables and the full-text index of the
// created rows, a few multi-row statements for the whole batch rather than
// one statement per value.
func indexRecords(ctx context.Context, tx *sql.Tx, created []createdRow) error {
	var side [4][]any
	fts := make([]any, 0, 8*len(created))
	for _, c := range created {
		p := c.prep
		for i, values := range [4][]string{p.Domains, p.Categories, p.Intents, p.Bindings} {
			for _, v := range values {
				side[i] = append(side[i], c.id, v)
			}
		}
		fts = appendFTS(fts, c)
	}
	for i, head := range [4]string{
		`INSERT OR IGNORE INTO capability_domains (capability_id, domain) VALUES `,
		`INSERT OR IGNORE INTO capability_categories (capability_id, category) VALUES `,
		`INSERT OR IGNORE INTO capability_intents (capability_id, intent) VALUES `,
		`INSERT OR IGNORE INTO capability_bindings (capability_id, binding_type) VALUES `,
	} {
		if err := insertRows(ctx, tx, head, 2, side[i]); err != nil {
			return fmt.Errorf("index the filters: %w", err)
		}
	}
	if err := insertRows(ctx, tx, insertFTS("capabilities_fts"), 8, fts); err != nil {
		return fmt.Errorf("full-text index: %w", err)
	}
	return nil
}

// insertFTS is the head of a multi-row insert into an FTS table.
func insertFTS(table string) string {
	return `INSERT INTO ` + table + ` (rowid, name, title, description, keywords, intents, domains, categories) VALUES `
}

// appendFTS appends the values of c's row of a full-text table.
func appendFTS(values []any, c createdRow) []any {
	f := c.prep.FTS
	return append(values, c.id, f.Name, f.Title, f.Description, f.Keywords, f.Intents, f.Domains, f.Categories)
}

// rowsPerInsert bounds the rows of one multi-row insert, well within
// SQLite's limit on bound parameters (32,766).
const rowsPerInsert = 200

// insertRows runs head followed by the rows of values, width values a
// row, rowsPerInsert rows a statement.
func insertRows(ctx context.Context, tx *sql.Tx, head string, width int, values []any) error {
	row := "(?" + strings.Repeat(", ?", width-1) + ")"
	full := ""
	for len(values) > 0 {
		n := min(len(values)/width, rowsPerInsert)
		q := full
		if n < rowsPerInsert || q == "" {
			q = head + row + strings.Repeat(", "+row, n-1)
			if n == rowsPerInsert {
				full = q
			}
		}
		if _, err := tx.ExecContext(ctx, q, values[:n*width]...); err != nil {
			return err
		}
		values = values[n*width:]
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

// markLatest moves the latest flag, and the latest-only full-text index,
// of every capability with a created version, in a fixed number of
// statements for the whole batch: it reads the capabilities' latest rows
// before this Put in one query, picks each one's highest version, and
// moves the flag only where a created version is above the stored one.
func markLatest(ctx context.Context, tx *sql.Tx, created []createdRow) error {
	if len(created) == 0 {
		return nil
	}
	type capKey struct{ scheme, domain, name string }
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
	// The created rows are not flagged yet, so the flagged rows of their
	// capabilities are those stored before.
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT l.id, l.scheme, l.domain, l.name, l.version_key, l.version
		FROM capabilities n JOIN capabilities l
			ON l.scheme = n.scheme AND l.domain = n.domain AND l.name = n.name AND l.is_latest = 1
		WHERE n.id IN (SELECT value FROM json_each(?))`, idList(ids))
	if err != nil {
		return fmt.Errorf("read the latest versions: %w", err)
	}
	var demote []int64
	for rows.Next() {
		var r latestRow
		var ck capKey
		if err := rows.Scan(&r.id, &ck.scheme, &ck.domain, &ck.name, &r.versionKey, &r.version); err != nil {
			rows.Close()
			return fmt.Errorf("read the latest versions: %w", err)
		}
		if b := best[ck]; b.above(r) {
			demote = append(demote, r.id)
		} else {
			best[ck] = r
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
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
		sql string
		ids []int64
	}{
		{`UPDATE capabilities SET is_latest = 0 WHERE id IN (SELECT value FROM json_each(?))`, demote},
		{`DELETE FROM capabilities_fts_latest WHERE rowid IN (SELECT value FROM json_each(?))`, demote},
		{`UPDATE capabilities SET is_latest = 1 WHERE id IN (SELECT value FROM json_each(?))`, promote},
	} {
		if len(u.ids) == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, u.sql, idList(u.ids)); err != nil {
			return fmt.Errorf("mark the latest versions: %w", err)
		}
	}
	if err := insertRows(ctx, tx, insertFTS("capabilities_fts_latest"), 8, fts); err != nil {
		return fmt.Errorf("latest-only full-text index: %w", err)
	}
	return nil
}

// idList encodes row ids as a JSON array, for json_each.
func idList(ids []int64) string {
	b, _ := json.Marshal(ids) // []int64 always encodes
	return string(b)
}
