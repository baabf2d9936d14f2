package postgres

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/registry"
)

// clean makes text acceptable to PostgreSQL's text type for indexing:
// invalid UTF-8 and NUL bytes become spaces.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, " "), "\x00", " ")
}

// recordColumns are the columns scanRecord reads, for a table aliased c.
const recordColumns = `c.scheme, c.domain, c.name, c.version, c.definition::text, c.digest, c.trust_tier, c.registered_at, c.deprecated_at`

// scanRecord reads one row of recordColumns (and any extra columns into
// extra).
func scanRecord(row pgx.Row, extra ...any) (registry.Record, error) {
	raw, err := scanRaw(row, extra...)
	if err != nil {
		return registry.Record{}, err
	}
	return raw.Decode()
}

// scanRaw reads one row of recordColumns (and any extra columns into
// extra) without decoding the definition.
func scanRaw(row pgx.Row, extra ...any) (registry.RawRecord, error) {
	var (
		r            registry.RawRecord
		def          []byte
		deprecatedAt *time.Time
	)
	dest := append([]any{&r.Key.Scheme, &r.Key.Domain, &r.Key.Name, &r.Key.Version, &def, &r.Digest, &r.TrustTier, &r.RegisteredAt, &deprecatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return registry.RawRecord{}, err
	}
	r.Definition = def
	r.RegisteredAt = r.RegisteredAt.UTC()
	if deprecatedAt != nil {
		t := deprecatedAt.UTC()
		r.DeprecatedAt = &t
	}
	return r, nil
}
