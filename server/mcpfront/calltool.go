package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/server/mcpgw"
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
	if p == nil || s.f.hooks == nil {
		return s.forward(ctx, methodCallTool, params)
	}
	var hdr http.Header
	if extra := req.GetExtra(); extra != nil {
		hdr = extra.Header
	}
	caller := hdr.Get(invoke.CallerHeader)
	actx := withApproval(ctx, hdr, p.Meta)
	start, denied := s.f.authorize(actx, s.fr.name, p.Name, p.Arguments, caller)
	if denied != "" {
		return refusedResult(denied), nil
	}
	res, err := s.relayUp(ctx, methodCallTool, params)
	s.f.emitCall(ctx, toolURI(s.fr.name, p.Name), caller, start, s.callError(ctx, res, err), true)
	if err != nil {
		return nil, s.upstreamError(err)
	}
	return res, nil
}

// withApproval returns ctx carrying the approval id a tools/call is
// retried with, read as caphub's own /mcp reads it (mcpgw.ApprovalID).
func withApproval(ctx context.Context, hdr http.Header, meta map[string]any) context.Context {
	return invoke.WithApproval(ctx, mcpgw.ApprovalID(meta, hdr, ""))
}

// toolURI is the capability URI of a fronted tool.
func toolURI(server, tool string) string { return "mcp:" + server + "/" + tool }

// authorize asks the policy about a call of a fronted tool by caller (the
// X-Caphub-Agent header of the request that carried it; "" when none), at
// the time it returns as start. A refusal is recorded and returned as the
// text of the tool error to answer with ("DENIED: …"); "" lets the call
// go on. Both relays call it, so they refuse and record alike.
func (f *Front) authorize(ctx context.Context, server, tool string, args json.RawMessage, caller string) (start time.Time, denied string) {
	start = time.Now()
	uri := toolURI(server, tool)
	call := &invoke.Call{URI: uri, Definition: definition(server, uri, tool), Input: arguments(args), Caller: caller, Attempt: 1}
	err := f.hooks.Authorize(ctx, call)
	if err == nil {
		return start, ""
	}
	code, msg := refusal(err)
	f.emitCall(ctx, uri, caller, start, &invoke.Error{Code: code, Message: msg}, false)
	if code != invoke.CodeDenied {
		return start, "DENIED: " + code + ": " + msg
	}
	return start, "DENIED: " + msg
}

// emitCall records a call that began at start: e is its error (nil for
// success), attempted says whether it reached the upstream (a refused
// call did not, and has no attempt).
func (f *Front) emitCall(ctx context.Context, uri, caller string, start time.Time, e *invoke.Error, attempted bool) {
	d := time.Since(start)
	rec := invoke.Record{Time: start.UTC(), URI: uri, Caller: caller, Binding: capability.BindingMCP, DurationMS: ms(d)}
	if e != nil {
		rec.Code, rec.Message = e.Code, e.Message
	}
	if attempted {
		rec.Attempts = []invoke.Attempt{{Binding: capability.BindingMCP, Attempt: 1, Duration: d, DurationMS: ms(d), Error: e}}
	}
	f.hooks.Emit(context.WithoutCancel(ctx), rec)
}

// definition is what the policy sees of a fronted tool: its URI, name,
// server (as the domain) and mcp binding.
func definition(server, uri, tool string) *capability.Definition {
	return &capability.Definition{
		URI:      uri,
		Name:     tool,
		Domain:   server,
		Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: server, Tool: tool}},
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
