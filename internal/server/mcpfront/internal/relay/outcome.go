package relay

import (
	"fmt"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Outcome is how a relayed request ended, as a relay saw it. The zero
// Outcome is a success.
type Outcome struct {
	Cancelled    bool           // the client cancelled it, or went away
	SessionEnded bool           // the session ended before the upstream answered
	Failure      error          // the upstream was unreachable, failed or broke off: what happened
	Refusal      string         // the upstream refused the HTTP request: what it said
	RPCError     *jsonrpc.Error // the upstream answered with a JSON-RPC error
	ToolError    bool           // the upstream's tool result says isError
	ToolText     string         // the text blocks of that result, joined
}

// Classify is the one classification of a relayed call's outcome for the
// record, as the pipeline classifies its own: nil for success, TIMEOUT
// for a call cancelled or cut by its session's end, BINDING_FAILED when
// the upstream could not be reached or failed, UPSTREAM_ERROR when it
// refused the call (at the HTTP level, with a JSON-RPC error, or with a
// tool error). server names the saved server.
func Classify(server string, o Outcome) *invoke.Error {
	fail := func(code, msg string) *invoke.Error {
		return &invoke.Error{Code: code, Binding: capability.BindingMCP, Message: msg}
	}
	switch {
	case o.Cancelled:
		return fail(invoke.CodeTimeout, "the call was cancelled")
	case o.SessionEnded:
		return fail(invoke.CodeTimeout, fmt.Sprintf("the session ended before the MCP server %q answered the call", server))
	case o.Failure != nil:
		return fail(invoke.CodeBindingFailed, o.Failure.Error())
	case o.Refusal != "":
		return fail(invoke.CodeUpstreamError, o.Refusal)
	case o.RPCError != nil:
		return fail(invoke.CodeUpstreamError, fmt.Sprintf("MCP server %q refused the call: %s (JSON-RPC %d)", server, o.RPCError.Message, o.RPCError.Code))
	case o.ToolError && o.ToolText == "":
		return fail(invoke.CodeUpstreamError, "the tool reported an error")
	case o.ToolError:
		return fail(invoke.CodeUpstreamError, o.ToolText)
	}
	return nil
}
