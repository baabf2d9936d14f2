package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/auth"
)

// The administration endpoints of a server: policies, API tokens, the
// audit chain, approvals and agents. Each group is a view of the Client
// whose methods have the signatures of the local type they stand for
// (policy.Policies, auth.Tokens, audit.Log, policy.Approvals,
// agent.Agents), so that the CLI runs one code path against either.

// Token is an API token's record, never its secret.
type Token = auth.Token

// Scope is a permission a token grants: read, publish, invoke or admin.
type Scope = auth.Scope

// Policies is the server's policies (/v1/policies).
type Policies struct{ c *Client }

// Policies returns the server's policies.
func (c *Client) Policies() *Policies { return &Policies{c} }

func policyPath(agentID string) string { return "/v1/policies/" + url.PathEscape(agentID) }

// Put creates or replaces the policy of p.Agent (admin).
func (p *Policies) Put(ctx context.Context, pol policy.Policy) error {
	_, err := p.c.do(ctx, http.MethodPut, policyPath(pol.Agent), pol, nil)
	return err
}

// Get returns the policy stored under agentID (read); the error wraps
// registry.ErrNotFound when there is none.
func (p *Policies) Get(ctx context.Context, agentID string) (*policy.Policy, error) {
	var pol policy.Policy
	if _, err := p.c.do(ctx, http.MethodGet, policyPath(agentID), nil, &pol); err != nil {
		return nil, err
	}
	return &pol, nil
}

// List returns every policy, by agent, page after page (read).
func (p *Policies) List(ctx context.Context) ([]*policy.Policy, error) {
	items, _, _, err := pagesOf[*policy.Policy](ctx, p.c, "/v1/policies", url.Values{}, 0, nil)
	return items, err
}

// Delete removes the policy of agentID (admin).
func (p *Policies) Delete(ctx context.Context, agentID string) error {
	_, err := p.c.do(ctx, http.MethodDelete, policyPath(agentID), nil, nil)
	return err
}

// Tokens is the server's API tokens (/v1/tokens; admin).
type Tokens struct{ c *Client }

// Tokens returns the server's API tokens.
func (c *Client) Tokens() *Tokens { return &Tokens{c} }

// CreateForAgent creates a token, bound to agentID unless it is "", valid
// for ttl (0: no expiry), and returns it with its secret, which the server
// shows this once. The client's own token must have every scope asked for.
func (t *Tokens) CreateForAgent(ctx context.Context, name string, scopes []Scope, ttl time.Duration, agentID string) (*Token, string, error) {
	body := map[string]any{"name": name, "scopes": scopes}
	if ttl > 0 {
		body["expires_in"] = ttl.String()
	}
	if agentID != "" {
		body["agent"] = agentID
	}
	var out struct {
		Token
		Secret string `json:"token"`
	}
	if _, err := t.c.do(ctx, http.MethodPost, "/v1/tokens", body, &out); err != nil {
		return nil, "", err
	}
	return &out.Token, out.Secret, nil
}

// List returns every token (never a secret), by id, page after page.
func (t *Tokens) List(ctx context.Context) ([]Token, error) {
	items, _, _, err := pagesOf[Token](ctx, t.c, "/v1/tokens", url.Values{}, 0, nil)
	return items, err
}

// Revoke revokes the token with id.
func (t *Tokens) Revoke(ctx context.Context, id string) (*Token, error) {
	var tok Token
	if _, err := t.c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// Audit is the server's audit chain (/v1/audit; admin).
type Audit struct{ c *Client }

// Audit returns the server's audit chain.
func (c *Client) Audit() *Audit { return &Audit{c} }

// List returns one page of the events f selects, in ascending Seq: f.Limit
// of them (the server's default page when 0; at most its maximum page,
// 1000), after f.AfterSeq. f.Capabilities is not sent: no endpoint takes
// it, and a filter with it is refused.
func (a *Audit) List(ctx context.Context, f chain.Filter) ([]chain.Event, error) {
	if len(f.Capabilities) > 0 {
		return nil, fmt.Errorf("the audit list of a server filters by one capability, not by a list of %d", len(f.Capabilities))
	}
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("kind", f.Kind)
	set("actor", f.Actor)
	set("capability", f.Capability)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.AfterSeq > 0 {
		q.Set("after_seq", strconv.FormatInt(f.AfterSeq, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Items []chain.Event `json:"items"`
	}
	_, err := a.c.do(ctx, http.MethodGet, "/v1/audit?"+q.Encode(), nil, &out)
	return out.Items, err
}

// Verify verifies the server's whole chain and its registrations, as
// audit.Log.Verify followed by CheckRegistrations does (see
// VerifyResult.AddRegistrations).
func (a *Audit) Verify(ctx context.Context) (*audit.VerifyResult, error) {
	var res audit.VerifyResult
	if _, err := a.c.do(ctx, http.MethodGet, "/v1/audit/verify", nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Approvals is the server's approvals (/v1/approvals; admin).
type Approvals struct{ c *Client }

// Approvals returns the server's approvals.
func (c *Client) Approvals() *Approvals { return &Approvals{c} }

// List returns the approvals of a status ("" for all), oldest first.
func (a *Approvals) List(ctx context.Context, status string) ([]*policy.Approval, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	items, _, _, err := pagesOf[*policy.Approval](ctx, a.c, "/v1/approvals", q, 0, nil)
	return items, err
}

func approvalPath(id, verb string) string { return "/v1/approvals/" + url.PathEscape(id) + "/" + verb }

// Approve approves a pending call, for reason (optional). The server
// records the decision as made by the client's token (token:NAME); by is
// not sent.
func (a *Approvals) Approve(ctx context.Context, id, _, reason string) (*policy.Approval, error) {
	var ap policy.Approval
	if _, err := a.c.do(ctx, http.MethodPost, approvalPath(id, "approve"), map[string]string{"reason": reason}, &ap); err != nil {
		return nil, err
	}
	return &ap, nil
}

// Deny denies a pending call, for reason; as Approve, the decider is the
// client's token.
func (a *Approvals) Deny(ctx context.Context, id, _, reason string) (*policy.Approval, error) {
	var ap policy.Approval
	if _, err := a.c.do(ctx, http.MethodPost, approvalPath(id, "deny"), map[string]string{"reason": reason}, &ap); err != nil {
		return nil, err
	}
	return &ap, nil
}

// Agents is the server's agents (/v1/agents).
type Agents struct{ c *Client }

// Agents returns the server's agents.
func (c *Client) Agents() *Agents { return &Agents{c} }

func agentPath(id string) string { return "/v1/agents/" + url.PathEscape(id) }

// ApplyManifest creates or replaces the agent id from its OSSA manifest,
// sent as read from its file, YAML or JSON (publish; admin when it gives a
// capability a cli binding). The server checks it: a refusal is a
// *ProblemError whose issues give lines and columns in the manifest.
func (a *Agents) ApplyManifest(ctx context.Context, id string, manifest []byte) (*agent.Agent, error) {
	var ag agent.Agent
	if _, err := a.c.do(ctx, http.MethodPut, agentPath(id), rawBody{contentType: "application/yaml", data: manifest}, &ag); err != nil {
		return nil, err
	}
	return &ag, nil
}

// rawBody is a request body sent as it is, with its content type (a
// document read from a file), rather than encoded as JSON.
type rawBody struct {
	contentType string
	data        []byte
}

// Get returns an agent.
func (a *Agents) Get(ctx context.Context, id string) (*agent.Agent, error) {
	var ag agent.Agent
	if _, err := a.c.do(ctx, http.MethodGet, agentPath(id), nil, &ag); err != nil {
		return nil, err
	}
	return &ag, nil
}

// List returns every agent, by id, page after page.
func (a *Agents) List(ctx context.Context) ([]*agent.Agent, error) {
	items, _, _, err := pagesOf[*agent.Agent](ctx, a.c, "/v1/agents", url.Values{}, 0, nil)
	return items, err
}

// Delete deletes an agent (publish).
func (a *Agents) Delete(ctx context.Context, id string) error {
	_, err := a.c.do(ctx, http.MethodDelete, agentPath(id), nil, nil)
	return err
}

// Config returns the AgentConfig the agent composes to; capabilities that
// cannot be applied are a *ProblemError whose issues name them.
func (a *Agents) Config(ctx context.Context, id string) (*agent.AgentConfig, error) {
	var cfg agent.AgentConfig
	if _, err := a.c.do(ctx, http.MethodGet, agentPath(id)+"/config", nil, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}
