package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator reads and writes the W3C trace context: traceparent and
// tracestate, the same two keys in HTTP headers and in MCP params._meta.
var propagator propagation.TraceContext

// maxMetaValue bounds a trace context value read from _meta; the W3C
// limits are 55 bytes (traceparent) and 512 bytes (tracestate).
const maxMetaValue = 1024

// Extract returns ctx with the trace context headers carry, or ctx itself
// when they carry none or a malformed one.
func Extract(ctx context.Context, h http.Header) context.Context {
	if len(h["Traceparent"]) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes the trace context of ctx (its current span, or the remote
// context it was given) into h; with none, it writes nothing.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// FromMeta returns ctx with the trace context an MCP request's
// params._meta carries (traceparent, tracestate, as MCP clients that trace
// send them), or ctx itself when it carries none or a malformed one.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx
	}
	return propagator.Extract(ctx, metaCarrier(meta))
}

// MetaParent returns ctx with the trace context in an MCP request's
// _meta when that names another trace than the one ctx is in (the HTTP
// request's, see MCPMethods), else ctx itself.
func MetaParent(ctx context.Context, meta map[string]any) context.Context {
	m := FromMeta(ctx, meta)
	if m == ctx || trace.SpanContextFromContext(m).TraceID() == trace.SpanContextFromContext(ctx).TraceID() {
		return ctx
	}
	return m
}

// Metadata is what carries an MCP message's _meta (the MCP SDK's params
// and results are).
type Metadata interface {
	GetMeta() map[string]any
	SetMeta(map[string]any)
}

// InjectMeta writes the trace context of ctx into the _meta of the
// params of a request caphub sends upstream; with none, it leaves them
// alone.
func InjectMeta(ctx context.Context, p Metadata) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	p.SetMeta(InjectMap(ctx, p.GetMeta()))
}

// InjectMap writes the trace context of ctx into meta (a _meta object)
// and returns it, made when nil and there is something to write.
func InjectMap(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = make(map[string]any, 2)
	}
	propagator.Inject(ctx, metaCarrier(meta))
	return meta
}

// metaCarrier reads and writes the trace context in an MCP _meta object;
// values that are not strings, or too long, are absent.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	if len(s) > maxMetaValue {
		return ""
	}
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
