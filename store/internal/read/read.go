// Package read holds what both stores (store/sqlite, store/postgres) read
// alike: page cursors and limits, the range bounds of prefix scans, the
// words of a search, the queries of KeysWithPrefix, ListDocs and ListAudit
// and the checks of their arguments, and the loops that read rows. Only
// the SQL dialect differs between the stores (see Dialect).
package read

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// PrefixEnd returns the least valid UTF-8 string greater than every string
// that starts with prefix, the exclusive upper bound of a range scan for the
// prefix in byte order; false when there is none (the prefix is all
// U+10FFFF). prefix must be valid UTF-8: the successor of its last rune
// replaces it (skipping the surrogates, which UTF-8 cannot encode), so the
// bound is valid UTF-8 too, as a PostgreSQL text parameter must be. UTF-8's
// byte order is code point order, so a valid string is in [prefix, end)
// exactly when it starts with prefix.
func PrefixEnd(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		return prefix + string(r), true
	}
	return "", false
}

// ceilMicro rounds t up to the microsecond the store keeps, so that a
// filter's bound includes no event before it.
func ceilMicro(t time.Time) time.Time {
	t = t.UTC()
	if c := t.Truncate(time.Microsecond); c.Before(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// CheckAuditFilter refuses negative bounds.
func CheckAuditFilter(f chain.Filter) error {
	switch {
	case f.Limit < 0:
		return fmt.Errorf("the limit %d is negative: give 0 (no limit) or more", f.Limit)
	case f.AfterSeq < 0:
		return fmt.Errorf("after_seq %d is negative: give 0 (from the first event) or more", f.AfterSeq)
	}
	return nil
}

// Rows is what both drivers' result sets (database/sql's and pgx's) offer
// for reading them row by row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Collect reads every row of rows with scan, which reads the current one:
// the loop both stores' listings share. It returns an empty slice, not
// nil, for no rows.
func Collect[T any](rows Rows, scan func() (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// auditPage is how many events ScanAudit reads at a time.
const auditPage = 500

// ScanAudit is chain.Store.ScanAudit on top of a store's ListAudit
// (list): it calls fn with every event in ascending seq, reading a page
// at a time, outside of any transaction.
func ScanAudit(ctx context.Context, list func(context.Context, chain.Filter) ([]chain.Event, error), fn func(chain.Event) error) error {
	var after int64
	for {
		page, err := list(ctx, chain.Filter{AfterSeq: after, Limit: auditPage})
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

// VersionBounds returns the version key (registry.VersionKey) of each of
// keys, full keys: the bound of each lookup of PrecedingVersions.
func VersionBounds(keys []registry.Key) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := capability.ParseVersion(k.Version)
		if err != nil {
			return nil, fmt.Errorf("the version of %s: %w", k, err)
		}
		out[i] = registry.VersionKey(v)
	}
	return out, nil
}

// CollectPreceding reads the rows of a PrecedingVersions query, each a
// record and the index of the key it answers (scan), into out.
func CollectPreceding(rows Rows, out []*registry.Record, scan func() (registry.Record, int, error)) error {
	for rows.Next() {
		r, i, err := scan()
		if err != nil {
			return err
		}
		if i < 0 || i >= len(out) {
			return fmt.Errorf("a preceding version answers key %d of %d (a bug: report it)", i, len(out))
		}
		out[i] = &r
	}
	return rows.Err()
}
