package read

import (
	"strings"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// Dialect is what differs between the stores' SQL in the queries built
// here.
type Dialect struct {
	// Placeholder writes the n-th parameter (1-based): "$1" or "?".
	Placeholder func(n int) string
	// Time is how a timestamp parameter is passed (SQLite keeps text).
	Time func(t time.Time) any
	// AnyOf writes the condition that col is one of values, adding its
	// parameters to a.
	AnyOf func(a *Args, col string, values []string) string
	// KindHint keeps the capability index the narrow one when an audit
	// listing filters by kind and capability (SQLite, which has no
	// statistics, writes the kind as +kind).
	KindHint bool
}

// Args collects a query's parameters and writes their placeholders.
type Args struct {
	d    Dialect
	Vals []any
}

// NewArgs returns an empty parameter list of dialect d.
func NewArgs(d Dialect) *Args { return &Args{d: d} }

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	a.Vals = append(a.Vals, v)
	return a.d.Placeholder(len(a.Vals))
}

// DocListQuery returns the query of ListDocs (columns read from docs) and
// its arguments: a range of the primary key's index from prefix to its
// successor, in byte order (never LIKE, whose wildcards a prefix may
// contain).
func DocListQuery(d Dialect, columns, kind, prefix string) (string, []any) {
	a := NewArgs(d)
	query := `SELECT ` + columns + ` FROM docs WHERE kind = ` + a.Add(kind)
	if prefix != "" {
		query += ` AND key >= ` + a.Add(prefix)
		if end, ok := PrefixEnd(prefix); ok {
			query += ` AND key < ` + a.Add(end)
		}
	}
	return query + ` ORDER BY key`, a.Vals
}

// AuditListQuery returns the query of ListAudit (columns read from
// audit_events) and its arguments. A capability without a version
// matches itself and the range of its versioned URIs, [uri@, uriA) in
// byte order ('A' follows '@'), which the (capability, seq) index serves.
func AuditListQuery(d Dialect, columns string, f chain.Filter) (string, []any) {
	a := NewArgs(d)
	var where []string
	if f.AfterSeq > 0 {
		where = append(where, `seq > `+a.Add(f.AfterSeq))
	}
	if !f.Since.IsZero() {
		where = append(where, `time >= `+a.Add(d.Time(ceilMicro(f.Since))))
	}
	if !f.Until.IsZero() {
		where = append(where, `time < `+a.Add(d.Time(ceilMicro(f.Until))))
	}
	if f.Kind != "" {
		where = append(where, auditKindCond(d, f)+a.Add(f.Kind))
		if f.Kind != AuditKindUnindexed && !kindHinted(d, f) {
			// The kind index's own condition, word for word: the
			// planners use a partial index only when the query's terms
			// imply its condition, which a parameter does not.
			where = append(where, AuditKindIndexCond)
		}
	}
	if f.Actor != "" {
		where = append(where, `actor = `+a.Add(f.Actor))
	}
	if f.Capability != "" {
		where = append(where, auditCapabilityCond(a, f.Capability))
	}
	if len(f.Capabilities) > 0 {
		where = append(where, d.AnyOf(a, "capability", f.Capabilities))
	}
	query := `SELECT ` + columns + ` FROM audit_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY seq`
	if f.Limit > 0 {
		query += ` LIMIT ` + a.Add(f.Limit)
	}
	return query, a.Vals
}

// AuditKindUnindexed is the kind the audit kind index leaves out:
// invocation events (audit.KindInvocation), one per call the gateway
// relays, the bulk of a chain. Keeping them out of the index saves the
// audit writer one of its three index insertions per call; the listings
// of invocations read the chain in seq order instead (the primary key),
// where they are most of the rows, or the capability index.
const AuditKindUnindexed = "invocation"

// AuditKindIndexCond is the condition of the partial index
// audit_events_kind_other (SQLite migration 0006, PostgreSQL 0007):
// AuditListQuery adds it, as it is written there, to a filter on any other
// kind, so that the planner can use the index.
const AuditKindIndexCond = `kind <> '` + AuditKindUnindexed + `'`

// auditKindCond is the start of the kind condition: with a capability,
// whose index is the narrow one, the dialect's hint keeps the planner on
// it instead of scanning every event of the kind.
func auditKindCond(d Dialect, f chain.Filter) string {
	if kindHinted(d, f) {
		return `+kind = `
	}
	return `kind = `
}

// kindHinted reports whether the kind condition carries the dialect's
// hint away from the kind index (auditKindCond).
func kindHinted(d Dialect, f chain.Filter) bool {
	return d.KindHint && (f.Capability != "" || len(f.Capabilities) > 0)
}

// auditCapabilityCond selects the events about uri: exactly, or with any
// version when uri has none.
func auditCapabilityCond(a *Args, uri string) string {
	if strings.Contains(uri, "@") {
		return `capability = ` + a.Add(uri)
	}
	return `(capability = ` + a.Add(uri) + ` OR (capability >= ` + a.Add(uri+"@") + ` AND capability < ` + a.Add(uri+"A") + `))`
}
