package sqlite

import (
	"encoding/json"
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
	var (
		r            registry.Record
		def          string
		registeredAt string
		deprecatedAt *string
	)
	dest := append([]any{&r.Key.Scheme, &r.Key.Domain, &r.Key.Name, &r.Key.Version, &def, &r.Digest, &r.TrustTier, &registeredAt, &deprecatedAt}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return registry.Record{}, err
	}
	if err := json.Unmarshal([]byte(def), &r.Definition); err != nil {
		return registry.Record{}, fmt.Errorf("decode stored definition of %s: %w: the database is damaged; restore it from a backup or re-register the version", r.Key, err)
	}
	var err error
	if r.RegisteredAt, err = parseTime(registeredAt); err != nil {
		return registry.Record{}, fmt.Errorf("decode registered_at of %s: %w: the database is damaged", r.Key, err)
	}
	if deprecatedAt != nil {
		t, err := parseTime(*deprecatedAt)
		if err != nil {
			return registry.Record{}, fmt.Errorf("decode deprecated_at of %s: %w: the database is damaged", r.Key, err)
		}
		r.DeprecatedAt = &t
	}
	return r, nil
}
