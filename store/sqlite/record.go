package sqlite

import (
	"fmt"

	"github.com/caphub/caphub/registry"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// recordColumns are the columns scanRecord reads, for a table aliased c.
const recordColumns = `c.scheme, c.domain, c.name, c.version, c.definition, c.digest, c.trust_tier, c.registered_at, c.deprecated_at`

// scanRecord reads one row of recordColumns (and any extra columns into
// extra).
func scanRecord(sc scanner, extra ...any) (registry.Record, error) {
	raw, err := scanRaw(sc, extra...)
	if err != nil {
		return registry.Record{}, err
	}
	return raw.Decode()
}

// scanRaw reads one row of recordColumns (and any extra columns into
// extra) without decoding the definition.
func scanRaw(sc scanner, extra ...any) (registry.RawRecord, error) {
	var (
		r            registry.RawRecord
		def          []byte
		registeredAt string
		deprecatedAt *string
	)
	dest := append([]any{&r.Key.Scheme, &r.Key.Domain, &r.Key.Name, &r.Key.Version, &def, &r.Digest, &r.TrustTier, &registeredAt, &deprecatedAt}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return registry.RawRecord{}, err
	}
	r.Definition = def
	var err error
	if r.RegisteredAt, err = parseTime(registeredAt); err != nil {
		return registry.RawRecord{}, fmt.Errorf("decode registered_at of %s: %w: the database is damaged", r.Key, err)
	}
	if deprecatedAt != nil {
		t, err := parseTime(*deprecatedAt)
		if err != nil {
			return registry.RawRecord{}, fmt.Errorf("decode deprecated_at of %s: %w: the database is damaged", r.Key, err)
		}
		r.DeprecatedAt = &t
	}
	return r, nil
}
