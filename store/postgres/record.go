package postgres

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// prepared is a record checked and encoded for storage, with the values
// the side tables and the full-text index hold.
type prepared struct {
	rec          registry.Record
	versionKey   string
	definition   string // JSON
	stability    string
	source       string
	registeredAt time.Time
	domains      []string
	categories   []string
	intents      []string
	bindings     []string
	fts          [7]string // name, title, description, keywords, intents, domains, categories
}

// prepare checks a record's key and encodes it. It does no I/O, so a batch
// with a bad record fails before anything is written.
func prepare(r registry.Record, now time.Time) (prepared, error) {
	k := r.Key
	if k.Scheme == "" || k.Domain == "" || k.Name == "" {
		return prepared{}, fmt.Errorf("put %s: the key needs a scheme, a domain and a name", k)
	}
	v, err := capability.ParseVersion(k.Version)
	if err != nil {
		return prepared{}, fmt.Errorf("put %s: %w", k, err)
	}
	if full := v.Full(); full != k.Version {
		return prepared{}, fmt.Errorf("put %s: the key's version %q is not written in full: use %q (capability.Version.Full)", k, k.Version, full)
	}
	if r.Digest == "" {
		return prepared{}, fmt.Errorf("put %s: the record has no content digest: the registry service computes it before storing", k)
	}
	def, err := marshalDefinition(r.Definition)
	if err != nil {
		return prepared{}, fmt.Errorf("put %s: %w", k, err)
	}
	at := r.RegisteredAt
	if at.IsZero() {
		at = now
	}
	d := r.Definition
	p := prepared{
		rec:          r,
		versionKey:   registry.VersionKey(v),
		definition:   def,
		stability:    d.Stability,
		source:       sourceOf(d),
		registeredAt: at.UTC().Truncate(time.Microsecond),
		categories:   uniq(d.Categories),
		intents:      uniq(d.Intents),
		bindings:     uniq(d.Bindings.Types()),
	}
	primary := d.Domain
	if primary == "" {
		primary = k.Domain
	}
	p.domains = uniq(append([]string{primary}, d.Domains...))
	p.fts = [7]string{
		clean(words(k.Name)),
		clean(d.Title),
		clean(d.Description),
		clean(strings.Join(d.Keywords, " ")),
		clean(wordsOf(d.Intents)),
		clean(wordsOf(p.domains)),
		clean(wordsOf(d.Categories)),
	}
	return p, nil
}

// marshalDefinition encodes a definition for the definition column.
func marshalDefinition(d capability.Definition) (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encode the definition as JSON: %w: a definition holds only JSON values", err)
	}
	return string(b), nil
}

// sourceOf returns what ListFilter.Source matches: the provenance method, or
// "manual".
func sourceOf(d capability.Definition) string {
	if d.Provenance != nil && d.Provenance.Method != "" {
		return d.Provenance.Method
	}
	return registry.SourceManual
}

// uniq returns the non-empty values of list, sorted, without duplicates.
func uniq(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// words turns an identifier such as scan_vulnerabilities, github.issues or
// messaging/send-text into space-separated words, so that each part is a
// token of the full-text index whatever the tokenizer makes of "_" and ".".
func words(id string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '.', '/', '-', ':':
			return ' '
		}
		return r
	}, id)
}

// clean makes text acceptable to PostgreSQL's text type for indexing:
// invalid UTF-8 and NUL bytes become spaces.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, " "), "\x00", " ")
}

func wordsOf(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = words(id)
	}
	return strings.Join(parts, " ")
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
