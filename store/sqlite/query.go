package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
)

// orderBy is the stable List order: scheme, domain, name, then version
// precedence (version text breaks ties between versions that differ only in
// build metadata).
const orderBy = `c.scheme, c.domain, c.name, c.version_key, c.version`

// bm25Weights weight the full-text columns (name, title, description,
// keywords, intents, domains, categories): a word in the name or title
// counts far more than one in the description.
const bm25Weights = `10.0, 8.0, 1.0, 4.0, 4.0, 2.0, 2.0`

// filterSQL returns the conditions (on capabilities aliased c) that select
// what f asks for, joined with AND, and their arguments.
func filterSQL(f registry.ListFilter) (string, []any) {
	conds := []string{"1 = 1"}
	var args []any
	if !f.AllVersions {
		conds = append(conds, "c.is_latest = 1")
	}
	for _, eq := range []struct{ col, val string }{
		{"c.scheme", f.Scheme}, {"c.name", f.Name}, {"c.stability", f.Stability}, {"c.source", f.Source}, {"c.trust_tier", f.TrustTier},
	} {
		if eq.val != "" {
			conds = append(conds, eq.col+" = ?")
			args = append(args, eq.val)
		}
	}
	// Hierarchical values match when equal, when the stored value is below
	// the filter (a range scan over "filter." .. "filter/", "/" being the
	// byte after "."), or when it is one of the filter's dotted ancestors.
	for _, h := range []struct{ table, col, val string }{
		{"capability_domains", "domain", f.Domain}, {"capability_categories", "category", f.Category},
	} {
		if h.val == "" {
			continue
		}
		exact := read.DottedAncestors(h.val)
		cond := fmt.Sprintf("c.id IN (SELECT capability_id FROM %s WHERE %s IN (?%s) OR (%s >= ? AND %s < ?))",
			h.table, h.col, strings.Repeat(", ?", len(exact)-1), h.col, h.col)
		conds = append(conds, cond)
		for _, e := range exact {
			args = append(args, e)
		}
		args = append(args, h.val+".", h.val+"/")
	}
	for _, m := range []struct{ table, col, val string }{
		{"capability_intents", "intent", f.Intent}, {"capability_bindings", "binding_type", f.BindingType},
	} {
		if m.val != "" {
			conds = append(conds, fmt.Sprintf("c.id IN (SELECT capability_id FROM %s WHERE %s = ?)", m.table, m.col))
			args = append(args, m.val)
		}
	}
	return strings.Join(conds, " AND "), args
}

// sqlLimit is the LIMIT for a page of limit items plus one, which tells
// whether there is a next page; -1 is no limit in SQLite.
func sqlLimit(limit int) int {
	if limit == 0 || limit >= math.MaxInt32 {
		return -1
	}
	return limit + 1
}

// List returns a page of records in the stable order; see registry.Store.
func (s *Store) List(ctx context.Context, f registry.ListFilter) (registry.Page, error) {
	raw, err := s.ListRaw(ctx, f)
	if err != nil {
		return registry.Page{}, err
	}
	return read.DecodePage(raw)
}

// ListRaw returns a page of records in the stable order, not decoded; see
// registry.Store. The page is one range scan of the order index from the
// cursor on; Total is counted, in the same read transaction, only when
// asked.
func (s *Store) ListRaw(ctx context.Context, f registry.ListFilter) (registry.RawPage, error) {
	cur, fp, err := registry.OpenPage("list", &f, "")
	if err != nil {
		return registry.RawPage{}, err
	}
	where, args := filterSQL(f)
	page := registry.RawPage{Total: registry.NotCounted}
	var tx *sql.Tx
	if f.CountTotal {
		// The count and the page from one snapshot.
		tx, err = s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return registry.RawPage{}, fmt.Errorf("list capabilities in sqlite database %s: %w", s.path, err)
		}
		defer tx.Rollback()
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM capabilities c WHERE `+where, args...).Scan(&page.Total); err != nil {
			return registry.RawPage{}, fmt.Errorf("count capabilities in sqlite database %s: %w", s.path, err)
		}
	}
	if cur.After != nil {
		where += ` AND (c.scheme, c.domain, c.name, c.version_key, c.version) > (?, ?, ?, ?, ?)`
		for _, a := range cur.After {
			args = append(args, a)
		}
	}
	pageSQL := `SELECT ` + recordColumns + `, c.version_key FROM capabilities c WHERE ` + where + ` ORDER BY ` + orderBy + ` LIMIT ?`
	args = append(args, f.Limit+1)
	var rows *sql.Rows
	if tx != nil {
		rows, err = s.reads.inTx(ctx, tx, pageSQL, args...)
	} else {
		rows, err = s.reads.query(ctx, pageSQL, args...)
	}
	if err != nil {
		return registry.RawPage{}, fmt.Errorf("list capabilities in sqlite database %s: %w", s.path, err)
	}
	defer rows.Close()
	page.Items = make([]registry.RawRecord, 0, min(f.Limit, 64))
	var lastKey string
	for rows.Next() {
		var vk string
		r, err := scanRaw(rows, &vk)
		if err != nil {
			return registry.RawPage{}, fmt.Errorf("list capabilities in sqlite database %s: %w", s.path, err)
		}
		if len(page.Items) == f.Limit {
			page.NextCursor = read.NextListCursor(fp, page.Items[len(page.Items)-1].Key, lastKey)
			break
		}
		page.Items = append(page.Items, r)
		lastKey = vk
	}
	if err := rows.Err(); err != nil {
		return registry.RawPage{}, fmt.Errorf("list capabilities in sqlite database %s: %w", s.path, err)
	}
	return page, nil
}

// Search returns a page of ranked full-text matches; see registry.Store.
func (s *Store) Search(ctx context.Context, q registry.SearchQuery) (registry.Page, error) {
	if strings.TrimSpace(q.Text) == "" {
		q.Filter.CountTotal = true // a search always counts
		return s.List(ctx, q.Filter)
	}
	f := q.Filter
	cur, fp, err := registry.OpenPage("search", &f, q.Text)
	if err != nil {
		return registry.Page{}, err
	}
	match := matchQuery(q.Text)
	if match == "" {
		// Nothing searchable (only punctuation or common words).
		return registry.Page{Items: []registry.Record{}}, nil
	}
	where, fargs := filterSQL(f)
	args := append([]any{match}, fargs...)
	// Rank and count the matches from the index, reading capabilities only
	// where a filter needs it: without all-versions the latest-only index
	// already applies that filter. Then only the rows that can be on the
	// page (rank up to the page's last rank, ties included) are joined and
	// sorted in the stable order.
	table, rankFrom := "capabilities_fts", ""
	if !f.AllVersions {
		table = "capabilities_fts_latest"
		where = strings.Replace(where, " AND c.is_latest = 1", "", 1)
	}
	if where == "1 = 1" {
		rankFrom = `SELECT rowid AS id, bm25(` + table + `, ` + bm25Weights + `) AS rank FROM ` + table + ` WHERE ` + table + ` MATCH ?`
	} else {
		rankFrom = `SELECT c.id AS id, bm25(` + table + `, ` + bm25Weights + `) AS rank FROM ` + table +
			` JOIN capabilities c ON c.id = ` + table + `.rowid WHERE ` + table + ` MATCH ? AND ` + where
	}
	from := ` FROM (` + rankFrom + `)`
	pageSQL := `WITH r AS MATERIALIZED (` + rankFrom + `),
		b AS (SELECT rank FROM r ORDER BY rank LIMIT 1 OFFSET ?),
		m AS (SELECT r.id, r.rank FROM r WHERE (SELECT count(*) FROM b) = 0 OR r.rank <= (SELECT rank FROM b)),
		t AS (SELECT count(*) AS total FROM r)
		SELECT ` + recordColumns + `, t.total FROM m JOIN capabilities c ON c.id = m.id, t
		ORDER BY m.rank, c.scheme, c.domain, c.name, c.version_key, c.version LIMIT ? OFFSET ?`
	page := registry.Page{Items: []registry.Record{}}
	err = func() error {
		last := cur.Offset + f.Limit // the rank of the page's last row bounds the rows to join
		if f.Limit <= 0 {
			last = 1 << 62
		}
		rows, err := s.reader.QueryContext(ctx, pageSQL, append(append(args, last), sqlLimit(f.Limit), cur.Offset)...)
		if err != nil {
			return err
		}
		page.Items, err = collectWith(rows, &page.Total)
		if err != nil {
			return err
		}
		if len(page.Items) == 0 && cur.Offset > 0 {
			// Past the end: the count needs a query of its own.
			return s.reader.QueryRowContext(ctx, `SELECT count(*)`+from, args...).Scan(&page.Total)
		}
		return nil
	}()
	if err != nil {
		return registry.Page{}, fmt.Errorf("search sqlite database %s for %q: %w", s.path, q.Text, err)
	}
	read.EndSearchPage(&page, f.Limit, fp, cur.Offset)
	return page, nil
}

// matchQuery turns free text into a safe FTS5 query: the words (runs of
// letters, digits and marks; everything else, including FTS5 syntax, only
// separates them), lower-cased, without duplicates and without common
// English words unless there is nothing else, each quoted, all required, the
// last one also matching as a prefix. It returns "" when the text has no
// word to search for.
func matchQuery(text string) string {
	terms := read.SearchTerms(text)
	if len(terms) == 0 {
		return ""
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " ") + "*"
}

// dialect is SQLite's SQL for the queries package read builds.
var dialect = read.Dialect{
	Placeholder: func(int) string { return "?" },
	Time:        func(t time.Time) any { return formatTime(t) },
	AnyOf: func(a *read.Args, col string, values []string) string {
		marks := make([]string, len(values))
		for i, v := range values {
			marks[i] = a.Add(v)
		}
		return col + ` IN (` + strings.Join(marks, ", ") + `)`
	},
	KindHint: true,
}
