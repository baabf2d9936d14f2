package registry

import "github.com/caphub/caphub/audit/chain"

// ChangeRecorder makes the audit hooks that record the registry's changes
// (package audit's Log is one): a Service given one (WithRecorder) commits
// every registration and deprecation together with its events, and
// ApplyDocsRecorded does the same for documents (agents, saved servers,
// approvals).
type ChangeRecorder interface {
	// RegisteredHook returns the hook of a registration batch: one event per
	// result, of which the store appends those of the versions it creates.
	RegisteredHook(actor string, results []RegisterResult) (*chain.Hook, error)
	// DeprecatedHook returns the hook of a deprecation: one event per
	// version res.Deprecated lists.
	DeprecatedHook(actor string, req DeprecateRequest, res DeprecateResult) (*chain.Hook, error)
	// ChangeHook returns the hook of one other change: an event of kind
	// (such as "agent_applied"), by actor, about capability ("" when it is
	// about none), whose Data is data encoded as a JSON object.
	ChangeHook(kind, actor, capability string, data any) (*chain.Hook, error)
}
