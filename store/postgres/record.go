package postgres

import (
	"encoding/json"
	"fmt"
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
	var (
		r            registry.Record
		def          string
		deprecatedAt *time.Time
	)
	dest := append([]any{&r.Key.Scheme, &r.Key.Domain, &r.Key.Name, &r.Key.Version, &def, &r.Digest, &r.TrustTier, &r.RegisteredAt, &deprecatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return registry.Record{}, err
	}
	if err := json.Unmarshal([]byte(def), &r.Definition); err != nil {
		return registry.Record{}, fmt.Errorf("decode stored definition of %s: %w: the database is damaged; restore it from a backup or re-register the version", r.Key, err)
	}
	r.RegisteredAt = r.RegisteredAt.UTC()
	if deprecatedAt != nil {
		t := deprecatedAt.UTC()
		r.DeprecatedAt = &t
	}
	return r, nil
}
