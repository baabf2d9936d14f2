package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/problem"
	"github.com/caphub/caphub/invoke"
)

// ApprovalHeader carries the ID of the approval a call is retried with
// (POST /v1/invoke after an APPROVAL_REQUIRED answer was approved).
const ApprovalHeader = invoke.ApprovalHeader

// withCaller returns r with its caller in the context, set once for
// everything the request reaches: the token's (set by the auth middleware),
// else the agent its X-Caphub-Agent header names, the actor of its changes
// being that agent or else the remote address ("rest:ADDR"); retried with
// the approval its X-Caphub-Approval header names, for the policy engine
// to honour when the call is checked.
func withCaller(r *http.Request) *http.Request {
	r = identity.FromRequest(r, "rest:"+r.RemoteAddr)
	return r.WithContext(identity.WithApproval(r.Context(), r.Header.Get(ApprovalHeader)))
}

// ApprovalList is the answer of GET /v1/approvals: a page of approvals.
type ApprovalList struct {
	Items      []*policy.Approval `json:"items"`
	Total      int                `json:"total"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// ApprovalDecision is the optional body of POST /v1/approvals/{id}/approve
// and /deny: why, kept with the decision and in the audit chain.
type ApprovalDecision struct {
	Reason string `json:"reason"`
}

// approvalRoutes are the human-approval endpoints: list and read approvals
// and decide pending ones. The decider is the request's actor
// (X-Caphub-Agent, else the remote address). None when a is nil.
func (s *Server) approvalRoutes(a *policy.Approvals) []route {
	if a == nil {
		return nil
	}
	h := approvalHandlers{s: s, a: a}
	id := []param{{name: "id", in: "path", required: true, desc: "approval id (details.approval_id of an APPROVAL_REQUIRED answer)"}}
	return []route{
		{method: "GET", path: "/v1/approvals", scope: auth.ScopeAdmin, summary: "List approvals, oldest first, a page at a time", params: append([]param{{name: "status", in: "query", desc: "pending, approved, denied or expired (default: all)"}}, pageParams...),
			handler: h.list, responses: map[int]string{200: "items, total and next_cursor", 400: "unknown status; " + pageRefused}},
		{method: "GET", path: "/v1/approvals/{id}", scope: auth.ScopeAdmin, summary: "An approval: caller, capability, input, status, decision", params: id, handler: h.get, responses: map[int]string{200: "approval", 404: "no such approval"}},
		{method: "POST", path: "/v1/approvals/{id}/approve", scope: auth.ScopeAdmin, summary: "Approve a pending call: the caller may then run it once, retrying with header X-Caphub-Approval: {id}", params: id, body: "{\"reason\": \"...\"} (optional)",
			handler: h.approve, responses: map[int]string{200: "approval", 404: "no such approval", 409: "not pending (decided or expired)"}},
		{method: "POST", path: "/v1/approvals/{id}/deny", scope: auth.ScopeAdmin, summary: "Deny a pending call", params: id, body: "{\"reason\": \"...\"} (optional)",
			handler: h.deny, responses: map[int]string{200: "approval", 404: "no such approval", 409: "not pending (decided or expired)"}},
	}
}

type approvalHandlers struct {
	s *Server
	a *policy.Approvals
}

func (h approvalHandlers) list(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	items, err := h.a.List(r.Context(), r.URL.Query().Get("status"))
	if err != nil {
		return err
	}
	// Oldest first, as List orders them; the ID breaks ties.
	key := func(ap *policy.Approval) string { return ap.CreatedAt.UTC().Format(sortableTime) + "\x00" + ap.ID }
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	page, next, err := pageOf(items, key, "approvals", limit, cursor)
	if err != nil {
		return err
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, ApprovalList{Items: page, Total: len(items), NextCursor: next}, h.s.log)
	return nil
}

// sortableTime is a fixed-width time layout whose byte order is time order.
const sortableTime = "2006-01-02T15:04:05.000000000Z"

func (h approvalHandlers) get(w http.ResponseWriter, r *http.Request) error {
	ap, err := h.a.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ap, h.s.log)
	return nil
}

func (h approvalHandlers) approve(w http.ResponseWriter, r *http.Request) error {
	reason, err := decisionReason(r)
	if err != nil {
		return err
	}
	ap, err := h.a.Approve(r.Context(), r.PathValue("id"), decider(r), reason)
	return h.decided(w, r, ap, err)
}

func (h approvalHandlers) deny(w http.ResponseWriter, r *http.Request) error {
	reason, err := decisionReason(r)
	if err != nil {
		return err
	}
	ap, err := h.a.Deny(r.Context(), r.PathValue("id"), decider(r), reason)
	return h.decided(w, r, ap, err)
}

// maxDecisionReason bounds a decision's reason (bytes).
const maxDecisionReason = 2000

// decisionReason reads the optional ApprovalDecision body.
func decisionReason(r *http.Request) (string, error) {
	var body ApprovalDecision
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return "", err
		}
	}
	if len(body.Reason) > maxDecisionReason {
		return "", badRequest(fmt.Sprintf("reason: %d bytes, over the %d allowed; say it shorter", len(body.Reason), maxDecisionReason))
	}
	return body.Reason, nil
}

// decided answers a decision: the approval, or 409 when it was not pending.
func (h approvalHandlers) decided(w http.ResponseWriter, r *http.Request, ap *policy.Approval, err error) error {
	if errors.Is(err, policy.ErrDecided) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&Problem{Type: problem.Base + "approval-decided", Title: "The approval is not pending", Status: http.StatusConflict,
			Detail: err.Error(), Instance: r.URL.Path}); err != nil {
			h.s.log.Debug("write problem", "err", err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ap, h.s.log)
	return nil
}

// decider names who decides: the request's actor (see withCaller).
func decider(r *http.Request) string { return identity.From(r.Context()).Actor }
