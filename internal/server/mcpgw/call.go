package mcpgw

//lint:file-ignore SA1019 session logging, deprecated from protocol 2026-07-28, is served through the deprecation window

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeInternal is the error code of a call that failed for a reason the
// invocation pipeline did not classify (the registry's store unreachable,
// say); retrying may help.
const CodeInternal = "INTERNAL_ERROR"

// ToolError is the structured content of a failed call (a result with
// isError true): the capability's declared error code or one of the
// pipeline's (invoke.Code*), the message, whether retrying may help, and
// every attempt made (binding, attempt number, duration, error).
type ToolError struct {
	Code      string           `json:"code"`
	Message   string           `json:"message"`
	Retryable bool             `json:"retryable"`
	Binding   string           `json:"binding,omitempty"`
	Attempts  []invoke.Attempt `json:"attempts"`
	// Details are the error's other details (e.g. deprecated_by for a sunset
	// version).
	Details map[string]any `json:"details,omitempty"`
}

// ApprovalID returns the approval id a tools/call is retried with: its
// _meta MetaApproval, else given (invoke_capability's approval_id), else
// the invoke.ApprovalHeader of the HTTP request that carried it. The fronted
// servers (server/mcpfront) read it the same way.
func ApprovalID(meta map[string]any, hdr http.Header, given string) string {
	id, _ := meta[MetaApproval].(string)
	if id == "" {
		id = given
	}
	if id == "" {
		id = hdr.Get(invoke.ApprovalHeader)
	}
	return strings.TrimSpace(id)
}

// callContext returns ctx carrying the caller of a tools/call: the one the
// HTTP edge set (see Gateway.serveHTTP; none over stdio), acting as agent
// instead when it is not "" (an agent's endpoint), retried with the
// approval the call names (see ApprovalID).
func callContext(ctx context.Context, req *mcp.CallToolRequest, agent, given string) context.Context {
	var meta map[string]any
	var hdr http.Header
	if req != nil && req.Params != nil {
		meta = req.Params.Meta
	}
	if req != nil && req.Extra != nil {
		hdr = req.Extra.Header
	}
	return callerContext(ctx, meta, hdr, agent, given)
}

// callerContext is callContext from a call's _meta and its HTTP request's
// header.
func callerContext(ctx context.Context, meta map[string]any, hdr http.Header, agent, given string) context.Context {
	if agent != "" {
		who := identity.From(ctx)
		who.Agent = agent
		ctx = identity.With(ctx, who)
	}
	return identity.WithApproval(ctx, ApprovalID(meta, hdr, given))
}

// callOut is where a call sends the client what comes before its result:
// the progress of its bindings and the log message of a failure. The SDK's
// session sends them on the request's stream (sessionOut); the gateway's
// own tools/call path writes them on its answer (see fastAnswer).
type callOut interface {
	progress(ctx context.Context, p *mcp.ProgressNotificationParams)
	log(ctx context.Context, p *mcp.LoggingMessageParams)
}

// sdkOut sends through the SDK's session.
type sdkOut struct{ ss *mcp.ServerSession }

func (o sdkOut) progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	_ = o.ss.NotifyProgress(ctx, p)
}

func (o sdkOut) log(ctx context.Context, p *mcp.LoggingMessageParams) {
	// Session logging is deprecated from protocol 2026-07-28 on but still
	// served; Log sends nothing unless the client set a level.
	_ = o.ss.Log(ctx, p)
}

// sessionOut is the callOut of a request the SDK handles (nil without a
// session).
func sessionOut(req *mcp.CallToolRequest) callOut {
	if req == nil || req.Session == nil {
		return nil
	}
	return sdkOut{req.Session}
}

// toolHandler runs the capability of e with the call's arguments.
func (g *Gateway) toolHandler(e *toolEntry) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(callContext(ctx, req, "", ""), e, req.Params.Arguments, req.Params.GetProgressToken(), sessionOut(req)), nil
	}
}

// callTool runs the capability of e with the arguments raw, reporting
// progress with token (when not nil) and a failure's log message to out.
func (g *Gateway) callTool(ctx context.Context, e *toolEntry, raw json.RawMessage, token any, out callOut) *mcp.CallToolResult {
	args, err := decodeArguments(raw)
	if err != nil {
		return g.toolError(ctx, out, e.uri, &invoke.Error{Code: invoke.CodeInvalidInput, Message: err.Error()}, e.errStructured)
	}
	res, err := g.inv.Invoke(progressTo(ctx, token, out), invoke.Request{URI: e.uri, Input: args})
	if err != nil {
		return g.toolError(ctx, out, e.uri, err, e.errStructured)
	}
	return capabilityResult(res, e.structured)
}

// withProgress returns ctx reporting the progress of the call's bindings
// (an upstream MCP tool's notifications/progress) to the client, when its
// tools/call carries a progress token: as notifications/progress with that
// token, related to the request, so that they travel on its stream. The
// SDK sends nothing once the request is answered.
func withProgress(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Params == nil {
		return ctx
	}
	return progressTo(ctx, req.Params.GetProgressToken(), sessionOut(req))
}

// progressTo returns ctx reporting the progress of the call's bindings to
// out as notifications/progress with token; ctx itself without a token or
// out.
func progressTo(ctx context.Context, token any, out callOut) context.Context {
	if token == nil || out == nil {
		return ctx
	}
	return invoke.WithProgress(ctx, func(progress, total float64, message string) {
		out.progress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
	})
}

// decodeArguments reads tools/call arguments: a JSON object (absent or
// null means {}), numbers kept exact.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
		return map[string]any{}, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("the arguments must be a JSON object of the capability's input fields, got %s", truncate(string(raw), 60))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	return capability.Normalize(m).(map[string]any), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// capabilityResult is the tool result of a capability's successful call.
// When an MCP tool ran (res.Tool), it is that tool's result as it came: its
// content blocks (images, audio, resource links and embedded resources
// with them) and, as structured content, the output (mapped and checked
// against the capability's output schema) when structured, else the
// tool's own structured content, if any. Otherwise it is successResult's.
func capabilityResult(res *invoke.Result, structured bool) *mcp.CallToolResult {
	var blocks []mcp.Content
	if res.Tool != nil {
		blocks, _ = res.Tool.Content.([]mcp.Content)
	}
	if blocks == nil {
		return successResult(res, res.Output, structured)
	}
	out := &mcp.CallToolResult{Content: blocks, Meta: resultMeta(res)}
	if _, isObject := res.Output.(map[string]any); structured && isObject {
		out.StructuredContent = res.Output
	} else if !structured && res.Tool.Structured != nil {
		out.StructuredContent = res.Tool.Structured
	}
	return out
}

// successResult is a tool result carrying value: as JSON text, and as
// structured content too when structured (an object output schema was
// advertised) and value is a JSON object. The version and binding that ran
// and any warnings (deprecation) go in _meta.
func successResult(res *invoke.Result, value any, structured bool) *mcp.CallToolResult {
	b, err := json.Marshal(value)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: CodeInternal + ": the output cannot be encoded as JSON: " + err.Error()}},
			StructuredContent: ToolError{Code: CodeInternal, Message: "the output cannot be encoded as JSON: " + err.Error(), Attempts: res.Attempts}}
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	if _, isObject := value.(map[string]any); structured && isObject {
		out.StructuredContent = json.RawMessage(b)
	}
	out.Meta = resultMeta(res)
	return out
}

// resultMeta is the _meta of a call's result: the version and binding that
// ran and any warnings (deprecation); nil for a result no capability made.
func resultMeta(res *invoke.Result) mcp.Meta {
	if res.URI == "" {
		return nil
	}
	meta := mcp.Meta{MetaURI: res.URI, MetaVersion: res.Version, MetaBinding: res.Binding}
	if len(res.Warnings) > 0 {
		meta[MetaWarnings] = res.Warnings
	}
	return meta
}

// errorResult is the tool error for a failed call of uri: "CODE: message"
// as text, and the ToolError as structured content when structured (the
// tool's output schema admits it), else in _meta under MetaError. It is
// also sent to the session as a warning log message, when the client asked
// for logs.
func (g *Gateway) errorResult(ctx context.Context, req *mcp.CallToolRequest, uri string, err error, structured bool) *mcp.CallToolResult {
	return g.toolError(ctx, sessionOut(req), uri, err, structured)
}

// toolError is errorResult with its log message sent to out (when not nil).
func (g *Gateway) toolError(ctx context.Context, out callOut, uri string, err error, structured bool) *mcp.CallToolResult {
	te := toolErrorOf(ctx, err)
	g.log.Debug("mcp gateway: call failed", "uri", uri, "code", te.Code, "message", te.Message)
	if out != nil {
		out.log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "caphub",
			Data: map[string]any{"uri": uri, "code": te.Code, "message": te.Message}})
	}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: te.Code + ": " + te.Message}}}
	if structured {
		res.StructuredContent = te
	} else {
		res.Meta = mcp.Meta{MetaError: te}
	}
	return res
}

// toolErrorOf classifies err: an *invoke.Error keeps its code; a cancelled
// or timed-out context is TIMEOUT; anything else is CodeInternal.
func toolErrorOf(ctx context.Context, err error) ToolError {
	var e *invoke.Error
	switch {
	case errors.As(err, &e):
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		e = invoke.AsError(err, "")
		e.Code, e.Retryable = invoke.CodeTimeout, true
	default:
		e = &invoke.Error{Code: CodeInternal, Retryable: true, Message: "caphub could not run the call: " + err.Error()}
	}
	te := ToolError{Code: e.Code, Message: e.Message, Retryable: e.Retryable, Binding: e.Binding, Attempts: []invoke.Attempt{}}
	if id, ok := e.Details["approval_id"].(string); ok && e.Code == invoke.CodeApprovalNeeded && id != "" {
		te.Message += fmt.Sprintf(` (over MCP, retry the same tools/call with "_meta": {%q: %q})`, MetaApproval, id)
	}
	for k, v := range e.Details {
		if k == "attempts" {
			if a, ok := v.([]invoke.Attempt); ok {
				te.Attempts = a
			}
			continue
		}
		if _, err := json.Marshal(v); err != nil {
			continue // keep the result encodable
		}
		if te.Details == nil {
			te.Details = map[string]any{}
		}
		te.Details[k] = v
	}
	return te
}
