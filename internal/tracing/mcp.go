package tracing

import (
	"context"
	"net/http"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// MCPMethods is an MCP server middleware that traces each method a client
// calls: a server span named after the method ("tools/call TOOL" for a
// tool call), a child of the trace context in its HTTP headers (the HTTP
// request's span, see Middleware) when that is in the trace the request's
// params._meta names or _meta names none, else a child of _meta's, linked
// to the HTTP request's span. The
// context the MCP SDK hands handlers is the session's, not the request's:
// a request that brings no trace context runs with none. Off, the request
// only runs with the trace context it brings, if any.
func MCPMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var hdr http.Header
		if ex := req.GetExtra(); ex != nil {
			hdr = ex.Header
		}
		tool := ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			tool = p.Name
		}
		session := ""
		if s := req.GetSession(); s != nil {
			session = s.ID()
		}
		ctx, end := StartMCP(ctx, method, tool, session, metaOf(req), hdr)
		res, err := next(ctx, method, req)
		r, _ := res.(*mcp.CallToolResult)
		end(err, r != nil && r.IsError)
		return res, err
	}
}

// StartMCP starts the span of one MCP request as MCPMethods does, for a
// server that reads a request itself (the gateway's tools/call path):
// ctx is the session's context, tool the name a tools/call calls (else
// ""), session its id, meta the request's params._meta and header the
// HTTP request's. end, which must be called once, ends the span with the
// request's outcome: a JSON-RPC error, or a tool result with isError.
func StartMCP(ctx context.Context, method, tool, session string, meta map[string]any, header http.Header) (_ context.Context, end func(err error, toolError bool)) {
	var hdr trace.SpanContext
	if len(header["Traceparent"]) > 0 {
		hdr = trace.SpanContextFromContext(Extract(context.Background(), header))
	}
	parent := withoutTrace(ctx)
	fromMeta := FromMeta(parent, meta)
	metaSC := trace.SpanContextFromContext(fromMeta)
	switch {
	case metaSC.IsValid() && metaSC.TraceID() != hdr.TraceID():
		parent = fromMeta
	case hdr.IsValid():
		parent = trace.ContextWithRemoteSpanContext(parent, hdr)
	}
	t := tracer.Load()
	if t == nil {
		return parent, endNothing
	}
	name := method
	if tool != "" {
		if len(tool) > maxToolName {
			tool = tool[:maxToolName] // a client's string: bounded
		}
		name += " " + tool
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("mcp.method.name", method))}
	if hdr.IsValid() && hdr.SpanID() != trace.SpanContextFromContext(parent).SpanID() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: hdr}))
	}
	ctx, span := (*t).Start(parent, name, opts...)
	if tool != "" {
		span.SetAttributes(attribute.String("gen_ai.tool.name", tool))
	}
	if session != "" {
		span.SetAttributes(attribute.String("mcp.session.id", session))
	}
	return ctx, func(err error, toolError bool) {
		sp := Span{span}
		if err != nil {
			sp.Fail("jsonrpc_error", err.Error())
		} else if toolError {
			sp.Fail("tool_error", "the tool answered an error")
		}
		span.End()
	}
}

// endNothing ends no span (tracing off).
func endNothing(error, bool) {}

// maxToolName bounds the tool name a span is named after.
const maxToolName = 128

// metaOf is the _meta of a request's params (nil without params).
func metaOf(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}
