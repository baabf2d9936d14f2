package sqlite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

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
	registeredAt string
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
		registeredAt: formatTime(at),
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
		words(k.Name),
		d.Title,
		d.Description,
		strings.Join(d.Keywords, " "),
		wordsOf(d.Intents),
		wordsOf(p.domains),
		wordsOf(d.Categories),
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

func wordsOf(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = words(id)
	}
	return strings.Join(parts, " ")
}

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
