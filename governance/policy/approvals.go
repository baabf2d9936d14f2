package policy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/registry"
)

// approvalKind is the registry.DocStore kind approvals are kept under; the
// key is the approval ID.
const approvalKind = "approval"

// DefaultApprovalTTL is how long a pending approval waits for a decision,
// and how long an approved one stays usable.
const DefaultApprovalTTL = 15 * time.Minute

// Approval statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusExpired  = "expired"
)

// ErrDecided marks a decision on an approval that is no longer pending.
var ErrDecided = errors.New("the approval is no longer pending")

// Approval is one call waiting for, or decided by, a human.
type Approval struct {
	ID    string `json:"id"`
	Agent string `json:"agent"` // the caller ("" when anonymous)
	URI   string `json:"uri"`   // the resolved capability URI
	// Input is the call's validated input, shown to the approver;
	// InputDigest (sha256 of its canonical JSON) binds the approval to it.
	Input       map[string]any `json:"input"`
	InputDigest string         `json:"input_digest"`
	// Rule says why the call needs approval.
	Rule      string    `json:"rule"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when a pending approval expires; Approve moves it to the
	// end of the window in which the approved call may be made.
	ExpiresAt time.Time  `json:"expires_at"`
	Status    string     `json:"status"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// UsedAt is when the approved call ran: an approval allows one call.
	UsedAt *time.Time `json:"used_at,omitempty"`
}

// Approvals keeps approvals in a registry.DocStore. Its methods are safe
// for concurrent use; decisions and uses are serialised within one
// Approvals (one process): the store has no compare-and-swap, so replicas
// sharing a database could both use one approval in the same instant.
type Approvals struct {
	docs  registry.DocStore
	audit *audit.Log
	now   func() time.Time
	ttl   time.Duration
	mu    sync.Mutex
}

// NewApprovals returns the approvals kept in docs. log, when not nil,
// records every decision with an "approval" event committed in the
// decision's own transaction (through docs.ApplyDocsAudited);
// now and ttl default to time.Now and DefaultApprovalTTL.
func NewApprovals(docs registry.DocStore, log *audit.Log, now func() time.Time, ttl time.Duration) *Approvals {
	if now == nil {
		now = time.Now
	}
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	return &Approvals{docs: docs, audit: log, now: now, ttl: ttl}
}

// digest is the sha256 of the canonical JSON of an input.
func digest(input map[string]any) (string, error) {
	if input == nil {
		input = map[string]any{}
	}
	b, err := json.Marshal(input)
	if err != nil {
		return "", fmt.Errorf("encode the input: %w", err)
	}
	if b, err = audit.Canonicalize(b); err != nil {
		return "", fmt.Errorf("canonicalize the input: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// create stores a new pending approval for a call.
func (a *Approvals) create(ctx context.Context, agentID, uri string, input map[string]any, rule string) (*Approval, error) {
	d, err := digest(input)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 12)
	rand.Read(id)
	now := a.now().UTC()
	ap := &Approval{ID: "apr_" + hex.EncodeToString(id), Agent: agentID, URI: uri, Input: input, InputDigest: d, Rule: rule,
		CreatedAt: now, ExpiresAt: now.Add(a.ttl), Status: StatusPending}
	return ap, a.put(ctx, ap)
}

func (a *Approvals) put(ctx context.Context, ap *Approval) error {
	b, err := json.Marshal(ap)
	if err != nil {
		return err
	}
	if err := a.docs.PutDoc(ctx, approvalKind, ap.ID, b); err != nil {
		return fmt.Errorf("store approval %s: %w", ap.ID, err)
	}
	return nil
}

// expire marks a pending or approved-but-unused approval past its
// ExpiresAt as expired, reporting whether it changed it.
func (a *Approvals) expire(ap *Approval) bool {
	if (ap.Status == StatusPending || ap.Status == StatusApproved && ap.UsedAt == nil) && !a.now().Before(ap.ExpiresAt) {
		ap.Status = StatusExpired
		return true
	}
	return false
}

// Get returns an approval, expired first when its time has passed; the
// error wraps registry.ErrNotFound when there is none.
func (a *Approvals) Get(ctx context.Context, id string) (*Approval, error) {
	d, err := a.docs.GetDoc(ctx, approvalKind, id)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return nil, &registry.NotFoundError{Kind: approvalKind, Name: id, Message: fmt.Sprintf("approval %q does not exist (list them with GET /v1/approvals)", id)}
		}
		return nil, fmt.Errorf("read approval %q: %w", id, err)
	}
	var ap Approval
	if err := json.Unmarshal(d.Value, &ap); err != nil {
		return nil, fmt.Errorf("stored approval %q is not valid JSON: %w", id, err)
	}
	if a.expire(&ap) {
		if err := a.put(ctx, &ap); err != nil {
			return nil, err
		}
	}
	return &ap, nil
}

// List returns the approvals with a status ("" for all), oldest first.
func (a *Approvals) List(ctx context.Context, status string) ([]*Approval, error) {
	switch status {
	case "", StatusPending, StatusApproved, StatusDenied, StatusExpired:
	default:
		return nil, fmt.Errorf("%w: approval status %q: use pending, approved, denied or expired", registry.ErrInvalid, status)
	}
	docs, err := a.docs.ListDocs(ctx, approvalKind, "")
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out := []*Approval{}
	for _, d := range docs {
		var ap Approval
		if err := json.Unmarshal(d.Value, &ap); err != nil {
			return nil, fmt.Errorf("stored approval %q is not valid JSON: %w", d.Key, err)
		}
		if a.expire(&ap) {
			if err := a.put(ctx, &ap); err != nil {
				return nil, err
			}
		}
		if status == "" || ap.Status == status {
			out = append(out, &ap)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Approve lets the call of a pending approval run once, within the
// approval TTL from now. by names who decided; reason (optional) is kept
// with the decision and in its audit event.
func (a *Approvals) Approve(ctx context.Context, id, by, reason string) (*Approval, error) {
	return a.decide(ctx, id, by, StatusApproved, reason)
}

// Deny refuses the call of a pending approval; reason is shown to the
// caller when it retries.
func (a *Approvals) Deny(ctx context.Context, id, by, reason string) (*Approval, error) {
	return a.decide(ctx, id, by, StatusDenied, reason)
}

func (a *Approvals) decide(ctx context.Context, id, by, status, reason string) (*Approval, error) {
	if by == "" {
		return nil, fmt.Errorf("%w: say who decides approval %s", registry.ErrInvalid, id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, err := a.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if ap.Status != StatusPending {
		return ap, fmt.Errorf("%w: approval %s is %s%s; only a pending approval can be approved or denied (the caller can call again to request a new one)", ErrDecided, id, ap.Status, decidedBy(ap))
	}
	now := a.now().UTC()
	ap.Status, ap.DecidedBy, ap.DecidedAt, ap.Reason = status, by, &now, reason
	if status == StatusApproved {
		ap.ExpiresAt = now.Add(a.ttl)
	}
	b, err := json.Marshal(ap)
	if err != nil {
		return nil, err
	}
	// The decision and its "approval" event commit together: a decision
	// is never in force without its record.
	var rec registry.ChangeRecorder
	if a.audit != nil {
		rec = a.audit
	}
	data := map[string]any{"approval_id": id, "decision": status, "agent": ap.Agent, "input_digest": ap.InputDigest}
	if reason != "" {
		data["reason"] = reason
	}
	ops := []registry.DocOp{{Kind: approvalKind, Key: ap.ID, Value: b}}
	if err := registry.ApplyDocsRecorded(ctx, a.docs, rec, ops, audit.KindApproval, by, ap.URI, data); err != nil {
		return nil, fmt.Errorf("store the decision on approval %s: %w", id, err)
	}
	return ap, nil
}

func decidedBy(ap *Approval) string {
	if ap.DecidedBy == "" {
		return ""
	}
	s := " (decided by " + ap.DecidedBy
	if ap.Reason != "" {
		s += ": " + ap.Reason
	}
	return s + ")"
}

// use marks an approved approval used, under the lock, so that it lets
// one call through. It returns the approval as it was found.
func (a *Approvals) use(ctx context.Context, id string, check func(*Approval) error) (*Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, err := a.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := check(ap); err != nil {
		return ap, err
	}
	now := a.now().UTC()
	ap.UsedAt = &now
	return ap, a.put(ctx, ap)
}
