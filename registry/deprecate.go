package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
)

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
func (s *Service) Deprecate(ctx context.Context, scheme, domain, name, version string, req DeprecateRequest) (_ DeprecateResult, err error) {
	defer s.observe("deprecate", time.Now(), &err)
	if err := s.checkReplacement(ctx, req); err != nil {
		return DeprecateResult{}, err
	}
	targets, versions, err := s.deprecationTargets(ctx, scheme, domain, name, version)
	if err != nil {
		return DeprecateResult{}, err
	}
	now := s.now().UTC()
	var res DeprecateResult
	if req.SunsetDate != "" {
		if res.Warnings, err = checkSunset(req, targets, versions, now); err != nil {
			return DeprecateResult{}, err
		}
	}
	ds := make([]Deprecation, len(targets))
	for i, r := range targets {
		at := now
		if r.DeprecatedAt != nil {
			at = *r.DeprecatedAt
		}
		ds[i] = Deprecation{Key: r.Key, DeprecatedBy: req.DeprecatedBy, SunsetDate: req.SunsetDate, MigrationGuide: req.MigrationGuide, At: at}
		res.Deprecated = append(res.Deprecated, r.Key.String())
	}
	err = s.deprecate(ctx, ds, req, res)
	s.cache.invalidate(cacheKey(scheme, domain, name))
	if err != nil {
		return DeprecateResult{}, err
	}
	s.indexWritten(ctx, []Key{{Scheme: scheme, Domain: domain, Name: name}})
	for _, r := range targets {
		s.log.Info("capability deprecated", "key", r.Key.String(), "by", req.DeprecatedBy, "sunset", req.SunsetDate)
	}
	return res, nil
}

// checkReplacement refuses a request that names neither a replacement nor
// a migration guide, or a replacement that does not resolve.
func (s *Service) checkReplacement(ctx context.Context, req DeprecateRequest) error {
	if req.DeprecatedBy == "" && req.MigrationGuide == "" {
		return invalidf("name the replacement (deprecated_by) or give a migration_guide")
	}
	if req.DeprecatedBy != "" {
		if _, err := s.Resolve(ctx, req.DeprecatedBy); err != nil {
			return invalidf("deprecated_by %s does not resolve (%v): register the replacement first", req.DeprecatedBy, err)
		}
	}
	return nil
}

// deprecationTargets returns the versions version names (a full version,
// or every patch of MAJOR.MINOR or MAJOR), and every version of the
// capability.
func (s *Service) deprecationTargets(ctx context.Context, scheme, domain, name, version string) (targets, versions []Record, err error) {
	v, err := capability.ParseVersion(version)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	versions, err = s.store.Versions(ctx, scheme, domain, name)
	if err != nil {
		return nil, nil, err
	}
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
		return nil, nil, fmt.Errorf("capability %s:%s/%s has no version %s to deprecate: %w", scheme, domain, name, version, ErrNotFound)
	}
	return targets, versions, nil
}

// checkSunset refuses a sunset date earlier than six months after each
// target's deprecation (OSSA §8.1), and warns of the targets that keep
// resolving for want of two newer minor versions.
func checkSunset(req DeprecateRequest, targets, versions []Record, now time.Time) ([]Warning, error) {
	sunset, err := capability.ParseDate(req.SunsetDate)
	if err != nil {
		return nil, fmt.Errorf("%w: sunset_date %v", ErrInvalid, err)
	}
	var warnings []Warning
	for _, r := range targets {
		since := now
		if r.DeprecatedAt != nil {
			since = r.DeprecatedAt.UTC()
		}
		earliest := since.AddDate(0, graceMonths, 0).Truncate(24 * time.Hour)
		if sunset.Before(earliest) {
			return nil, invalidf("sunset_date %s is earlier than the OSSA §8.1 grace period allows for %s (six months after its deprecation on %s): the earliest allowed date is %s",
				req.SunsetDate, r.Key, since.Format("2006-01-02"), earliest.Format("2006-01-02"))
		}
		if n := newerMinors(r.Key.Version, versions); n < graceMinorVersions {
			warnings = append(warnings, Warning{Code: "grace_minor_versions",
				Message: fmt.Sprintf("%s keeps resolving after %s until %d newer minor versions are registered (%d so far): the grace period is the longer of two minor versions and six months", r.Key, req.SunsetDate, graceMinorVersions, n)})
		}
	}
	return warnings, nil
}

// deprecate stores the deprecations, with the recorder's "deprecated"
// events in the same transaction when there is a recorder.
func (s *Service) deprecate(ctx context.Context, ds []Deprecation, req DeprecateRequest, res DeprecateResult) error {
	if s.recorder == nil {
		_, err := s.store.Deprecate(ctx, ds)
		return err
	}
	hook, err := s.recorder.DeprecatedHook(identity.From(ctx).Actor, req, res)
	if err != nil {
		return fmt.Errorf("record the deprecation: %w: nothing was deprecated", err)
	}
	_, err = s.store.DeprecateAudited(ctx, ds, hook)
	return err
}
