// Package identity carries who a request or command acts for, set once in
// its context at the edge (the auth middleware when tokens are enforced,
// else FromRequest for REST and MCP requests; the CLI for local commands)
// and read downstream with From: the invocation pipeline's records, the
// policy engine, the audit actor of registry, agent and server changes.
package identity

import (
	"context"
	"net/http"
)

// Header is the HTTP header naming the agent a request acts as: the REST
// client sends it, and FromRequest reads it when no token authenticated
// the request (with one, the auth middleware checks the claim).
const Header = "X-Caphub-Agent"

// Caller is who a call or change acts for.
type Caller struct {
	// Agent is the agent the call acts as, "" when anonymous: the caller of
	// invocation records, the subject of policies, the namespace of state.
	Agent string
	// Actor is who changes are recorded as made by in the audit chain: a
	// token ("token:NAME"), the agent a request names, "rest:ADDR", a local
	// user, "caphub". From gives "anonymous" when none was set.
	Actor string
	// Credential is who authenticated the request ("token:NAME"), "" when
	// no token did.
	Credential string
	// Approval is the ID of the human approval a call is retried with (the
	// REST header X-Caphub-Approval, the MCP _meta dev.caphub/approval, the
	// CLI's --approval), for the policy engine to check.
	Approval string
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the caller ctx carries; its Actor is "anonymous" when none
// was set.
func From(ctx context.Context) Caller {
	c, _ := ctx.Value(key{}).(Caller)
	if c.Actor == "" {
		c.Actor = "anonymous"
	}
	return c
}

// WithApproval returns ctx carrying its caller retried with approval id
// (an empty id leaves ctx as it is).
func WithApproval(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	c, _ := ctx.Value(key{}).(Caller)
	c.Approval = id
	return With(ctx, c)
}

// FromRequest returns r with its caller in the context: the one the auth
// middleware set when a token authenticated r, else the agent r's Header
// names, which is also the actor of its changes (fallbackActor when it
// names none).
func FromRequest(r *http.Request, fallbackActor string) *http.Request {
	if c, _ := r.Context().Value(key{}).(Caller); c.Credential != "" {
		return r
	}
	agent := r.Header.Get(Header)
	actor := agent
	if actor == "" {
		actor = fallbackActor
	}
	return r.WithContext(With(r.Context(), Caller{Agent: agent, Actor: actor}))
}
