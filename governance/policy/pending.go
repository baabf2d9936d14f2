package policy

import (
	"context"
	"errors"
	"fmt"
)

// DefaultMaxPendingApprovals is how many pending approvals one caller may
// have at once unless Options.MaxPendingApprovals says otherwise: enough
// for a human to work through, few enough that a caller cannot flood the
// approvers (and the store) with requests.
const DefaultMaxPendingApprovals = 100

// ErrTooManyPending marks a new approval refused because the caller has
// reached its cap of pending approvals.
var ErrTooManyPending = errors.New("too many pending approvals")

// request returns the approval a call waits for: the caller's pending
// approval for the same URI and input when there is one (so that repeating
// a call does not pile up approvals), else a new one. A caller that already
// has max pending approvals (max > 0) gets an error wrapping
// ErrTooManyPending instead. The lookup and the creation are serialised
// within this Approvals, so concurrent identical calls share one approval.
func (a *Approvals) request(ctx context.Context, agentID, uri string, input map[string]any, rule string, max int) (*Approval, error) {
	d, err := digest(input)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pending, err := a.List(ctx, StatusPending)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, ap := range pending {
		if ap.Agent != agentID {
			continue
		}
		if ap.URI == uri && ap.InputDigest == d {
			return ap, nil
		}
		n++
	}
	if max > 0 && n >= max {
		who := fmt.Sprintf("caller %q already has", agentID)
		if agentID == "" {
			who = "anonymous callers already have"
		}
		return nil, fmt.Errorf("%w: %s %d pending approvals, the most allowed (%d): no new approval is requested until some are decided (POST /v1/approvals/{id}/approve|deny) or expire; list them with GET /v1/approvals?status=pending",
			ErrTooManyPending, who, n, max)
	}
	return a.create(ctx, agentID, uri, input, rule)
}
