package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/tracing"
)

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
func (s *Service) RegisterBatch(ctx context.Context, defs []capability.Definition) (_ []RegisterResult, err error) {
	ctx, span := tracing.Start(ctx, "registry register", tracing.Internal)
	span.SetInt("caphub.definitions", len(defs))
	defer func() { span.End(err) }()
	defer s.observe("register", time.Now(), &err)
	items, failures := s.prepareItems(ctx, defs)
	if err := s.checkToolNames(ctx, defs, &failures); err != nil {
		return nil, err
	}
	versionFailures, err := s.checkVersionRules(ctx, items)
	if err != nil {
		return nil, err
	}
	failures = append(failures, versionFailures...)
	if len(failures) > 0 {
		sort.Slice(failures, func(a, b int) bool { return failures[a].Index < failures[b].Index })
		return nil, &BatchError{Failures: failures}
	}
	return s.storeBatch(ctx, items)
}

// batchItem is one definition of a batch, validated and completed.
type batchItem struct {
	def      capability.Definition
	key      Key
	ver      capability.Version
	warnings []capability.Issue
	digest   string
	tier     string
	json     []byte // def encoded, as stored
}

// parallelPrepare is the batch size from which prepareItems spreads the
// work over the CPUs.
const parallelPrepare = 16

// prepareItems prepares every definition of a batch (prepareItem), on
// every CPU when the batch is large: validation, schema compilation and
// digests are most of a large import's CPU. items holds nil for the
// refused definitions, and failures says why, in batch order.
func (s *Service) prepareItems(ctx context.Context, defs []capability.Definition) ([]*batchItem, []BatchFailure) {
	items := make([]*batchItem, len(defs))
	refused := make([]*BatchFailure, len(defs))
	workers := min(runtime.GOMAXPROCS(0), len(defs)/parallelPrepare)
	if workers <= 1 {
		for i := range defs {
			items[i], refused[i] = s.prepareItem(ctx, i, defs[i])
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(defs); i = int(next.Add(1) - 1) {
					items[i], refused[i] = s.prepareItem(ctx, i, defs[i])
				}
			}()
		}
		wg.Wait()
	}
	var failures []BatchFailure
	for _, f := range refused {
		if f != nil {
			failures = append(failures, *f)
		}
	}
	return items, failures
}

// prepareItem normalizes, validates, completes, verifies and digests the
// i-th definition of a batch; a failure refuses it.
func (s *Service) prepareItem(ctx context.Context, i int, d capability.Definition) (*batchItem, *BatchFailure) {
	d.Normalize()
	if d.Stability == "" {
		d.Stability = capability.StabilityStable
	}
	// The schemas are encoded once, for validation, the digest and the
	// stored document; not before the budgets are checked, so that a
	// schema too large to compile is not encoded either.
	var enc capability.EncodedSchemas
	if budget := capability.CheckSchemaBudget(d.Input, d.Output); len(budget) == 0 {
		enc, _ = capability.EncodeSchemas(&d) // a schema that does not encode is refused below
	}
	issues := capability.ValidateEncoded(&d, enc)
	if capability.HasErrors(issues) {
		return nil, &BatchFailure{Index: i, URI: d.URI, Err: &capability.ValidationError{Issues: issues}}
	}
	d.ApplyInference(inferenceSource(&d))
	tier := ""
	if s.verify != nil {
		t, err := s.verify(ctx, &d)
		if err != nil {
			return nil, &BatchFailure{Index: i, URI: d.URI, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
		tier = t
	}
	u, _ := capability.ParseURI(d.URI)
	ver, _ := capability.ParseVersion(d.Version)
	it := &batchItem{def: d, ver: ver, tier: tier, key: Key{Scheme: u.Scheme, Domain: d.Domain, Name: d.Name, Version: ver.Full()}}
	for _, iss := range issues {
		if iss.Severity == capability.SeverityWarning {
			it.warnings = append(it.warnings, iss)
		}
	}
	digest, err := digestEncoded(&d, enc)
	if err == nil {
		it.json, err = capability.MarshalEncoded(d, enc)
	}
	if err != nil {
		return nil, &BatchFailure{Index: i, URI: d.URI, Err: invalidf("cannot encode the definition: %v", err)}
	}
	it.digest = digest
	return it, nil
}

// precedingPerQuery bounds the versions whose preceding registered
// version checkVersionRules reads in one query
// (Store.PrecedingVersions), and so holds in memory at once.
const precedingPerQuery = 500

// checkVersionRules applies the version rules per capability: every new
// version against the one just below it among the registered and the
// batched versions. items holds nil for refused definitions. Of the
// registered versions, only the one just below (or level with) each new
// version is read, for many versions a query: the check costs the same
// whatever the number of versions a capability has.
func (s *Service) checkVersionRules(ctx context.Context, items []*batchItem) ([]BatchFailure, error) {
	groups := map[Key][]int{}
	var caps []Key
	var keys []Key
	for i, it := range items {
		if it != nil {
			c := Key{Scheme: it.key.Scheme, Domain: it.key.Domain, Name: it.key.Name}
			if _, ok := groups[c]; !ok {
				caps = append(caps, c)
			}
			groups[c] = append(groups[c], i)
			keys = append(keys, it.key)
		}
	}
	// existing holds, per capability, the registered versions that precede
	// one of its batched versions, each once.
	existing := map[Key][]Record{}
	seen := map[Key]bool{}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), precedingPerQuery)]
		keys = keys[len(chunk):]
		prev, err := s.store.PrecedingVersions(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, r := range prev {
			if r == nil || seen[r.Key] {
				continue
			}
			seen[r.Key] = true
			c := Key{Scheme: r.Key.Scheme, Domain: r.Key.Domain, Name: r.Key.Name}
			existing[c] = append(existing[c], *r)
		}
	}
	var failures []BatchFailure
	for _, c := range caps {
		failures = append(failures, checkCapabilityVersions(items, groups[c], existing[c])...)
	}
	return failures, nil
}

// orderedVersion is a version of a capability, registered or batched.
type orderedVersion struct {
	ver capability.Version
	def *capability.Definition
	idx int // index in the batch; -1: registered
}

// checkCapabilityVersions checks the batched versions items[idxs] of one
// capability against its registered ones (existing: at least those just
// below or level with each batched version, in any order): a bump smaller
// than the changes from the version just below needs is a
// *BreakingChangeError.
func checkCapabilityVersions(items []*batchItem, idxs []int, existing []Record) []BatchFailure {
	var all []orderedVersion
	for j := range existing {
		if v, err := capability.ParseVersion(existing[j].Key.Version); err == nil {
			all = append(all, orderedVersion{v, &existing[j].Definition, -1})
		}
	}
	for _, i := range idxs {
		all = append(all, orderedVersion{items[i].ver, &items[i].def, i})
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].ver.Less(all[b].ver) })
	var failures []BatchFailure
	for pos := 1; pos < len(all); pos++ {
		v, prev := all[pos], all[pos-1]
		if v.idx < 0 || prev.ver.Compare(v.ver) == 0 {
			continue // registered, or the same version twice: the store decides idempotency or conflict
		}
		if report := capability.Diff(prev.def, v.def); !report.Satisfied {
			failures = append(failures, BatchFailure{Index: v.idx, URI: v.def.URI,
				Err: &BreakingChangeError{URI: items[v.idx].key.String(), Previous: prev.ver.Full(), Report: report}})
		}
	}
	return failures
}

// storeBatch stores the checked items in one transaction and reports
// what each registration did.
func (s *Service) storeBatch(ctx context.Context, items []*batchItem) ([]RegisterResult, error) {
	recs := make([]Record, len(items))
	out := make([]RegisterResult, len(items))
	now := s.now().UTC()
	for i, it := range items {
		recs[i] = Record{Key: it.key, Definition: it.def, Digest: it.digest, TrustTier: it.tier, RegisteredAt: now}
		out[i] = RegisterResult{URI: capability.NewURI(it.key.Scheme, it.key.Domain, it.key.Name, it.ver).String(),
			Version: it.key.Version, Digest: it.digest, Warnings: it.warnings, Record: recs[i]}
		recs[i].JSON = it.json // for the store only: the results outlive the write
	}
	put, err := s.put(ctx, recs, out)
	keys := make([]Key, len(recs))
	for i, r := range recs {
		s.cache.invalidate(cacheKey(r.Key.Scheme, r.Key.Domain, r.Key.Name))
		keys[i] = r.Key
	}
	if err != nil {
		return nil, err
	}
	s.indexWritten(ctx, keys)
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
// Concurrent registrations share transactions (see groupCommit).
func (s *Service) put(ctx context.Context, recs []Record, out []RegisterResult) ([]PutResult, error) {
	var hook *chain.Hook
	if s.recorder != nil {
		var err error
		hook, err = s.recorder.RegisteredHook(identity.From(ctx).Actor, out)
		if err != nil {
			return nil, fmt.Errorf("record the registration: %w: nothing was registered", err)
		}
	}
	return s.groupPut(ctx, recs, hook)
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
	return digestEncoded(d, capability.EncodedSchemas{})
}

// digestEncoded is Digest with d's schemas encoded already (enc, zero when
// not).
func digestEncoded(d *capability.Definition, enc capability.EncodedSchemas) (string, error) {
	c := *d
	c.Stability, c.DeprecatedBy, c.SunsetDate, c.MigrationGuide = "", "", "", ""
	if c.Provenance != nil {
		p := *c.Provenance
		p.CreatedAt = ""
		c.Provenance = &p
	}
	b, err := capability.MarshalEncoded(c, enc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
