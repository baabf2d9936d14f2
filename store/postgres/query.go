package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/jackc/pgx/v5"
)

// orderBy is the stable List order: scheme, domain, name, then version
// precedence (version text breaks ties between versions that differ only in
// build metadata).
const orderBy = `c.scheme, c.domain, c.name, c.version_key, c.version`

// rankWeights weight the tsvector classes D, C, B, A (description; domains
// and categories; keywords and intents; name and title) for ts_rank: a
// word in the name or title counts ten times one in the description.
const rankWeights = `'{0.1, 0.2, 0.4, 1.0}'::float4[]`

// rankNormalization divides the rank by 1 + log(document length), so that
// long descriptions do not win by size alone.
const rankNormalization = 1

// filterSQL returns the conditions (on capabilities aliased c) that select
// what f asks for, joined with AND, adding their arguments to a.
func filterSQL(f registry.ListFilter, a *read.Args) string {
	conds := []string{"true"}
	if !f.AllVersions {
		conds = append(conds, "c.is_latest")
	}
	for _, eq := range []struct{ col, val string }{
		{"c.scheme", f.Scheme}, {"c.name", f.Name}, {"c.stability", f.Stability}, {"c.source", f.Source}, {"c.trust_tier", f.TrustTier},
	} {
		if eq.val != "" {
			conds = append(conds, eq.col+" = "+a.Add(eq.val))
		}
	}
	// Hierarchical values match when equal, when the stored value is below
	// the filter (a range scan over "filter." .. "filter/", "/" being the
	// byte after "." in the "C" collation), or when it is one of the
	// filter's dotted ancestors.
	for _, h := range []struct{ table, col, val string }{
		{"capability_domains", "domain", f.Domain}, {"capability_categories", "category", f.Category},
	} {
		if h.val == "" {
			continue
		}
		cond := fmt.Sprintf("c.id IN (SELECT capability_id FROM %s WHERE %s = ANY(%s::text[]) OR (%s >= %s AND %s < %s))",
			h.table, h.col, a.Add(read.DottedAncestors(h.val)), h.col, a.Add(h.val+"."), h.col, a.Add(h.val+"/"))
		conds = append(conds, cond)
	}
	for _, m := range []struct{ table, col, val string }{
		{"capability_intents", "intent", f.Intent}, {"capability_bindings", "binding_type", f.BindingType},
	} {
		if m.val != "" {
			conds = append(conds, fmt.Sprintf("c.id IN (SELECT capability_id FROM %s WHERE %s = %s)", m.table, m.col, a.Add(m.val)))
		}
	}
	return strings.Join(conds, " AND ")
}

// sqlLimit is the LIMIT for a page of limit items plus one, which tells
// whether there is a next page; NULL is no limit.
func sqlLimit(limit int) *int {
	if limit == 0 || limit >= math.MaxInt32 {
		return nil
	}
	n := limit + 1
	return &n
}

// readTx runs fn in a read-only REPEATABLE READ transaction, so that a
// page's Total and items come from one snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
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
// cursor on; Total is counted, in the same snapshot, only when asked.
func (s *Store) ListRaw(ctx context.Context, f registry.ListFilter) (registry.RawPage, error) {
	if err := s.checkOpen(); err != nil {
		return registry.RawPage{}, err
	}
	cur, fp, err := registry.OpenPage("list", &f, "")
	if err != nil {
		return registry.RawPage{}, err
	}
	a := read.NewArgs(dialect)
	where := filterSQL(f, a)
	countArgs := slices.Clone(a.Vals)
	if cur.After != nil {
		where += fmt.Sprintf(` AND (c.scheme, c.domain, c.name, c.version_key, c.version) > (%s, %s, %s, %s, %s)`,
			a.Add(cur.After[0]), a.Add(cur.After[1]), a.Add(cur.After[2]), a.Add(cur.After[3]), a.Add(cur.After[4]))
	}
	pageSQL := `SELECT ` + recordColumns + `, c.version_key FROM capabilities c WHERE ` + where +
		` ORDER BY ` + orderBy + ` LIMIT ` + a.Add(f.Limit+1)
	countSQL := `SELECT count(*) FROM capabilities c WHERE ` + filterSQL(f, read.NewArgs(dialect))
	var page registry.RawPage
	readPage := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		page.Items = make([]registry.RawRecord, 0, min(f.Limit, 64))
		rows, err := q.Query(ctx, pageSQL, a.Vals...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var lastKey string
		for rows.Next() {
			var vk string
			r, err := scanRaw(rows, &vk)
			if err != nil {
				return err
			}
			if len(page.Items) == f.Limit {
				page.NextCursor = read.NextListCursor(fp, page.Items[len(page.Items)-1].Key, lastKey)
				break
			}
			page.Items = append(page.Items, r)
			lastKey = vk
		}
		return rows.Err()
	}
	if f.CountTotal {
		// The count and the page from one snapshot.
		err = s.readTx(ctx, func(tx pgx.Tx) error {
			page = registry.RawPage{}
			if err := tx.QueryRow(ctx, countSQL, countArgs...).Scan(&page.Total); err != nil {
				return fmt.Errorf("count: %w", err)
			}
			return readPage(tx)
		})
	} else {
		page = registry.RawPage{Total: registry.NotCounted}
		err = readPage(s.pool)
	}
	if err != nil {
		return registry.RawPage{}, fmt.Errorf("list capabilities in postgres %s: %w", s.where, err)
	}
	return page, nil
}

// Search returns a page of ranked full-text matches; see registry.Store.
func (s *Store) Search(ctx context.Context, q registry.SearchQuery) (registry.Page, error) {
	if strings.TrimSpace(q.Text) == "" {
		q.Filter.CountTotal = true // a search always counts
		return s.List(ctx, q.Filter)
	}
	if err := s.checkOpen(); err != nil {
		return registry.Page{}, err
	}
	f := q.Filter
	cur, fp, err := registry.OpenPage("search", &f, q.Text)
	if err != nil {
		return registry.Page{}, err
	}
	tsq := tsQuery(q.Text)
	if tsq == "" {
		// Nothing searchable (only punctuation or common words).
		return registry.Page{Items: []registry.Record{}}, nil
	}
	a := read.NewArgs(dialect)
	query := a.Add(tsq)
	where := filterSQL(f, a)
	table := "capabilities"
	if where == "true AND c.is_latest" {
		// Only the latest-version filter: rank from the narrow copy.
		table, where = "search_latest", "true"
	}
	from := ` FROM ` + table + ` c, to_tsquery('english', ` + query + `) AS q WHERE c.search @@ q AND ` + where
	countArgs := slices.Clone(a.Vals)
	// Rank and count the matches in one pass, sorting only their keys; then
	// read the definitions of the page's rows.
	pageSQL := `WITH m AS (SELECT c.id, ` + fmt.Sprintf(`ts_rank(%s, c.search, q, %d)`, rankWeights, rankNormalization) + ` AS rank,
			c.scheme, c.domain, c.name, c.version_key, c.version, count(*) OVER () AS total` + from + `
		ORDER BY rank DESC, ` + orderBy + ` LIMIT ` + a.Add(sqlLimit(f.Limit)) + ` OFFSET ` + a.Add(cur.Offset) + `)
		SELECT ` + recordColumns + `, m.total FROM m JOIN capabilities c ON c.id = m.id
		ORDER BY m.rank DESC, m.scheme, m.domain, m.name, m.version_key, m.version`
	page, err := s.searchPage(ctx, pageSQL, a.Vals, `SELECT count(*)`+from, countArgs, cur.Offset)
	if err != nil {
		return registry.Page{}, fmt.Errorf("search postgres %s for %q: %w", s.where, q.Text, err)
	}
	read.EndSearchPage(&page, f.Limit, fp, cur.Offset)
	return page, nil
}

// searchPage reads the rows of a search's pageSQL, each with the total
// of matches, and counts them with countSQL when the page is past the end
// (offset > 0 and no rows).
func (s *Store) searchPage(ctx context.Context, pageSQL string, args []any, countSQL string, countArgs []any, offset int) (registry.Page, error) {
	page := registry.Page{Items: []registry.Record{}}
	rows, err := s.pool.Query(ctx, pageSQL, args...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		r, err := scanRecord(rows, &total)
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, r)
		page.Total = int(total)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	if len(page.Items) == 0 && offset > 0 {
		// Past the end: the count needs a query of its own.
		return page, s.pool.QueryRow(ctx, countSQL, countArgs...).Scan(&page.Total)
	}
	return page, nil
}

// tsQuery turns free text into a safe to_tsquery('english', …) argument:
// the words (runs of letters, digits and marks; everything else, including
// tsquery syntax, only separates them), lower-cased, without duplicates and
// stop words, all required, the last one also matching as a prefix. It
// returns "" when the text has no word to search for.
func tsQuery(text string) string {
	terms := read.SearchTerms(text)
	if len(terms) == 0 {
		return ""
	}
	return strings.Join(terms, " & ") + ":*"
}

// dialect is PostgreSQL's SQL for the queries package read builds.
var dialect = read.Dialect{
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	Time:        func(t time.Time) any { return t },
	AnyOf: func(a *read.Args, col string, values []string) string {
		return col + ` = ANY(` + a.Add(values) + `::text[])`
	},
}
