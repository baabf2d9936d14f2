// Package registry is caphub's registry: it registers capability versions
// under the versioning rules, resolves and negotiates URIs, lists, searches
// and deprecates, on top of a Store (store/sqlite or store/postgres).
package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
)

// Service is the registry's one entry point; the CLI, the REST server and
// the REST client all speak it.
type Service struct {
	store Store
	now   func() time.Time
	log   *slog.Logger

	cache       versionCache
	stopWatch   context.CancelFunc
	cacheActive bool
	recorder    ChangeRecorder
	verify      func(context.Context, *capability.Definition) (string, error)
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces the clock (for tests that move past a sunset date).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithRecorder records every registration and deprecation with r's events,
// committed in the change's own transaction (see Store.PutAudited): a
// change whose events cannot be written is not made.
func WithRecorder(r ChangeRecorder) Option { return func(s *Service) { s.recorder = r } }

// Recorder returns the recorder of WithRecorder, nil when there is none, so
// that the registry's other writers (agents, saved servers) record their
// changes in the same audit chain.
func (s *Service) Recorder() ChangeRecorder { return s.recorder }

// WithVerifier sets the trust check of registration: check is called, with
// the registration's context (which says who registers: an API token, for
// one), on every definition of a batch once it is validated and completed
// (the content that will be stored) and returns its trust tier, which is
// stored in Record.TrustTier, or an error that refuses the definition with
// that reason, e.g. an attestation that does not verify
// (governance/sign.Verifier.Check). Without it, TrustTier stays "".
func WithVerifier(check func(ctx context.Context, d *capability.Definition) (tier string, err error)) Option {
	return func(s *Service) { s.verify = check }
}

type actorKey struct{}

// WithActor returns a context naming who acts (an agent, a token, a local
// user), for the records of the changes made with it.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor of a context, "anonymous" when none was set.
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return "anonymous"
}

// WithCache keeps the version lists that resolution reads in memory,
// invalidated by the store's change notifications (see versionCache).
func WithCache() Option { return func(s *Service) { s.cacheActive = true } }

// NewService returns a registry over store.
func NewService(store Store, opts ...Option) *Service {
	s := &Service{store: store, now: time.Now, log: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	if s.cacheActive {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopWatch = cancel
		go s.watch(ctx)
	}
	return s
}

// Store returns the underlying store.
func (s *Service) Store() Store { return s.store }

// Close stops the cache's watch and closes the store.
func (s *Service) Close() error {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	return s.store.Close()
}

// BreakingChangeError refuses a version whose bump is smaller than its
// changes need (OSSA §6, DESIGN §2).
type BreakingChangeError struct {
	URI      string // the refused version
	Previous string // the registered version it was compared with
	Report   *capability.DiffReport
}

func (e *BreakingChangeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.URI, e.Report.Problem)
	for _, c := range e.Report.Changes {
		if c.Bump >= e.Report.Declared && c.Bump > capability.BumpPatch || c.Bump == e.Report.Required {
			fmt.Fprintf(&b, "\n  %s change at %s: %s", c.Bump, c.Path, c.Description)
		}
	}
	return b.String()
}

// SunsetError says a URI only matches versions past their sunset date.
type SunsetError struct {
	URI            string
	Version        string
	SunsetDate     string
	DeprecatedBy   string
	MigrationGuide string
}

func (e *SunsetError) Error() string {
	msg := fmt.Sprintf("%s resolves only to version %s, which was sunset on %s", e.URI, e.Version, e.SunsetDate)
	if e.DeprecatedBy != "" {
		msg += ": use " + e.DeprecatedBy + " instead"
	}
	if e.MigrationGuide != "" {
		msg += " (migration guide: " + strings.TrimSpace(e.MigrationGuide) + ")"
	}
	return msg
}

// ErrInvalid marks a request the registry refuses because of what it says
// (a malformed URI, a sunset date too early); the message says what to fix.
var ErrInvalid = errors.New("invalid request")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Warning is advice attached to a successful answer, e.g. that a resolved
// version is deprecated.
type Warning struct {
	Code           string `json:"code"`
	Message        string `json:"message"`
	DeprecatedBy   string `json:"deprecated_by,omitempty"`
	SunsetDate     string `json:"sunset_date,omitempty"`
	MigrationGuide string `json:"migration_guide,omitempty"`
}

// RegisterResult reports one registration.
type RegisterResult struct {
	URI     string `json:"uri"`     // with @MAJOR.MINOR
	Version string `json:"version"` // full
	Created bool   `json:"created"` // false: identical content was already registered
	Digest  string `json:"digest"`
	// TrustTier is the tier the version was stored with (see WithVerifier);
	// empty when it was already registered (Created false) or no verifier
	// is set.
	TrustTier string             `json:"trust_tier,omitempty"`
	Warnings  []capability.Issue `json:"warnings,omitempty"`
	Record    Record             `json:"-"`
}

// BatchError lists the definitions of a batch that were refused; nothing of
// the batch was stored.
type BatchError struct {
	Failures []BatchFailure
}

// BatchFailure is one refused definition of a batch.
type BatchFailure struct {
	Index int
	URI   string
	Err   error
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the definitions were refused; nothing was registered:", len(e.Failures))
	for _, f := range e.Failures {
		fmt.Fprintf(&b, "\n  [%d] %s: %v", f.Index, f.URI, f.Err)
	}
	return b.String()
}

// Unwrap returns the failures' errors, so errors.Is/As see them.
func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// Register validates, completes, checks and stores one definition.
func (s *Service) Register(ctx context.Context, d capability.Definition) (RegisterResult, error) {
	res, err := s.RegisterBatch(ctx, []capability.Definition{d})
	if err != nil {
		var be *BatchError
		if errors.As(err, &be) && len(be.Failures) == 1 {
			return RegisterResult{}, be.Failures[0].Err
		}
		return RegisterResult{}, err
	}
	return res[0], nil
}

// RegisterBatch registers many definitions in one transaction: each is
// validated (errors refuse it), completed (missing domains and categories
// inferred, stability defaulted to stable), diffed against the version
// registered (or batched) just below it — a bump smaller than the changes
// need refuses it with a *BreakingChangeError — and stored. Re-registering a
// version with identical content is a no-op; with other content it is a
// conflict. Any refusal refuses the whole batch (*BatchError).
func (s *Service) RegisterBatch(ctx context.Context, defs []capability.Definition) ([]RegisterResult, error) {
	type item struct {
		def      capability.Definition
		key      Key
		ver      capability.Version
		warnings []capability.Issue
		digest   string
		tier     string
	}
	items := make([]*item, len(defs))
	var failures []BatchFailure
	for i := range defs {
		d := defs[i]
		d.Normalize()
		if d.Stability == "" {
			d.Stability = capability.StabilityStable
		}
		issues := capability.Validate(&d)
		if capability.HasErrors(issues) {
			failures = append(failures, BatchFailure{Index: i, URI: d.URI, Err: &capability.ValidationError{Issues: issues}})
			continue
		}
		d.ApplyInference(inferenceSource(&d))
		tier := ""
		if s.verify != nil {
			t, err := s.verify(ctx, &d)
			if err != nil {
				failures = append(failures, BatchFailure{Index: i, URI: d.URI, Err: fmt.Errorf("%w: %w", ErrInvalid, err)})
				continue
			}
			tier = t
		}
		u, _ := capability.ParseURI(d.URI)
		ver, _ := capability.ParseVersion(d.Version)
		it := &item{def: d, ver: ver, tier: tier, key: Key{Scheme: u.Scheme, Domain: d.Domain, Name: d.Name, Version: ver.Full()}}
		for _, iss := range issues {
			if iss.Severity == capability.SeverityWarning {
				it.warnings = append(it.warnings, iss)
			}
		}
		digest, err := Digest(&d)
		if err != nil {
			failures = append(failures, BatchFailure{Index: i, URI: d.URI, Err: invalidf("cannot encode the definition: %v", err)})
			continue
		}
		it.digest = digest
		items[i] = it
	}
	if err := s.checkToolNames(ctx, defs, &failures); err != nil {
		return nil, err
	}
	// Version rules: per capability, every new version against the one just
	// below it among the registered and the batched versions.
	groups := map[string][]int{}
	for i, it := range items {
		if it != nil {
			base := it.key.Scheme + ":" + it.key.Domain + "/" + it.key.Name
			groups[base] = append(groups[base], i)
		}
	}
	for _, idxs := range groups {
		first := items[idxs[0]]
		existing, err := s.store.Versions(ctx, first.key.Scheme, first.key.Domain, first.key.Name)
		if err != nil {
			return nil, err
		}
		type version struct {
			ver capability.Version
			def *capability.Definition
			idx int // -1: registered
		}
		var all []version
		for j := range existing {
			v, err := capability.ParseVersion(existing[j].Key.Version)
			if err != nil {
				continue
			}
			all = append(all, version{v, &existing[j].Definition, -1})
		}
		for _, i := range idxs {
			all = append(all, version{items[i].ver, &items[i].def, i})
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].ver.Less(all[b].ver) })
		for pos, v := range all {
			if v.idx < 0 || pos == 0 {
				continue
			}
			prev := all[pos-1]
			if prev.ver.Compare(v.ver) == 0 {
				continue // the same version twice: the store decides idempotency or conflict
			}
			report := capability.Diff(prev.def, v.def)
			if !report.Satisfied {
				failures = append(failures, BatchFailure{Index: v.idx, URI: v.def.URI,
					Err: &BreakingChangeError{URI: items[v.idx].key.String(), Previous: prev.ver.Full(), Report: report}})
			}
		}
	}
	if len(failures) > 0 {
		sort.Slice(failures, func(a, b int) bool { return failures[a].Index < failures[b].Index })
		return nil, &BatchError{Failures: failures}
	}
	recs := make([]Record, len(items))
	out := make([]RegisterResult, len(items))
	now := s.now().UTC()
	for i, it := range items {
		recs[i] = Record{Key: it.key, Definition: it.def, Digest: it.digest, TrustTier: it.tier, RegisteredAt: now}
		out[i] = RegisterResult{URI: capability.NewURI(it.key.Scheme, it.key.Domain, it.key.Name, it.ver).String(),
			Version: it.key.Version, Digest: it.digest, Warnings: it.warnings, Record: recs[i]}
	}
	put, err := s.put(ctx, recs, out)
	for _, r := range recs {
		s.cache.invalidate(cacheKey(r.Key.Scheme, r.Key.Domain, r.Key.Name))
	}
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		out[i].Created = put[i].Created
		if put[i].Created {
			out[i].TrustTier = it.tier
			s.log.Info("capability registered", "uri", out[i].URI, "version", out[i].Version)
		}
	}
	return out, nil
}

// put stores recs, with the recorder's "registered" events in the same
// transaction when there is a recorder (out describes recs, one to one).
func (s *Service) put(ctx context.Context, recs []Record, out []RegisterResult) ([]PutResult, error) {
	if s.recorder == nil {
		return s.store.Put(ctx, recs)
	}
	hook, err := s.recorder.RegisteredHook(ActorFrom(ctx), out)
	if err != nil {
		return nil, fmt.Errorf("record the registration: %w: nothing was registered", err)
	}
	return s.store.PutAudited(ctx, recs, hook)
}

// inferenceSource is what domain inference starts from: for an mcp: URI the
// server of its MCP binding (as CCOS does for discovered tools), otherwise
// the declared domain, so an OSSA capability's hierarchy starts with it.
func inferenceSource(d *capability.Definition) string {
	if strings.HasPrefix(d.URI, capability.SchemeMCP+":") && d.Bindings.MCP != nil && d.Bindings.MCP.Server != "" {
		return d.Bindings.MCP.Server
	}
	return d.Domain
}

// Digest is the content digest of a definition: SHA-256 of its canonical
// JSON, leaving out the lifecycle fields that Deprecate changes after
// registration (stability, deprecated_by, sunset_date, migration_guide), so
// that re-registering the original content of a deprecated version stays an
// idempotent no-op, and leaving out when it was discovered or imported
// (provenance.created_at), so that importing the same thing again is too.
func Digest(d *capability.Definition) (string, error) {
	c := *d
	c.Stability, c.DeprecatedBy, c.SunsetDate, c.MigrationGuide = "", "", "", ""
	if c.Provenance != nil {
		p := *c.Provenance
		p.CreatedAt = ""
		c.Provenance = &p
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Resolution is a resolved URI.
type Resolution struct {
	URI      string    `json:"uri"`     // the chosen version's URI, @MAJOR.MINOR
	Version  string    `json:"version"` // its full version
	Record   Record    `json:"-"`
	Warnings []Warning `json:"warnings,omitempty"`
}

// Resolve finds the version a URI names: with @MAJOR or @MAJOR.MINOR the
// highest compatible registered version (OSSA §7.2), without a version the
// highest stable one (else the highest). Versions past their sunset never
// resolve (a *SunsetError names the replacement); deprecated ones resolve
// with a warning.
func (s *Service) Resolve(ctx context.Context, uri string) (Resolution, error) {
	u, err := capability.ParseURI(uri)
	if err != nil {
		return Resolution{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	versions, err := s.cachedVersions(ctx, u.Scheme, u.Domain, u.Name)
	if err != nil {
		return Resolution{}, err
	}
	if len(versions) == 0 {
		return Resolution{}, fmt.Errorf("capability %s is not registered: %w (list what is with `caphub capability list --domain %s`)", u.Base(), ErrNotFound, u.Domain)
	}
	now := s.now()
	var best, bestStable, sunset *Record
	for i := range versions {
		r := &versions[i]
		v, err := capability.ParseVersion(r.Key.Version)
		if err != nil {
			continue
		}
		if u.HasVersion && !capability.Compatible(u, capability.NewURI(u.Scheme, u.Domain, u.Name, v)) {
			continue
		}
		if s.pastSunset(r, versions, now) {
			sunset = r
			continue
		}
		best = r // versions are ascending: the last one kept is the highest
		if r.Definition.Stability == capability.StabilityStable && !v.IsPrerelease() {
			bestStable = r
		}
	}
	if !u.HasVersion && bestStable != nil {
		best = bestStable
	}
	if best == nil {
		if sunset != nil {
			d := sunset.Definition
			return Resolution{}, &SunsetError{URI: uri, Version: sunset.Key.Version, SunsetDate: d.SunsetDate, DeprecatedBy: d.DeprecatedBy, MigrationGuide: d.MigrationGuide}
		}
		var have []string
		for _, r := range versions {
			have = append(have, r.Key.Version)
		}
		return Resolution{}, fmt.Errorf("no registered version of %s is compatible with %s (registered: %s): %w", u.Base(), uri, strings.Join(have, ", "), ErrNotFound)
	}
	v, _ := capability.ParseVersion(best.Key.Version)
	res := Resolution{URI: capability.NewURI(u.Scheme, u.Domain, u.Name, v).String(), Version: best.Key.Version, Record: *best}
	if d := best.Definition; d.Stability == capability.StabilityDeprecated {
		msg := fmt.Sprintf("%s is deprecated", res.URI)
		if d.DeprecatedBy != "" {
			msg += "; use " + d.DeprecatedBy
		}
		if d.SunsetDate != "" {
			msg += "; it stops resolving after " + d.SunsetDate
		}
		res.Warnings = append(res.Warnings, Warning{Code: "deprecated", Message: msg, DeprecatedBy: d.DeprecatedBy, SunsetDate: d.SunsetDate, MigrationGuide: d.MigrationGuide})
	}
	return res, nil
}

// pastSunset reports whether r's grace period is over (OSSA §8.1): its
// sunset date has passed and at least two newer minor versions exist.
func (s *Service) pastSunset(r *Record, all []Record, now time.Time) bool {
	d := r.Definition
	if d.SunsetDate == "" {
		return false
	}
	t, err := capability.ParseDate(d.SunsetDate)
	if err != nil || now.Before(t) {
		return false
	}
	return newerMinors(r.Key.Version, all) >= graceMinorVersions
}

// OSSA §8.1 grace period: the longer of two minor versions and six months.
const (
	graceMinorVersions = 2
	graceMonths        = 6
)

// newerMinors counts the distinct MAJOR.MINOR lines above version.
func newerMinors(version string, all []Record) int {
	v, err := capability.ParseVersion(version)
	if err != nil {
		return 0
	}
	seen := map[[2]uint64]bool{}
	for _, r := range all {
		o, err := capability.ParseVersion(r.Key.Version)
		if err != nil {
			continue
		}
		if o.Major > v.Major || o.Major == v.Major && o.Minor > v.Minor {
			seen[[2]uint64{o.Major, o.Minor}] = true
		}
	}
	return len(seen)
}

// Negotiate answers an OSSA §7.1 capability_request against the registered
// versions that still resolve.
func (s *Service) Negotiate(ctx context.Context, req capability.NegotiationRequest) (capability.NegotiationResponse, error) {
	u, err := capability.ParseURI(req.Capability)
	if err != nil {
		return capability.Negotiate(req, nil), nil // the response says what is wrong with the request
	}
	versions, err := s.cachedVersions(ctx, u.Scheme, u.Domain, u.Name)
	if err != nil {
		return capability.NegotiationResponse{}, err
	}
	now := s.now()
	var avail []capability.URI
	for i := range versions {
		if s.pastSunset(&versions[i], versions, now) {
			continue
		}
		if v, err := capability.ParseVersion(versions[i].Key.Version); err == nil {
			avail = append(avail, capability.NewURI(u.Scheme, u.Domain, u.Name, v))
		}
	}
	return capability.Negotiate(req, avail), nil
}

// Get returns one version by its full version, or by MAJOR.MINOR (the
// highest patch of it).
func (s *Service) Get(ctx context.Context, scheme, domain, name, version string) (Record, error) {
	v, err := capability.ParseVersion(version)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if v.Parts == 3 {
		return s.store.Get(ctx, Key{Scheme: scheme, Domain: domain, Name: name, Version: v.Full()})
	}
	versions, err := s.store.Versions(ctx, scheme, domain, name)
	if err != nil {
		return Record{}, err
	}
	for i := len(versions) - 1; i >= 0; i-- {
		o, err := capability.ParseVersion(versions[i].Key.Version)
		if err == nil && o.Major == v.Major && (v.Parts == 1 || o.Minor == v.Minor) {
			return versions[i], nil
		}
	}
	return Record{}, fmt.Errorf("capability %s:%s/%s has no version %s: %w", scheme, domain, name, version, ErrNotFound)
}

// GetRaw returns one version's stored definition JSON, digest and trust
// tier, for a full version (ok false otherwise: use Get).
func (s *Service) GetRaw(ctx context.Context, scheme, domain, name, version string) (raw RawRecord, ok bool, err error) {
	v, perr := capability.ParseVersion(version)
	if perr != nil || v.Parts != 3 {
		return RawRecord{}, false, nil
	}
	raw, err = s.store.GetRaw(ctx, Key{Scheme: scheme, Domain: domain, Name: name, Version: v.Full()})
	return raw, true, err
}

// Versions returns every version of one capability, ascending.
func (s *Service) Versions(ctx context.Context, scheme, domain, name string) ([]Record, error) {
	return s.store.Versions(ctx, scheme, domain, name)
}

// List returns the capabilities matching f.
func (s *Service) List(ctx context.Context, f ListFilter) (Page, error) {
	return s.store.List(ctx, f)
}

// Search ranks the capabilities matching q.
func (s *Service) Search(ctx context.Context, q SearchQuery) (Page, error) {
	return s.store.Search(ctx, q)
}

// DeprecateRequest is what Deprecate needs (OSSA §8).
type DeprecateRequest struct {
	DeprecatedBy   string `json:"deprecated_by,omitempty" yaml:"deprecated_by,omitempty"`
	SunsetDate     string `json:"sunset_date,omitempty" yaml:"sunset_date,omitempty"`
	MigrationGuide string `json:"migration_guide,omitempty" yaml:"migration_guide,omitempty"`
}

// DeprecateResult lists the versions deprecated.
type DeprecateResult struct {
	Deprecated []string  `json:"deprecated"` // full URIs with the full versions
	Warnings   []Warning `json:"warnings,omitempty"`
}

// Deprecate marks the versions a URI names as deprecated: with a full
// version that one, with MAJOR.MINOR (or MAJOR) every patch of it. The
// replacement must resolve; a sunset date must leave the OSSA §8.1 grace
// period (six months from the first deprecation; the two-minor-versions half
// is enforced when resolving).
func (s *Service) Deprecate(ctx context.Context, scheme, domain, name, version string, req DeprecateRequest) (DeprecateResult, error) {
	if req.DeprecatedBy == "" && req.MigrationGuide == "" {
		return DeprecateResult{}, invalidf("name the replacement (deprecated_by) or give a migration_guide")
	}
	if req.DeprecatedBy != "" {
		if _, err := s.Resolve(ctx, req.DeprecatedBy); err != nil {
			return DeprecateResult{}, invalidf("deprecated_by %s does not resolve (%v): register the replacement first", req.DeprecatedBy, err)
		}
	}
	v, err := capability.ParseVersion(version)
	if err != nil {
		return DeprecateResult{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	versions, err := s.store.Versions(ctx, scheme, domain, name)
	if err != nil {
		return DeprecateResult{}, err
	}
	var targets []Record
	for _, r := range versions {
		o, err := capability.ParseVersion(r.Key.Version)
		if err != nil {
			continue
		}
		if v.Parts == 3 && o.Compare(v) == 0 && r.Key.Version == v.Full() ||
			v.Parts < 3 && o.Major == v.Major && (v.Parts == 1 || o.Minor == v.Minor) {
			targets = append(targets, r)
		}
	}
	if len(targets) == 0 {
		return DeprecateResult{}, fmt.Errorf("capability %s:%s/%s has no version %s to deprecate: %w", scheme, domain, name, version, ErrNotFound)
	}
	now := s.now().UTC()
	var res DeprecateResult
	if req.SunsetDate != "" {
		sunset, err := capability.ParseDate(req.SunsetDate)
		if err != nil {
			return DeprecateResult{}, fmt.Errorf("%w: sunset_date %v", ErrInvalid, err)
		}
		for _, r := range targets {
			since := now
			if r.DeprecatedAt != nil {
				since = r.DeprecatedAt.UTC()
			}
			earliest := since.AddDate(0, graceMonths, 0).Truncate(24 * time.Hour)
			if sunset.Before(earliest) {
				return DeprecateResult{}, invalidf("sunset_date %s is earlier than the OSSA §8.1 grace period allows for %s (six months after its deprecation on %s): the earliest allowed date is %s",
					req.SunsetDate, r.Key, since.Format("2006-01-02"), earliest.Format("2006-01-02"))
			}
			if n := newerMinors(r.Key.Version, versions); n < graceMinorVersions {
				res.Warnings = append(res.Warnings, Warning{Code: "grace_minor_versions",
					Message: fmt.Sprintf("%s keeps resolving after %s until %d newer minor versions are registered (%d so far): the grace period is the longer of two minor versions and six months", r.Key, req.SunsetDate, graceMinorVersions, n)})
			}
		}
	}
	ds := make([]Deprecation, len(targets))
	for i, r := range targets {
		at := now
		if r.DeprecatedAt != nil {
			at = *r.DeprecatedAt
		}
		ds[i] = Deprecation{Key: r.Key, DeprecatedBy: req.DeprecatedBy, SunsetDate: req.SunsetDate, MigrationGuide: req.MigrationGuide, At: at}
	}
	for _, r := range targets {
		res.Deprecated = append(res.Deprecated, r.Key.String())
	}
	err = s.deprecate(ctx, ds, req, res)
	s.cache.invalidate(cacheKey(scheme, domain, name))
	if err != nil {
		return DeprecateResult{}, err
	}
	for _, r := range targets {
		s.log.Info("capability deprecated", "key", r.Key.String(), "by", req.DeprecatedBy, "sunset", req.SunsetDate)
	}
	return res, nil
}

// deprecate stores the deprecations, with the recorder's "deprecated"
// events in the same transaction when there is a recorder.
func (s *Service) deprecate(ctx context.Context, ds []Deprecation, req DeprecateRequest, res DeprecateResult) error {
	if s.recorder == nil {
		_, err := s.store.Deprecate(ctx, ds)
		return err
	}
	hook, err := s.recorder.DeprecatedHook(ActorFrom(ctx), req, res)
	if err != nil {
		return fmt.Errorf("record the deprecation: %w: nothing was deprecated", err)
	}
	_, err = s.store.DeprecateAudited(ctx, ds, hook)
	return err
}
