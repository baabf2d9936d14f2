package relay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is a fronted tools/call the policy allowed, to record once it ends.
type Call struct {
	Server, Tool string
	Caller       string       // the agent it acts as (identity.Caller.Agent)
	Start        time.Time    // when the policy was asked
	span         tracing.Span // the call's, ended when it is recorded
}

// Authorize asks the policy about a call of a fronted tool by the caller
// ctx carries (identity.From: the agent it acts as, "" when none). A
// refusal is recorded and returned as the text of the tool error to answer
// with ("DENIED: …"); "" lets the call go on, to be recorded with Emit.
// Both relays call it, so they refuse and record alike. Env.Hooks must not
// be nil.
func (e *Env) Authorize(ctx context.Context, server, tool string, args json.RawMessage) (call Call, denied string) {
	caller := identity.From(ctx).Agent
	call = Call{Server: server, Tool: tool, Caller: caller, Start: time.Now()}
	_, call.span = tracing.StartFor(ctx, "tools/call", tool, tracing.Client)
	call.span.SetString("mcp.method.name", "tools/call")
	call.span.SetString("gen_ai.tool.name", tool)
	call.span.SetString("caphub.upstream", server)
	uri := toolURI(server, tool)
	req := &invoke.Call{URI: uri, Definition: definition(server, uri, tool), Input: arguments(args), Caller: caller, Attempt: 1}
	err := e.Hooks.Authorize(ctx, req)
	if err == nil {
		return call, ""
	}
	code, msg := refusal(err)
	e.emit(ctx, call, &invoke.Error{Code: code, Message: msg}, false)
	if code != invoke.CodeDenied {
		return call, "DENIED: " + code + ": " + msg
	}
	return call, "DENIED: " + msg
}

// Emit records an allowed call that reached the upstream, and ends its
// span: e is its error
// (Classify's; nil for success).
func (e *Env) Emit(ctx context.Context, call Call, err *invoke.Error) {
	e.emit(ctx, call, err, true)
}

// emit records a call: attempted says whether it reached the upstream (a
// refused call did not, and has no attempt).
func (e *Env) emit(ctx context.Context, call Call, err *invoke.Error, attempted bool) {
	d := time.Since(call.Start)
	rec := invoke.Record{Time: call.Start.UTC(), URI: toolURI(call.Server, call.Tool), Caller: call.Caller, Binding: capability.BindingMCP, DurationMS: ms(d)}
	if err != nil {
		rec.Code, rec.Message = err.Code, err.Message
		call.span.Fail(err.Code, err.Message)
	}
	call.span.End(nil)
	if attempted {
		rec.Attempts = []invoke.Attempt{{Binding: capability.BindingMCP, Attempt: 1, Duration: d, DurationMS: ms(d), Error: err}}
	}
	e.Hooks.Emit(context.WithoutCancel(ctx), rec)
}

// WithApproval returns ctx carrying its caller retried with the approval
// id a tools/call names, read as caphub's own /mcp reads it
// (mcpgw.ApprovalID), and the trace its _meta names (tracing.MetaParent).
func WithApproval(ctx context.Context, hdr http.Header, meta map[string]any) context.Context {
	ctx = tracing.MetaParent(ctx, meta)
	return identity.WithApproval(ctx, mcpgw.ApprovalID(meta, hdr, ""))
}

// RefusedResult is the tool error a refused call is answered with.
func RefusedResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolURI is the capability URI of a fronted tool.
func toolURI(server, tool string) string { return "mcp:" + server + "/" + tool }

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

// ms is a duration in milliseconds, to the microsecond (as the pipeline
// records them).
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
