package invoke

import "context"

// The HTTP headers of an invocation, on every transport that carries one
// over HTTP (REST /v1/invoke, MCP, the fronted MCP servers, the client).
const (
	// CallerHeader names the agent on whose behalf a call runs.
	CallerHeader = "X-Caphub-Agent"
	// ApprovalHeader carries the id of the approval a call is retried with.
	ApprovalHeader = "X-Caphub-Approval"
)

// approvalKey carries the approval ID a call is retried with.
type approvalKey struct{}

// WithApproval returns ctx carrying the ID of a human approval the call is
// retried with (the REST header X-Caphub-Approval, the MCP _meta
// dev.caphub/approval, the CLI's --approval), for the policy hook to
// check. An empty id leaves ctx as it is.
func WithApproval(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, approvalKey{}, id)
}

// ApprovalFrom returns the approval ID WithApproval put in ctx, or "".
func ApprovalFrom(ctx context.Context) string {
	id, _ := ctx.Value(approvalKey{}).(string)
	return id
}

// credentialKey carries who authenticated a call.
type credentialKey struct{}

// WithCredential returns ctx carrying who authenticated the request (a
// token's actor, "token:NAME"), recorded beside the caller (the agent it
// acts as) in the invocation record.
func WithCredential(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, credentialKey{}, who)
}

// CredentialFrom returns what WithCredential put in ctx, or "".
func CredentialFrom(ctx context.Context) string {
	c, _ := ctx.Value(credentialKey{}).(string)
	return c
}
