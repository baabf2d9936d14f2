// Package policy is caphub's governance of invocations: per-agent policies
// (granted permissions, allowed effects, a minimum trust tier, capabilities
// that need a human's approval) checked by Engine, the invoke.Policy the
// pipeline asks before it runs a binding, and the Approvals a human decides.
//
// Policies are documents of kind "policy" in a registry.DocStore, keyed by
// agent ID. The policy under the key "*" is the default for callers that
// have none of their own (and for anonymous callers). When neither exists
// the caller is not restricted: a registry without policies allows every
// call, as before governance, except that CAPHUB_HUMAN_APPROVAL_REQUIRED
// still makes every call wait for approval.
//
// Within a policy, lists are grants, not filters: an empty
// GrantedPermissions grants no permission and an empty AllowedEffects
// allows no effect, so a capability that declares one is refused. "*"
// grants every permission (or effect); "network.*" every permission under
// network. A capability that declares no permissions or effects passes
// those rules whatever the policy says.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
)

// policyKind is the registry.DocStore kind policies are kept under; the key
// is the agent ID, or DefaultAgent.
const policyKind = "policy"

// DefaultAgent is the key of the default policy: the one applied to callers
// without a policy of their own.
const DefaultAgent = "*"

// EnvHumanApproval names the environment variable that, when true, makes
// every call need a human's approval (CCOS_HUMAN_APPROVAL_REQUIRED in CCOS).
const EnvHumanApproval = "CAPHUB_HUMAN_APPROVAL_REQUIRED"

// Policy is what one agent may invoke.
type Policy struct {
	// Agent is the agent ID the policy governs, or "*" for the default.
	Agent string `json:"agent"`
	// GrantedPermissions must cover every permission a capability declares
	// (capability.Definition.Permissions). "*" and "prefix.*" match more.
	GrantedPermissions []string `json:"granted_permissions"`
	// AllowedEffects must cover every effect a capability declares
	// (capability.Definition.Effects). "*" and "prefix.*" match more.
	AllowedEffects []string `json:"allowed_effects"`
	// MinTrustTier, when set, refuses capabilities registered with a lower
	// trust tier (see governance/sign: verified > trusted > community >
	// untrusted; a definition without a tier is below all of them).
	MinTrustTier string `json:"min_trust_tier,omitempty"`
	// RequireApproval lists capability URI patterns whose calls need a
	// human's approval: a base URI (ossa:github/create_issue, any version),
	// a URI with a version (…@1 any 1.x, …@1.2), with "*" matching within a
	// segment (ossa:github/*, ossa:*/delete_*).
	RequireApproval []string `json:"require_approval,omitempty"`
}

// Validate reports what is wrong with p, as an error wrapping
// registry.ErrInvalid.
func (p *Policy) Validate() error {
	if p.Agent != DefaultAgent {
		if err := agent.CheckID(p.Agent); err != nil {
			return fmt.Errorf("policy: %w (or \"*\" for the default policy)", err)
		}
	}
	if p.MinTrustTier != "" && !slices.Contains(sign.Tiers, p.MinTrustTier) {
		return fmt.Errorf("%w: policy of agent %q: minimum trust tier %q is not a tier: use one of %s", registry.ErrInvalid, p.Agent, p.MinTrustTier, strings.Join(sign.Tiers, ", "))
	}
	for _, pat := range p.RequireApproval {
		base, _, _ := strings.Cut(pat, "@")
		if _, err := path.Match(base, ""); err != nil || pat == "" {
			return fmt.Errorf("%w: policy of agent %q: approval pattern %q is malformed: write a capability URI such as ossa:github/create_issue, with * for any segment", registry.ErrInvalid, p.Agent, pat)
		}
	}
	return nil
}

// Policies keeps policies in a registry.DocStore.
type Policies struct {
	docs registry.DocStore

	// Effective lookups are cached for cacheTTL: every governed call reads
	// them. Changes made through this Policies apply at once; changes made
	// by another process (caphub policy set against the same database)
	// apply within cacheTTL.
	mu    sync.Mutex
	cache map[string]cachedPolicy
	// recorder audits changes; nil records nothing.
	recorder registry.ChangeRecorder
	// changing serialises Delete's existence check with its write.
	changing sync.Mutex
}

type cachedPolicy struct {
	p  *Policy
	at time.Time
}

// cacheTTL bounds how stale an effective policy may be.
const cacheTTL = time.Second

// NewPolicies returns the policies kept in docs. With a log, every Put and
// Delete commits with its audit event (audit.KindPolicySet,
// audit.KindPolicyDeleted) in one transaction.
func NewPolicies(docs registry.DocStore, log *audit.Log) *Policies {
	s := &Policies{docs: docs, cache: map[string]cachedPolicy{}}
	if log != nil { // a nil *audit.Log must not become a non-nil recorder
		s.recorder = log
	}
	return s
}

func (s *Policies) forget() {
	s.mu.Lock()
	s.cache = map[string]cachedPolicy{}
	s.mu.Unlock()
}

// Put creates or replaces the policy of p.Agent.
func (s *Policies) Put(ctx context.Context, p Policy) error {
	defer s.forget()
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ops := []registry.DocOp{{Kind: policyKind, Key: p.Agent, Value: b}}
	if err := registry.ApplyDocsRecorded(ctx, s.docs, s.recorder, ops, audit.KindPolicySet, identity.From(ctx).Actor, "", map[string]any{"agent": p.Agent, "policy": p}); err != nil {
		return fmt.Errorf("store the policy of agent %q: %w", p.Agent, err)
	}
	return nil
}

// Get returns the policy stored under agent (exactly: no fallback to the
// default); the error wraps registry.ErrNotFound when there is none.
func (s *Policies) Get(ctx context.Context, agentID string) (*Policy, error) {
	d, err := s.docs.GetDoc(ctx, policyKind, agentID)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return nil, &registry.NotFoundError{Kind: policyKind, Name: agentID, Message: fmt.Sprintf("agent %q has no policy", agentID)}
		}
		return nil, fmt.Errorf("read the policy of agent %q: %w", agentID, err)
	}
	var p Policy
	if err := json.Unmarshal(d.Value, &p); err != nil {
		return nil, fmt.Errorf("the stored policy of agent %q is not valid JSON: %w (set the policy again)", agentID, err)
	}
	return &p, nil
}

// Effective returns the policy that governs caller: its own, else the
// default, else nil (no restriction).
func (s *Policies) Effective(ctx context.Context, caller string) (*Policy, error) {
	s.mu.Lock()
	c, ok := s.cache[caller]
	s.mu.Unlock()
	if ok && time.Since(c.at) < cacheTTL {
		return c.p, nil
	}
	p, err := s.effective(ctx, caller)
	if err == nil {
		s.mu.Lock()
		if len(s.cache) > 10000 {
			s.cache = map[string]cachedPolicy{}
		}
		s.cache[caller] = cachedPolicy{p: p, at: time.Now()}
		s.mu.Unlock()
	}
	return p, err
}

func (s *Policies) effective(ctx context.Context, caller string) (*Policy, error) {
	for _, key := range []string{caller, DefaultAgent} {
		if key == "" {
			continue
		}
		p, err := s.Get(ctx, key)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, registry.ErrNotFound) {
			return nil, err
		}
	}
	return nil, nil
}

// Delete removes the policy of agentID; ErrNotFound when there is none.
func (s *Policies) Delete(ctx context.Context, agentID string) error {
	defer s.forget()
	if s.recorder == nil {
		return s.docs.DeleteDoc(ctx, policyKind, agentID)
	}
	// ApplyDocs deletes a missing document silently, so existence is
	// checked first, under the lock against this process's writers.
	s.changing.Lock()
	defer s.changing.Unlock()
	if _, err := s.docs.GetDoc(ctx, policyKind, agentID); err != nil {
		return err
	}
	ops := []registry.DocOp{{Kind: policyKind, Key: agentID, Delete: true}}
	return registry.ApplyDocsRecorded(ctx, s.docs, s.recorder, ops, audit.KindPolicyDeleted, identity.From(ctx).Actor, "", map[string]any{"agent": agentID})
}

// grants reports whether a grant list covers want: exactly, by "*", or by
// a "prefix.*" entry.
func grants(list []string, want string) bool {
	for _, g := range list {
		if g == "*" || g == want {
			return true
		}
		if p, ok := strings.CutSuffix(g, ".*"); ok && strings.HasPrefix(want, p+".") {
			return true
		}
	}
	return false
}

// MatchURI reports whether a capability URI (as the pipeline resolves it,
// scheme:domain/name@MAJOR.MINOR) matches an approval pattern: the pattern's
// base URI matches with path.Match ("*" within a segment), and its version,
// when given, is "*", the URI's version, or the URI's major version.
func MatchURI(pattern, uri string) bool {
	pbase, pver, _ := strings.Cut(pattern, "@")
	base, ver, _ := strings.Cut(uri, "@")
	if ok, err := path.Match(pbase, base); err != nil || !ok {
		return false
	}
	return pver == "" || pver == "*" || pver == ver || strings.HasPrefix(ver, pver+".")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
