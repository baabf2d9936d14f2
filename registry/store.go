package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
)

// Errors a Store returns, wrapped with what was asked for. Test them with
// errors.Is.
var (
	// ErrNotFound: no capability version has the key that was asked for.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the version is already registered with other content. The
	// error is a *ConflictError.
	ErrConflict = errors.New("conflict")
	// ErrInvalidCursor: a page cursor was not made by the same kind of query
	// (List or Search with the same filter and text) on the same store.
	ErrInvalidCursor = errors.New("invalid cursor")
)

// Key identifies one registered version of a capability.
type Key struct {
	Scheme  string // "ossa" or "mcp"
	Domain  string
	Name    string
	Version string // the full semantic version, as capability.Version.Full() writes it
}

// String returns the key as "ossa:security/scan@1.0.3".
func (k Key) String() string {
	return k.Scheme + ":" + k.Domain + "/" + k.Name + "@" + k.Version
}

// Record is one stored version with what the store indexes about it.
type Record struct {
	Key        Key
	Definition capability.Definition
	// Digest is the content digest the service computed (hex SHA-256). A store
	// compares digests to tell an idempotent re-registration from a conflict;
	// it never computes one.
	Digest string
	// JSON is Definition encoded (json.Marshal), when the service has it
	// already: a store writes it as the stored document rather than encode
	// the definition again. Empty, the store encodes Definition.
	JSON []byte
	// TrustTier is the governance tier ("" until governance exists).
	TrustTier string
	// RegisteredAt is when the version was first stored. Put uses the given
	// time, or the current time when it is zero; stores keep microseconds
	// and return UTC.
	RegisteredAt time.Time
	// DeprecatedAt is when Deprecate was last called, nil if never.
	DeprecatedAt *time.Time
}

// ConflictError says a version is already registered with other content.
// errors.Is(err, ErrConflict) holds for it.
type ConflictError struct {
	Key            Key
	ExistingDigest string
	NewDigest      string
}

// Error returns e.g. "capability ossa:security/scan@1.0.3 is already
// registered with other content (digest 1a2b3c4d5e6f, new 6f5e4d3c2b1a): a
// registered version is immutable; publish the change under a new version".
func (e *ConflictError) Error() string {
	return fmt.Sprintf("capability %s is already registered with other content (digest %s, new %s): a registered version is immutable; publish the change under a new version",
		e.Key, shortDigest(e.ExistingDigest), shortDigest(e.NewDigest))
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// PutResult reports what Put did with one record.
type PutResult struct {
	Key Key
	// Created is false when a version with the same key and the same Digest
	// was already stored: the Put was an idempotent no-op for it.
	Created bool
}

// ListFilter selects records. Empty fields do not filter.
//
// The filter applies to the versions List and Search consider: every version
// when AllVersions is set, otherwise only the highest version of each
// capability. So without AllVersions, a capability whose highest version does
// not match is left out even when an older version would match; ask with
// AllVersions (or Store.Versions) to see older versions.
type ListFilter struct {
	Scheme string
	// Domain matches Definition.Domain or any of Definition.Domains, equal or
	// dotted prefix either way: "github" matches "github.issues" and
	// "github.issues" matches "github"; "git" does not match "github" (as
	// capability.DomainMatches).
	Domain string
	Name   string
	// Category matches an element of Definition.Categories, as Domain does.
	Category  string
	Stability string
	// BindingType is a binding kind the definition declares: one of
	// capability.BindingOrder, or a key of Bindings.Extra.
	BindingType string
	// Source is Definition.Provenance.Method; a definition without one has
	// source "manual".
	Source string
	// Intent is an exact element of Definition.Intents (the Agent OS intent
	// index).
	Intent string
	// TrustTier is the exact Record.TrustTier (verified, trusted,
	// community, untrusted); a version registered before tiers existed
	// has none and matches no tier.
	TrustTier string
	// AllVersions lists every version; false lists only the highest version
	// (semver precedence) of each capability.
	AllVersions bool
	// Limit is the page size: DefaultPageSize when 0, at most MaxPageSize
	// (a larger one is refused); follow NextCursor, or use ListAll, for
	// more.
	Limit int
	// CountTotal asks List to count every match into Page.Total. Counting
	// reads every match, so its cost grows with the registry: ask for it
	// only when the total is shown, e.g. on a first page. It does not
	// change the items, and a cursor stays valid with or without it.
	CountTotal bool
	// Cursor continues from the page that returned it as NextCursor; "" starts
	// at the beginning. A cursor is valid only for the same kind of query with
	// the same filter (Limit may change).
	Cursor string
}

// SourceManual is the source of a definition without provenance.
const SourceManual = "manual"

// SourceOf is what ListFilter.Source matches for d: its provenance method,
// or SourceManual.
func SourceOf(d *capability.Definition) string {
	if d.Provenance != nil && d.Provenance.Method != "" {
		return d.Provenance.Method
	}
	return SourceManual
}

// DomainsOf is what ListFilter.Domain matches for the version k of d: its
// primary domain (d.Domain, else the key's), then d.Domains.
func DomainsOf(k Key, d *capability.Definition) []string {
	primary := d.Domain
	if primary == "" {
		primary = k.Domain
	}
	return append([]string{primary}, d.Domains...)
}

// Page is one page of results.
type Page struct {
	Items []Record
	// Total counts every record the query matches, not just this page: a
	// Search always counts it, a List only when ListFilter.CountTotal asks;
	// otherwise it is NotCounted.
	Total int
	// NextCursor continues after this page; "" when this is the last page.
	NextCursor string
	// Ranking is what a search ranked by the search index says beside
	// its items.
	Ranking
}

// NotCounted is the Page.Total of a List that was not asked to count
// (ListFilter.CountTotal).
const NotCounted = -1

// Ranking is what a ranked search says beside its items, in the JSON the
// REST API answers it with.
type Ranking struct {
	// Unknown lists the words of a search that no capability has, with the
	// known words nearest them.
	Unknown []UnknownWord `json:"unknown,omitempty"`
	// Action is the kind of operation a search asks for (a CCOS category
	// such as crud.create), "" when it names none.
	Action string `json:"action,omitempty"`
	// Hits has each item's score and (with SearchQuery.Explain) why it
	// ranked there, in the order of the items.
	Hits []Hit `json:"hits,omitempty"`
}

// Hit is the rank of one search result.
type Hit struct {
	Score float64  `json:"score"`
	Why   []string `json:"why,omitempty"`
}

// UnknownWord is a word of a search that no capability has.
type UnknownWord struct {
	Word       string   `json:"word"`
	DidYouMean []string `json:"did_you_mean,omitempty"`
}

// SearchQuery is a ranked full-text search. Text is free text, as people
// and agents ask ("open a new bug report"); any of its words may match. The
// Service ranks it with package search (see WithSearchIndex); a Store on
// its own matches words (stemmed, the last one also as a prefix) against
// the name, title, description, keywords, intents, domains and categories,
// with a name or title match ranked above a description-only one. An empty
// Text lists in List order.
type SearchQuery struct {
	Text   string
	Filter ListFilter
	// Explain asks for Page.Hits' Why.
	Explain bool
}

// Deprecation is what Store.Deprecate records (OSSA §8) for one version.
type Deprecation struct {
	Key            Key    // the version deprecated
	DeprecatedBy   string // URI of the replacement
	SunsetDate     string // date after which the version stops resolving
	MigrationGuide string
	At             time.Time // when; the current time when zero
}

// Event kinds a Store's Watch reports.
const (
	EventRegistered = "registered"
	EventDeprecated = "deprecated"
)

// Summary is the compact summary of a registered version
// (capability.Summarize) with its trust tier, at most
// capability.MaxSummaryBytes of JSON.
func (r *Record) Summary() capability.Summary {
	s := capability.Summarize(&r.Definition)
	if r.TrustTier != "" {
		s.TrustTier = r.TrustTier
		s.Fit(capability.MaxSummaryBytes)
	}
	return s
}

// Event is a change to a store.
type Event struct {
	Kind string // EventRegistered or EventDeprecated
	Key  Key
}

// Store persists capability versions, the documents kept beside them and
// the audit chain, and answers queries over them. Both implementations
// (store/sqlite, store/postgres) pass the behaviour suites in
// store/storetest. All methods are safe for concurrent use.
//
// The audited writes (PutAudited, DeprecateAudited and DocStore's
// ApplyDocsAudited) commit a write and the audit events that record it in
// one database transaction; a nil hook makes the plain write (Put,
// Deprecate, ApplyDocs). In the transaction the store makes the write,
// then takes the audit chain's lock (SQLite: its single writer already
// holds it; PostgreSQL: the advisory lock AppendAudit takes, taken last so
// that it is held only until the commit), reads the chain's last event,
// calls hook.Chain and inserts the events it returns. When any step fails
// nothing is written, neither the change nor its events.
type Store interface {
	// Put stores all records in one transaction. Each is created, or left as
	// it is when the same key is stored with the same Digest (Created false).
	// When any key is stored with a different Digest, nothing of the batch is
	// written and the error is a *ConflictError.
	Put(ctx context.Context, recs []Record) ([]PutResult, error)
	// PutAudited is Put recording each created version with its event of
	// hook.Events (one per record).
	PutAudited(ctx context.Context, recs []Record, hook *chain.Hook) ([]PutResult, error)
	// Get returns one version; the error wraps ErrNotFound and names the key
	// when there is none.
	Get(ctx context.Context, k Key) (Record, error)
	// GetRaw returns one version's definition as stored (the JSON encoding
	// of a capability.Definition), its digest and trust tier, without
	// decoding it (the REST API serves it as it is); ErrNotFound as Get.
	GetRaw(ctx context.Context, k Key) (RawRecord, error)
	// Versions returns every version of a capability in ascending semver
	// precedence; an empty slice, not an error, when there is none.
	Versions(ctx context.Context, scheme, domain, name string) ([]Record, error)
	// PrecedingVersions returns, in one query, for each version of keys
	// (full keys), the registered version of the same capability just
	// below or level with it: out[i] is the highest version of keys[i]'s
	// capability whose precedence is not above keys[i].Version's (among
	// versions of equal precedence, the highest version text), nil when
	// there is none. It is what the version check of a registration
	// needs, whatever the number of versions a capability has.
	PrecedingVersions(ctx context.Context, keys []Key) ([]*Record, error)
	// List returns records in a stable order: scheme, domain, name, then
	// version precedence.
	List(ctx context.Context, f ListFilter) (Page, error)
	// ListRaw is List without decoding the definitions: the stored JSON of
	// each version, which the REST API writes as it is and the Service
	// decodes through its cache.
	ListRaw(ctx context.Context, f ListFilter) (RawPage, error)
	// Search returns the records matching the text and the filter, best first,
	// ties in List order.
	Search(ctx context.Context, q SearchQuery) (Page, error)
	// Deprecate marks versions deprecated, all in one transaction: for each
	// d, the version d.Key gets Definition.Stability "deprecated",
	// DeprecatedBy, SunsetDate and MigrationGuide from d, and DeprecatedAt
	// from d.At. It returns the updated records in the order of ds; when a
	// version does not exist, nothing changes and the error wraps
	// ErrNotFound and names it.
	Deprecate(ctx context.Context, ds []Deprecation) ([]Record, error)
	// DeprecateAudited is Deprecate recording the deprecation with every
	// event of hook.Events.
	DeprecateAudited(ctx context.Context, ds []Deprecation, hook *chain.Hook) ([]Record, error)
	// KeysWithPrefix returns the capabilities p selects, each once (Key
	// without Version), ordered by domain and name: an index range scan,
	// for the tool-name check of registration.
	KeysWithPrefix(ctx context.Context, p KeyPrefix) ([]Key, error)
	// Watch reports every change made through any Store on the same database
	// (PostgreSQL: across processes; SQLite: within this process) until ctx
	// ends, when the channel is closed. The channel is also closed when the
	// store is closed, or when the receiver falls so far behind that events
	// would be lost: a receiver that sees it closed while ctx is alive should
	// Watch again and re-read what it caches.
	Watch(ctx context.Context) (<-chan Event, error)
	// Close releases the store's resources and closes its Watch channels.
	Close() error

	DocStore
	chain.Store
}

// VersionKey returns a string whose byte order is the Semantic Versioning
// 2.0.0 precedence of v, for a sortable column (COLLATE "C" in PostgreSQL).
//
// MAJOR, MINOR and PATCH are zero-padded to 20 digits (the width of the
// largest uint64). A release ends in "~"; a pre-release in "-" and its
// identifiers, each followed by ",": numeric identifiers zero-padded to 20
// digits (longer ones as ":", their zero-padded length, and the digits),
// alphanumeric ones as "_" and the identifier. Since "-" sorts before "~", a
// pre-release sorts before its release; since digits and ":" sort before "_",
// numeric identifiers sort before alphanumeric ones; since "," sorts before
// every identifier character, "alpha" sorts before "alpha-1" and a shorter
// list of identifiers before a longer one that starts with it. Build metadata
// is ignored, so versions differing only in build metadata have equal keys.
//
// 1.0.0-alpha.1 gives
// "00000000000000000001.00000000000000000000.00000000000000000000-_alpha,00000000000000000001,".
func VersionKey(v capability.Version) string {
	var b strings.Builder
	b.Grow(64 + 24*len(v.Prerelease))
	b.WriteString(padNumber(strconv.FormatUint(v.Major, 10)))
	b.WriteByte('.')
	b.WriteString(padNumber(strconv.FormatUint(v.Minor, 10)))
	b.WriteByte('.')
	b.WriteString(padNumber(strconv.FormatUint(v.Patch, 10)))
	if len(v.Prerelease) == 0 {
		b.WriteByte('~')
		return b.String()
	}
	b.WriteByte('-')
	for _, id := range v.Prerelease {
		if isNumeric(id) {
			b.WriteString(padNumber(id))
		} else {
			b.WriteByte('_')
			b.WriteString(id)
		}
		b.WriteByte(',')
	}
	return b.String()
}

// numberWidth is the width numbers are padded to: the digits of 2^64-1.
const numberWidth = 20

// padNumber zero-pads a decimal number to numberWidth digits. A longer one
// (only pre-release identifiers can be) becomes ":" + its padded length +
// the digits, which sorts after every padded number and, among long numbers,
// by length and then digits.
func padNumber(d string) string {
	if len(d) <= numberWidth {
		return strings.Repeat("0", numberWidth-len(d)) + d
	}
	return ":" + padNumber(strconv.Itoa(len(d))) + d
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// TrustTierHeader is the HTTP header in which caphub serve answers a GET of
// one version with its Record.TrustTier (verified, trusted, community,
// untrusted; absent for a version registered before tiers existed).
const TrustTierHeader = "Caphub-Trust-Tier"

// DigestHeader is the HTTP header in which caphub serve answers a GET of
// one version with its Record.Digest (the ETag names the answer's bytes,
// which a deprecation changes; the digest names the registered content,
// which never changes).
const DigestHeader = "Caphub-Digest"

// RawRecord is one version as stored, its definition not decoded: what
// Store.GetRaw returns (Definition, Digest and TrustTier) and Store.ListRaw
// lists (every field).
type RawRecord struct {
	Key          Key
	Definition   []byte // the stored JSON
	Digest       string
	TrustTier    string
	RegisteredAt time.Time
	DeprecatedAt *time.Time
}

// Decode returns the record with its definition decoded.
func (r RawRecord) Decode() (Record, error) {
	rec := Record{Key: r.Key, Digest: r.Digest, TrustTier: r.TrustTier, RegisteredAt: r.RegisteredAt, DeprecatedAt: r.DeprecatedAt}
	if err := json.Unmarshal(r.Definition, &rec.Definition); err != nil {
		return Record{}, fmt.Errorf("decode stored definition of %s: %w: the database is damaged; restore it from a backup or re-register the version", r.Key, err)
	}
	return rec, nil
}

// RawPage is a page of List without decoding (Store.ListRaw).
type RawPage struct {
	Items      []RawRecord
	Total      int // as Page.Total
	NextCursor string
}
