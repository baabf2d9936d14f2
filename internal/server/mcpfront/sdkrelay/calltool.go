package sdkrelay

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callTool relays a tools/call under caphub's policy: Authorize decides
// first (a refusal is answered as a tool error whose text starts with
// "DENIED: "), and Emit records every call, with the URI mcp:<server>/<tool>
// and the binding "mcp".
func (s *session) callTool(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	env := s.rl.env
	params := req.GetParams()
	p, _ := params.(*mcp.CallToolParamsRaw)
	if p == nil || env.Hooks == nil {
		return s.forward(ctx, relay.MethodCallTool, params)
	}
	var hdr http.Header
	if extra := req.GetExtra(); extra != nil {
		hdr = extra.Header
	}
	call, denied := env.Authorize(relay.WithApproval(ctx, hdr, p.Meta), s.fr.name, p.Name, p.Arguments)
	if denied != "" {
		return relay.RefusedResult(denied), nil
	}
	res, err := s.relayUp(ctx, relay.MethodCallTool, params)
	env.Emit(ctx, call, relay.Classify(s.fr.name, outcome(ctx, res, err)))
	if err != nil {
		return nil, s.upstreamError(err)
	}
	return res, nil
}

// outcome is what the relay saw of a relayed call's end, for
// relay.Classify: the result, or the error of the call, whose context is
// ctx.
func outcome(ctx context.Context, res mcp.Result, err error) relay.Outcome {
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		r, ok := res.(*mcp.CallToolResult)
		if ok && r.IsError {
			return relay.Outcome{ToolError: true, ToolText: toolText(r)}
		}
		return relay.Outcome{}
	case ctx.Err() != nil:
		return relay.Outcome{Cancelled: true}
	case errors.As(err, &wire):
		return relay.Outcome{RPCError: wire}
	}
	return relay.Outcome{Failure: err}
}

// toolText joins the text blocks of a tool result.
func toolText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
