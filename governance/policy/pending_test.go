package policy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/invoke"
)

// The same call again gives the pending approval it already has; past the
// caller's cap a new call is refused (TOO_MANY_APPROVALS) until one is
// decided or expires; other callers are not affected.
func TestPendingApprovalsDeduplicatedAndCapped(t *testing.T) {
	e := newEnv(t, policy.Options{ApprovalRequired: true, MaxPendingApprovals: 3, ApprovalTTL: time.Minute})
	ctx := context.Background()
	in := func(i int) map[string]any { return map[string]any{"n": i} }

	// Concurrent identical calls share one approval.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.call(ctx, "a", "plain", in(0))
			if ie, ok := err.(*invoke.Error); ok {
				ids[i], _ = ie.Details["approval_id"].(string)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("identical calls got approvals %v, want one", ids)
		}
	}
	// Another input, URI or caller is another approval.
	_, err := e.call(ctx, "a", "plain", in(1))
	if id := approvalID(t, err); id == ids[0] {
		t.Error("another input shared the approval")
	}
	_, err = e.call(ctx, "a", "wipe", in(0))
	approvalID(t, err)
	// The cap (3) is reached: a fourth distinct call is refused, saying why
	// and what to do; a repeated one still gets its approval.
	_, err = e.call(ctx, "a", "plain", in(2))
	ie := invErr(t, err, invoke.CodeTooManyApprovals, `caller "a" already has 3 pending approvals`, "(3)", "decided", "expire")
	if !ie.Retryable || ie.Details["limit"] != 3 {
		t.Errorf("refusal: retryable %v, details %v", ie.Retryable, ie.Details)
	}
	if _, err := e.call(ctx, "a", "plain", in(0)); approvalID(t, err) != ids[0] {
		t.Error("a repeated call lost its approval at the cap")
	}
	_, err = e.call(ctx, "b", "plain", in(2))
	approvalID(t, err, "needs human approval")
	if n := countPending(t, e, "a"); n != 3 {
		t.Errorf("%d pending approvals for a, want 3", n)
	}
	// A decision makes room; so does expiry.
	if _, err := e.engine.Approvals().Deny(ctx, ids[0], "alice", ""); err != nil {
		t.Fatal(err)
	}
	_, err = e.call(ctx, "a", "plain", in(2))
	approvalID(t, err)
	e.clock.add(time.Minute)
	for i := range 3 {
		_, err = e.call(ctx, "a", "plain", in(10+i))
		approvalID(t, err)
	}
	if _, err := e.call(ctx, "a", "plain", in(20)); err == nil || err.(*invoke.Error).Code != invoke.CodeTooManyApprovals {
		t.Errorf("past the cap after expiry: %v", err)
	}
}

// A negative MaxPendingApprovals lifts the cap; zero is the default.
func TestPendingApprovalsUnlimited(t *testing.T) {
	e := newEnv(t, policy.Options{ApprovalRequired: true, MaxPendingApprovals: -1})
	for i := range policy.DefaultMaxPendingApprovals + 1 {
		_, err := e.call(context.Background(), "a", "plain", map[string]any{"n": fmt.Sprint(i)})
		approvalID(t, err)
	}
}

func countPending(t *testing.T, e *env, agent string) int {
	t.Helper()
	all, err := e.engine.Approvals().List(context.Background(), policy.StatusPending)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ap := range all {
		if ap.Agent == agent {
			n++
		}
	}
	return n
}
