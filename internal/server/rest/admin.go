package rest

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
)

// The administration routes: policies, API tokens and the audit chain
// (auditroutes.go), so that every command of the CLI works against a
// server. Each change goes through the package that owns it (policy.Policies,
// auth.Tokens), which commits it with its audit event in one transaction.

// adminParts are what the administration routes serve; nil: not served.
type adminParts struct {
	policies *policy.Policies
	tokens   *auth.Tokens
	audit    *audit.Log
}

// WithPolicies serves the policies under /v1/policies: read to list and
// show, admin to set and delete. Give the policy engine's own
// (policy.Engine.Policies), so that a change governs the next call at once.
func WithPolicies(p *policy.Policies) Option { return func(s *Server) { s.admin.policies = p } }

// WithTokens serves the API tokens under /v1/tokens (admin only).
func WithTokens(t *auth.Tokens) Option { return func(s *Server) { s.admin.tokens = t } }

// WithAudit serves the audit chain under /v1/audit (admin only): list its
// events and verify it.
func WithAudit(l *audit.Log) Option { return func(s *Server) { s.admin.audit = l } }

// adminRoutes are the routes of the options above that were given.
func (s *Server) adminRoutes() []route {
	var routes []route
	if s.admin.policies != nil {
		routes = append(routes, s.policyRoutes()...)
	}
	if s.admin.tokens != nil {
		routes = append(routes, s.tokenRoutes()...)
	}
	if s.admin.audit != nil {
		routes = append(routes, s.auditRoutes()...)
	}
	return routes
}

var policyAgentParam = []param{{name: "agent", in: "path", required: true, desc: "the agent id the policy governs, or * for the default policy"}}

func (s *Server) policyRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/policies", scope: auth.ScopeRead, summary: "List the policies, by agent (the default policy * first), a page at a time", params: pageParams, handler: s.listPolicies,
			responses: map[int]string{200: "items, total and next_cursor", 400: pageRefused}},
		{method: "GET", path: "/v1/policies/{agent}", scope: auth.ScopeRead, summary: "An agent's own policy (* the default policy)", params: policyAgentParam, handler: s.getPolicy,
			responses: map[int]string{200: "policy", 404: "the agent has no policy of its own"}},
		{method: "PUT", path: "/v1/policies/{agent}", scope: auth.ScopeAdmin, summary: "Create or replace an agent's policy (JSON, or YAML with Content-Type application/yaml); a list left out grants nothing", params: policyAgentParam, yaml: true,
			body: "policy: granted_permissions, allowed_effects, min_trust_tier, require_approval (agent optional, as in the path)", handler: s.putPolicy,
			responses: map[int]string{200: "policy set", 400: "unreadable, oversized or invalid policy, or its agent differs from the path"}},
		{method: "DELETE", path: "/v1/policies/{agent}", scope: auth.ScopeAdmin, summary: "Delete an agent's policy (the default policy then governs it)", params: policyAgentParam, handler: s.deletePolicy,
			responses: map[int]string{204: "deleted", 404: "the agent has no policy of its own"}},
	}
}

// PolicyList is the answer of GET /v1/policies: a page of policies.
type PolicyList struct {
	Items      []*policy.Policy `json:"items"`
	Total      int              `json:"total"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	all, err := s.admin.policies.List(r.Context())
	if err != nil {
		return err
	}
	page, next, err := pageOf(all, func(p *policy.Policy) string { return p.Agent }, "policies", limit, cursor)
	if err != nil {
		return err
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, PolicyList{Items: page, Total: len(all), NextCursor: next}, s.log)
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := s.admin.policies.Get(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p, s.log)
	return nil
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	agentID := r.PathValue("agent")
	body, err := readSmallBody(r, policy.MaxDocumentSize, "policy")
	if err != nil {
		return err
	}
	p, err := policy.Read("request body", body)
	if err != nil {
		return badRequest(err.Error())
	}
	if p.Agent != "" && p.Agent != agentID {
		return badRequest(fmt.Sprintf("the policy's agent is %q but the path names %q: PUT it to /v1/policies/%s, or leave agent out", p.Agent, agentID, url.PathEscape(p.Agent)))
	}
	p.Agent = agentID
	if err := p.Validate(); err != nil {
		return badRequest(err.Error())
	}
	if err := s.admin.policies.Put(r.Context(), *p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p, s.log)
	return nil
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request) error {
	agentID := r.PathValue("agent")
	if err := s.admin.policies.Delete(r.Context(), agentID); err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return fmt.Errorf("agent %q has no policy of its own (GET /v1/policies lists them): %w", agentID, registry.ErrNotFound)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readSmallBody reads the body of a route that takes a small document
// (what names it), JSON or YAML, refusing one over max bytes and other
// content types (400, as the other routes refuse an oversized body).
func readSmallBody(r *http.Request, max int64, what string) ([]byte, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "", "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
	default:
		return nil, badRequest(fmt.Sprintf("Content-Type %q: send the %s as application/json or application/yaml", ct, what))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, badRequest(fmt.Sprintf("cannot read the request body: %v", err))
	}
	if int64(len(body)) > max {
		return nil, badRequest(fmt.Sprintf("the request body is larger than a %s may be (%d bytes at most)", what, max))
	}
	return body, nil
}

// maxTokenRequest bounds the body of POST /v1/tokens.
const maxTokenRequest = 16 << 10

func (s *Server) tokenRoutes() []route {
	id := []param{{name: "id", in: "path", required: true, desc: "token id (GET /v1/tokens lists them)"}}
	return []route{
		{method: "GET", path: "/v1/tokens", scope: auth.ScopeAdmin, summary: "List the API tokens by id, with their state (active, expired, revoked), never their secrets, a page at a time", params: pageParams, handler: s.listTokens,
			responses: map[int]string{200: "items, total and next_cursor", 400: pageRefused}},
		{method: "POST", path: "/v1/tokens", scope: auth.ScopeAdmin, summary: "Create a token: the answer carries its secret (token) once, never again; it may grant only scopes the caller's own token has", handler: s.createToken,
			body:      `{"name": "ci-bot", "scopes": ["read", "invoke"], "expires_in": "720h" (optional, none by default), "agent": "ID" (optional: bind it to one agent)}`,
			responses: map[int]string{201: "the token with its secret in token", 400: "invalid name, scope, expiry or agent, or an active token has the name", 403: "a scope the caller's token lacks"}},
		{method: "DELETE", path: "/v1/tokens/{id}", scope: auth.ScopeAdmin, summary: "Revoke a token: it stops authenticating at once (the record is kept for the audit trail)", params: id, handler: s.revokeToken,
			responses: map[int]string{200: "the revoked token", 404: "no such token"}},
	}
}

// TokenInfo is a token's record and its state now, never its secret.
type TokenInfo struct {
	auth.Token
	State string `json:"state"`
}

// TokenList is the answer of GET /v1/tokens: a page of tokens.
type TokenList struct {
	Items      []TokenInfo `json:"items"`
	Total      int         `json:"total"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// CreateToken is the body of POST /v1/tokens.
type CreateToken struct {
	Name   string       `json:"name"`
	Scopes []auth.Scope `json:"scopes"`
	// ExpiresIn is the token's lifetime, a Go duration ("720h"); "" for
	// none.
	ExpiresIn string `json:"expires_in,omitempty"`
	// Agent binds the token to one agent (auth.Token.Agent).
	Agent string `json:"agent,omitempty"`
}

// CreatedToken is the answer of POST /v1/tokens: the token and, once, its
// secret.
type CreatedToken struct {
	auth.Token
	Secret string `json:"token"`
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	all, err := s.admin.tokens.List(r.Context()) // by id
	if err != nil {
		return err
	}
	page, next, err := pageOf(all, func(t auth.Token) string { return t.ID }, "tokens", limit, cursor)
	if err != nil {
		return err
	}
	now := time.Now()
	items := make([]TokenInfo, len(page))
	for i, t := range page {
		items[i] = TokenInfo{Token: t, State: t.State(now)}
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, TokenList{Items: items, Total: len(all), NextCursor: next}, s.log)
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req CreateToken
	r.Body = http.MaxBytesReader(nil, r.Body, maxTokenRequest)
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var ttl time.Duration
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			return badRequest(fmt.Sprintf("expires_in %q: give a positive duration such as \"720h\", or leave it out for no expiry", req.ExpiresIn))
		}
		ttl = d
	}
	if err := mayGrant(r, req); err != nil {
		return err
	}
	tok, secret, err := s.admin.tokens.CreateForAgent(r.Context(), req.Name, req.Scopes, ttl, req.Agent)
	if err != nil {
		return err // a refusal wraps registry.ErrInvalid: 400
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/v1/tokens/"+tok.ID)
	writeJSON(w, http.StatusCreated, CreatedToken{Token: *tok, Secret: secret}, s.log)
	return nil
}

// mayGrant refuses a token that would grant a scope the caller's own token
// lacks. The route needs admin, which grants every scope: this keeps the
// rule should the route's scope ever be lowered.
func mayGrant(r *http.Request, req CreateToken) error {
	for _, sc := range req.Scopes {
		p, err := auth.ParseScope(string(sc))
		if err != nil {
			return badRequest("scopes: " + err.Error())
		}
		if !auth.Grants(r.Context(), p) {
			return &scopeError{scope: string(p), detail: fmt.Sprintf("the new token would grant scope %q, which the caller's token lacks: a token may grant only scopes its creator has", p)}
		}
	}
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	tok, err := s.admin.tokens.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TokenInfo{Token: *tok, State: tok.State(time.Now())}, s.log)
	return nil
}
