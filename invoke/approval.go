package invoke

import "context"

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
