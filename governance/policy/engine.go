package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// TierFunc returns the trust tier a capability version was registered with
// (registry.Record.TrustTier; "" for one registered before tiers existed).
type TierFunc func(ctx context.Context, uri string) (string, error)

// ResolverTiers reads trust tiers from the registry, for the calls the
// pipeline did not resolve (a fronted tools/call); a resolved call carries
// its tier (invoke.Call.TrustTier).
func ResolverTiers(r invoke.Resolver) TierFunc {
	return func(ctx context.Context, uri string) (string, error) {
		res, err := r.Resolve(ctx, uri)
		if err != nil {
			return "", err
		}
		return res.Record.TrustTier, nil
	}
}

// Options configure an Engine.
type Options struct {
	// Tiers looks up trust tiers, for policies with a MinTrustTier, of the
	// calls that do not carry theirs (invoke.Call.Resolved false). Without
	// it such policies refuse those calls (the tier cannot be shown to be
	// high enough).
	Tiers TierFunc
	// Audit, when set, receives a policy_decision event per Check and an
	// approval event per decision.
	Audit *audit.Log
	// ApprovalRequired makes every call need a human's approval
	// (CAPHUB_HUMAN_APPROVAL_REQUIRED, read by the caphub command).
	ApprovalRequired bool
	// ApprovalTTL is how long an approval waits, and an approved call stays
	// allowed (default DefaultApprovalTTL).
	ApprovalTTL time.Duration
	// MaxPendingApprovals is how many pending approvals one caller may have
	// (default DefaultMaxPendingApprovals; negative: no limit). Past it a
	// call that needs approval is refused with invoke.CodeTooManyApprovals.
	MaxPendingApprovals int
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Log receives failures to append audit events (default slog.Default()).
	Log *slog.Logger
}

// Engine is the invoke.Policy that enforces the stored per-agent policies
// and human approval. It is safe for concurrent use.
type Engine struct {
	policies  *Policies
	approvals *Approvals
	opts      Options
}

var _ invoke.Policy = (*Engine)(nil)

// NewEngine returns the engine over the policies and approvals in docs.
func NewEngine(docs registry.DocStore, opts Options) *Engine {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxPendingApprovals == 0 {
		opts.MaxPendingApprovals = DefaultMaxPendingApprovals
	}
	return &Engine{policies: NewPolicies(docs, opts.Audit), approvals: NewApprovals(docs, opts.Audit, opts.Now, opts.ApprovalTTL), opts: opts}
}

// Policies returns the stored policies the engine enforces.
func (e *Engine) Policies() *Policies { return e.policies }

// Approvals returns the approvals the engine creates and honours.
func (e *Engine) Approvals() *Approvals { return e.approvals }

// decision is the outcome of Check, as the audit chain records it.
type decision struct {
	Decision   string `json:"decision"` // allow, deny or approval_required
	Rule       string `json:"rule,omitempty"`
	Policy     string `json:"policy,omitempty"` // the key of the policy applied
	Message    string `json:"message,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// Check allows call, or refuses it with an *invoke.Error whose message
// names the rule that failed: DENIED for a permission not granted, an
// effect not allowed, a trust tier below the minimum, or an approval that
// is denied, expired, used or for another call; APPROVAL_REQUIRED, with
// details.approval_id, when the call needs a human's approval (a pending
// approval is then created: approve it and retry with identity.WithApproval).
func (e *Engine) Check(ctx context.Context, call *invoke.Call) error {
	d, err := e.check(ctx, call)
	// A call no policy governs (no policy for the agent, no default, no
	// approval rule) is allowed without a decision event: its invocation
	// record is in the audit chain anyway.
	if e.opts.Audit != nil && !(d.Decision == "allow" && d.Policy == "" && d.Rule == "") {
		// Not waited for: it shares a commit with the invocation record
		// that follows it (and with whatever else is waiting).
		e.opts.Audit.Enqueue(audit.KindPolicyDecision, call.Caller, call.URI, d)
	}
	return err
}

func (e *Engine) check(ctx context.Context, call *invoke.Call) (decision, error) {
	p, err := e.policies.Effective(ctx, call.Caller)
	if err != nil {
		return e.deny("policy", "", fmt.Sprintf("cannot read the policy of agent %q: %v", call.Caller, err), err)
	}
	var who, key string
	if p != nil {
		key = p.Agent
		who = fmt.Sprintf("policy of agent %q", call.Caller)
		if p.Agent == DefaultAgent {
			who = fmt.Sprintf("default policy \"*\" (agent %q has none of its own)", call.Caller)
		}
		if d, err := e.checkGrants(p, who, call.Definition); err != nil {
			return d, err
		}
		if d, err := e.checkTier(ctx, p, who, call); err != nil {
			return d, err
		}
	}
	rule := approvalRule(e.opts.ApprovalRequired, p, who, call)
	if rule == "" {
		return decision{Decision: "allow", Policy: key}, nil
	}
	return e.approval(ctx, call, key, rule)
}

// checkGrants denies a capability whose permissions or effects policy p
// (named who) does not grant.
func (e *Engine) checkGrants(p *Policy, who string, def *capability.Definition) (decision, error) {
	for _, perm := range def.Permissions {
		if !grants(p.GrantedPermissions, perm) {
			return e.deny("permission", p.Agent, fmt.Sprintf("%s: capability needs permission %q, which is not granted (granted: %s); the policy must grant it",
				who, perm, listOrNone(p.GrantedPermissions)), nil, "permission", perm)
		}
	}
	for _, eff := range def.Effects {
		if !grants(p.AllowedEffects, eff) {
			return e.deny("effect", p.Agent, fmt.Sprintf("%s: effect %q is not allowed (allowed: %s); the policy must allow it",
				who, eff, listOrNone(p.AllowedEffects)), nil, "effect", eff)
		}
	}
	return decision{}, nil
}

// checkTier denies a capability whose trust tier is below the minimum of
// policy p (named who), or cannot be read: the call's own tier when the
// pipeline resolved it, else the one Options.Tiers looks up.
func (e *Engine) checkTier(ctx context.Context, p *Policy, who string, call *invoke.Call) (decision, error) {
	if p.MinTrustTier == "" {
		return decision{}, nil
	}
	tier := call.TrustTier
	if !call.Resolved {
		if e.opts.Tiers == nil {
			return e.deny("min_trust_tier", p.Agent, fmt.Sprintf("%s: a minimum trust tier %q is set but caphub has no way to look tiers up (a configuration error: give policy.Options.Tiers)", who, p.MinTrustTier), nil)
		}
		var err error
		if tier, err = e.opts.Tiers(ctx, call.URI); err != nil {
			return e.deny("min_trust_tier", p.Agent, fmt.Sprintf("%s: cannot read the trust tier of %s: %v", who, call.URI, err), err)
		}
	}
	if sign.AtLeast(tier, p.MinTrustTier) {
		return decision{}, nil
	}
	shown := tier
	if shown == "" {
		shown = "none (registered before trust tiers)"
	}
	return e.deny("min_trust_tier", p.Agent, fmt.Sprintf("%s: trust tier %q is below the minimum %q; sign the definition or register it as an administrator, or lower the minimum",
		who, shown, p.MinTrustTier), nil)
}

// approvalRule is the rule that makes call need a human's approval: the
// operator's switch (always), the capability's tool policy, or a
// require_approval pattern of policy p (named who); "" when none does.
func approvalRule(always bool, p *Policy, who string, call *invoke.Call) string {
	switch {
	case always:
		return EnvHumanApproval + "=true"
	case capability.ToolPolicy(call.Definition) == capability.ToolPolicyRequiresApproval:
		return "the capability's tool policy is requires_approval (metadata.everruns.policy)"
	case p == nil:
		return ""
	}
	for _, pat := range p.RequireApproval {
		if MatchURI(pat, call.URI) {
			return fmt.Sprintf("%s: require_approval %q", who, pat)
		}
	}
	return ""
}

// deny refuses the call under rule of policy key; detail is more pairs for
// the error's details (e.g. "permission", the one not granted), so that a
// client can say how to change the policy.
func (e *Engine) deny(rule, key, msg string, cause error, detail ...string) (decision, error) {
	details := map[string]any{"rule": rule}
	if key != "" {
		details["policy"] = key
	}
	for i := 0; i+1 < len(detail); i += 2 {
		details[detail[i]] = detail[i+1]
	}
	// A refusal because the policy or a tier could not be read (cause) is
	// still a refusal — caphub fails closed — but not a verdict: it says so
	// (503 on REST), so that a client retries instead of taking it as
	// forbidden.
	code := invoke.CodeDenied
	if cause != nil {
		code = invoke.CodePolicyUnavailable
	}
	return decision{Decision: "deny", Rule: rule, Policy: key, Message: msg},
		&invoke.Error{Code: code, Message: msg, Cause: cause, Details: details}
}

// approval lets the call through when it carries an approved, unused,
// unexpired approval for the same caller, URI and input; refuses it when
// the approval cannot be used; and otherwise answers with the pending
// approval of the same call, or a new one (refused past the caller's cap).
func (e *Engine) approval(ctx context.Context, call *invoke.Call, key, rule string) (decision, error) {
	id := identity.From(ctx).Approval
	if id == "" {
		ap, err := e.approvals.request(ctx, call.Caller, call.URI, call.Input, rule, e.opts.MaxPendingApprovals)
		if errors.Is(err, ErrTooManyPending) {
			msg := fmt.Sprintf("%s needs human approval (%s), but %v", call.URI, rule, err)
			return decision{Decision: "deny", Rule: "approval_limit", Policy: key, Message: msg},
				&invoke.Error{Code: invoke.CodeTooManyApprovals, Message: msg, Retryable: true, Details: map[string]any{"rule": "approval_limit", "limit": e.opts.MaxPendingApprovals}}
		}
		if err != nil {
			return e.deny("approval", key, fmt.Sprintf("%s needs human approval (%s), but the approval request could not be stored: %v", call.URI, rule, err), err)
		}
		msg := fmt.Sprintf("%s needs human approval (%s): approval %s is pending until %s; once approved (POST /v1/approvals/%s/approve), call again with the approval id",
			call.URI, rule, ap.ID, ap.ExpiresAt.Format(time.RFC3339), ap.ID)
		return decision{Decision: "approval_required", Rule: "approval", Policy: key, Message: msg, ApprovalID: ap.ID},
			&invoke.Error{Code: invoke.CodeApprovalNeeded, Message: msg, Details: map[string]any{"approval_id": ap.ID, "expires_at": ap.ExpiresAt, "rule": rule}}
	}
	dg, err := digest(call.Input)
	if err != nil {
		return e.deny("approval", key, fmt.Sprintf("approval %s: %v", id, err), err)
	}
	pending := false
	_, err = e.approvals.use(ctx, id, func(ap *Approval) error {
		switch {
		case ap.Agent != call.Caller || ap.URI != call.URI:
			return fmt.Errorf("approval %s is for agent %q calling %s, not for agent %q calling %s: retry without it to request an approval for this call", id, ap.Agent, ap.URI, call.Caller, call.URI)
		case ap.InputDigest != dg:
			return fmt.Errorf("approval %s was given for another input of %s: retry with the input that was approved, or without the id to request a new approval", id, call.URI)
		case ap.Status == StatusPending:
			pending = true
			return fmt.Errorf("approval %s is still pending (until %s): wait for a decision, then retry", id, ap.ExpiresAt.Format(time.RFC3339))
		case ap.Status == StatusDenied:
			return fmt.Errorf("approval %s was denied%s: the call may not run", id, decidedBy(ap))
		case ap.Status == StatusExpired:
			return fmt.Errorf("approval %s expired at %s: call again without it to request a new approval", id, ap.ExpiresAt.Format(time.RFC3339))
		case ap.UsedAt != nil:
			return fmt.Errorf("approval %s was already used at %s; an approval allows one call: call again without it to request a new approval", id, ap.UsedAt.Format(time.RFC3339))
		}
		return nil
	})
	switch {
	case err == nil:
		return decision{Decision: "allow", Rule: "approval", Policy: key, ApprovalID: id}, nil
	case pending:
		return decision{Decision: "approval_required", Rule: "approval", Policy: key, Message: err.Error(), ApprovalID: id},
			&invoke.Error{Code: invoke.CodeApprovalNeeded, Message: err.Error(), Details: map[string]any{"approval_id": id, "rule": rule}}
	case errors.Is(err, registry.ErrNotFound):
		err = fmt.Errorf("approval %s does not exist: call again without it to request an approval", id)
	}
	d, derr := e.deny("approval", key, err.Error(), nil)
	d.ApprovalID = id
	derr.(*invoke.Error).Details["approval_id"] = id
	return d, derr
}
