package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callTool relays a tools/call under caphub's policy: Authorize decides
// first (a refusal is answered as a tool error whose text starts with
// "DENIED: "), and Emit records every call, with the URI mcp:<server>/<tool>
// and the binding "mcp".
func (s *session) callTool(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	params := req.GetParams()
	p, _ := params.(*mcp.CallToolParamsRaw)
	hooks := s.f.hooks
	if p == nil || hooks == nil {
		return s.forward(ctx, methodCallTool, params)
	}
	uri := "mcp:" + s.fr.name + "/" + p.Name
	start := time.Now()
	rec := invoke.Record{Time: start.UTC(), URI: uri, Binding: capability.BindingMCP}
	call := &invoke.Call{URI: uri, Definition: s.definition(uri, p.Name), Input: arguments(p.Arguments), Attempt: 1}
	if err := hooks.Authorize(ctx, call); err != nil {
		code, msg := refusal(err)
		rec.Code, rec.Message, rec.DurationMS = code, msg, ms(time.Since(start))
		hooks.Emit(context.WithoutCancel(ctx), rec)
		text := "DENIED: " + msg
		if code != invoke.CodeDenied {
			text = "DENIED: " + code + ": " + msg
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}

	res, err := s.relayUp(ctx, methodCallTool, params)
	d := time.Since(start)
	attempt := invoke.Attempt{Binding: capability.BindingMCP, Attempt: 1, Duration: d, DurationMS: ms(d)}
	if e := s.callError(ctx, res, err); e != nil {
		attempt.Error = e
		rec.Code, rec.Message = e.Code, e.Message
	}
	rec.Attempts = []invoke.Attempt{attempt}
	rec.DurationMS = ms(d)
	hooks.Emit(context.WithoutCancel(ctx), rec)
	if err != nil {
		return nil, s.upstreamError(err)
	}
	return res, nil
}

// definition is what the policy sees of a fronted tool: its URI, name,
// server (as the domain) and mcp binding.
func (s *session) definition(uri, tool string) *capability.Definition {
	return &capability.Definition{
		URI:      uri,
		Name:     tool,
		Domain:   s.fr.name,
		Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: s.fr.name, Tool: tool}},
	}
}

// arguments decodes a call's arguments for the policy (an object, or an
// empty one).
func arguments(raw json.RawMessage) map[string]any {
	var args map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &args) == nil && args != nil {
		if m, ok := capability.Normalize(args).(map[string]any); ok {
			return m
		}
	}
	return map[string]any{}
}

// refusal reads the code and message of a policy refusal; an error that is
// not an *invoke.Error is a denial.
func refusal(err error) (code, msg string) {
	var e *invoke.Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code, e.Message
	}
	return invoke.CodeDenied, err.Error()
}

// callError classifies a relayed call's outcome for the record, as the
// pipeline does: nil on success, UPSTREAM_ERROR for a tool error or a
// JSON-RPC error the upstream answered, TIMEOUT when the client cancelled,
// BINDING_FAILED when the upstream could not be reached.
func (s *session) callError(ctx context.Context, res mcp.Result, err error) *invoke.Error {
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			msg := toolText(r)
			if msg == "" {
				msg = "the tool reported an error"
			}
			return &invoke.Error{Code: invoke.CodeUpstreamError, Binding: capability.BindingMCP, Message: msg}
		}
		return nil
	case ctx.Err() != nil:
		return &invoke.Error{Code: invoke.CodeTimeout, Binding: capability.BindingMCP, Message: "the call was cancelled"}
	case errors.As(err, &wire):
		return &invoke.Error{Code: invoke.CodeUpstreamError, Binding: capability.BindingMCP,
			Message: fmt.Sprintf("MCP server %q refused the call: %s (JSON-RPC %d)", s.fr.name, wire.Message, wire.Code)}
	}
	return &invoke.Error{Code: invoke.CodeBindingFailed, Binding: capability.BindingMCP, Message: err.Error()}
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

// ms is a duration in milliseconds, to the microsecond (as the pipeline
// records them).
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
