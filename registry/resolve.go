package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/tracing"
)

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
func (s *Service) Resolve(ctx context.Context, uri string) (_ Resolution, err error) {
	defer s.observe("resolve", time.Now(), &err)
	ctx, span := tracing.Start(ctx, "registry resolve", tracing.Internal)
	span.SetString("caphub.capability.uri", uri)
	defer func() { span.End(err) }()
	u, err := capability.ParseURI(uri)
	if err != nil {
		return Resolution{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	versions, err := s.cachedVersions(ctx, u.Scheme, u.Domain, u.Name)
	if err != nil {
		return Resolution{}, err
	}
	if len(versions) == 0 {
		return Resolution{}, NotRegistered(u)
	}
	best, sunset := s.pickVersion(u, versions)
	if best == nil {
		return Resolution{}, unresolved(uri, u, versions, sunset)
	}
	v, _ := capability.ParseVersion(best.Key.Version)
	res := Resolution{URI: capability.NewURI(u.Scheme, u.Domain, u.Name, v).String(), Version: best.Key.Version, Record: *best}
	if d := best.Definition; d.Stability == capability.StabilityDeprecated {
		res.Warnings = append(res.Warnings, deprecatedWarning(res.URI, d))
	}
	return res, nil
}

// pickVersion returns the version of versions (ascending) that u resolves
// to, nil when none does, and the highest compatible version past its
// sunset, if any.
func (s *Service) pickVersion(u capability.URI, versions []Record) (best, sunset *Record) {
	now := s.now()
	var bestStable *Record
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
	return best, sunset
}

// unresolved is the error of a URI no version resolves to: a *SunsetError
// when a compatible version is past its sunset, else ErrNotFound listing
// the registered versions.
func unresolved(uri string, u capability.URI, versions []Record, sunset *Record) error {
	if sunset != nil {
		d := sunset.Definition
		return &SunsetError{URI: uri, Version: sunset.Key.Version, SunsetDate: d.SunsetDate, DeprecatedBy: d.DeprecatedBy, MigrationGuide: d.MigrationGuide}
	}
	var have []string
	for _, r := range versions {
		have = append(have, r.Key.Version)
	}
	return fmt.Errorf("no registered version of %s is compatible with %s (registered: %s): %w", u.Base(), uri, strings.Join(have, ", "), ErrNotFound)
}

// deprecatedWarning is the warning of resolving uri to the deprecated
// definition d.
func deprecatedWarning(uri string, d capability.Definition) Warning {
	msg := fmt.Sprintf("%s is deprecated", uri)
	if d.DeprecatedBy != "" {
		msg += "; use " + d.DeprecatedBy
	}
	if d.SunsetDate != "" {
		msg += "; it stops resolving after " + d.SunsetDate
	}
	return Warning{Code: "deprecated", Message: msg, DeprecatedBy: d.DeprecatedBy, SunsetDate: d.SunsetDate, MigrationGuide: d.MigrationGuide}
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
func (s *Service) Get(ctx context.Context, scheme, domain, name, version string) (_ Record, err error) {
	defer s.observe("get", time.Now(), &err)
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
// tier, with its ETag, for a full version (ok false otherwise: use Get):
// from the cache when the Service keeps one (WithCache), else from the
// store. The result is shared: callers must not modify it.
func (s *Service) GetRaw(ctx context.Context, scheme, domain, name, version string) (raw *CachedVersion, ok bool, err error) {
	defer s.observe("get", time.Now(), &err)
	v, perr := capability.ParseVersion(version)
	if perr != nil || v.Parts != 3 {
		return nil, false, nil
	}
	raw, err = s.cachedRaw(ctx, Key{Scheme: scheme, Domain: domain, Name: name, Version: v.Full()})
	return raw, true, err
}

// Versions returns every version of one capability, ascending.
func (s *Service) Versions(ctx context.Context, scheme, domain, name string) ([]Record, error) {
	return s.store.Versions(ctx, scheme, domain, name)
}

// List returns the capabilities matching f. With the cache (WithCache),
// a version whose stored JSON was decoded before is not decoded again: its
// definition is shared, and callers must not modify it.
func (s *Service) List(ctx context.Context, f ListFilter) (_ Page, err error) {
	defer s.observe("list", time.Now(), &err)
	ctx, span := tracing.Start(ctx, "registry list", tracing.Internal)
	defer func() { span.End(err) }()
	if !s.cacheActive {
		return s.store.List(ctx, f)
	}
	raw, err := s.store.ListRaw(ctx, f)
	if err != nil {
		return Page{}, err
	}
	page := Page{Total: raw.Total, NextCursor: raw.NextCursor, Items: make([]Record, len(raw.Items))}
	for i, r := range raw.Items {
		if page.Items[i], err = s.decodeListed(r); err != nil {
			return Page{}, err
		}
	}
	return page, nil
}

// ListRaw returns the capabilities matching f with their stored JSON, not
// decoded (the REST API writes it as it is).
func (s *Service) ListRaw(ctx context.Context, f ListFilter) (_ RawPage, err error) {
	defer s.observe("list", time.Now(), &err)
	return s.store.ListRaw(ctx, f)
}

// Search ranks the capabilities matching q.
func (s *Service) Search(ctx context.Context, q SearchQuery) (_ Page, err error) {
	defer s.observe("search", time.Now(), &err)
	ctx, span := tracing.Start(ctx, "registry search", tracing.Internal)
	defer func() { span.End(err) }()
	if page, ok, err := s.searchIndexed(ctx, q); ok || err != nil {
		return page, err
	}
	return s.store.Search(ctx, q)
}
