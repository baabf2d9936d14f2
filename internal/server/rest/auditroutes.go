package rest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
)

// The audit chain's routes. Both need admin, as the approvals do: events
// carry every caller's inputs and outcomes.

func (s *Server) auditRoutes() []route {
	timeSchema := map[string]any{"type": "string", "format": "date-time"}
	params := []param{
		{name: "kind", in: "query", desc: "events of one kind: registered, deprecated, policy_decision, approval, invocation, token_created, policy_set, …"},
		{name: "actor", in: "query", desc: "events of one actor, exactly (token:ci-bot, an agent id, caphub)"},
		{name: "capability", in: "query", desc: "events about a capability URI; without @version, about any version of it"},
		{name: "since", in: "query", desc: "events at or after this time (RFC 3339)", schema: timeSchema},
		{name: "until", in: "query", desc: "events before this time (RFC 3339): since and until make a half-open window", schema: timeSchema},
		{name: "after_seq", in: "query", desc: "events after this sequence number (an alternative to cursor)", schema: map[string]any{"type": "integer", "minimum": 0}},
	}
	params = append(params, pageParams...)
	return []route{
		{method: "GET", path: "/v1/audit", scope: auth.ScopeAdmin, summary: "List audit events, oldest first, a page at a time (no total: the chain may be long)", params: params, handler: s.listAudit,
			responses: map[int]string{200: "items, next_cursor and head_seq (the chain's last event: after_seq=head_seq-N lists the newest N)", 400: "a malformed time or sequence number; " + pageRefused}},
		{method: "GET", path: "/v1/audit/verify", scope: auth.ScopeAdmin, summary: "Verify the whole audit chain (from its first event, or from the checkpoint of the last prune) and that every stored version has its registration event",
			handler: s.verifyAudit, responses: map[int]string{200: "the result: ok, count, from_seq, from_hash, head_seq, head_hash, checkpoint, break (the first broken link), registrations; ok false when the chain is broken or versions lack their event"}},
	}
}

// AuditList is the answer of GET /v1/audit: a page of events.
type AuditList struct {
	Items      []chain.Event `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
	// HeadSeq is the chain's last event (0 when empty), so that a reader
	// can start from the newest: after_seq=HeadSeq-N lists the last N.
	HeadSeq int64 `json:"head_seq"`
}

// auditCursorKind tells the audit list's cursors apart from other lists'.
const auditCursorKind = "audit"

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	f, err := auditFilterFrom(r)
	if err != nil {
		return err
	}
	limit := f.Limit
	f.Limit = limit + 1 // one more tells whether a next page exists
	events, err := s.admin.audit.List(r.Context(), f)
	if err != nil {
		return err
	}
	state, err := s.svc.Store().AuditState(r.Context())
	if err != nil {
		return err
	}
	out := AuditList{Items: events}
	if state.Last != nil {
		out.HeadSeq = state.Last.Seq
	}
	if len(events) > limit {
		out.Items = events[:limit]
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(auditCursorKind + "\x00" + strconv.FormatInt(out.Items[limit-1].Seq, 10)))
	}
	setNextLink(w, r, out.NextCursor)
	writeJSON(w, http.StatusOK, out, s.log)
	return nil
}

// auditFilterFrom reads the filter and page of GET /v1/audit.
func auditFilterFrom(r *http.Request) (chain.Filter, error) {
	q := r.URL.Query()
	f := chain.Filter{Kind: q.Get("kind"), Actor: q.Get("actor"), Capability: q.Get("capability")}
	var err error
	if f.Limit, err = pageLimit(q); err != nil {
		return f, err
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(t.name)
		if v == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return f, badRequest(fmt.Sprintf("%s=%q: give an RFC 3339 time such as 2026-06-01T12:00:00Z", t.name, v))
		}
	}
	if v := q.Get("after_seq"); v != "" {
		if f.AfterSeq, err = strconv.ParseInt(v, 10, 64); err != nil || f.AfterSeq < 0 {
			return f, badRequest(fmt.Sprintf("after_seq=%q: give a sequence number, 0 or more", v))
		}
	}
	if c := q.Get("cursor"); c != "" {
		seq, ok := auditCursor(c)
		if !ok {
			return f, fmt.Errorf("%w: cursor %q was not made by the audit list: start again without it", registry.ErrInvalidCursor, c)
		}
		f.AfterSeq = max(f.AfterSeq, seq)
	}
	return f, nil
}

// auditCursor reads a cursor of the audit list: the last event's Seq.
func auditCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	kind, seq, ok := strings.Cut(string(b), "\x00")
	if !ok || kind != auditCursorKind {
		return 0, false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	return n, err == nil && n >= 0
}

// AuditVerify is the answer of GET /v1/audit/verify: what caphub audit
// verify prints, with its text (message) beside the fields.
type AuditVerify struct {
	*audit.VerifyResult
	Message string `json:"message"`
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) error {
	res, err := s.admin.audit.Verify(r.Context())
	if err != nil {
		return err
	}
	regs, err := s.admin.audit.CheckRegistrations(r.Context(), s.svc.Store())
	if err != nil {
		return err
	}
	res.AddRegistrations(regs)
	writeJSON(w, http.StatusOK, AuditVerify{VerifyResult: res, Message: res.String()}, s.log)
	return nil
}
