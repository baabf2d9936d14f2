// Package tracing is caphub's one use of OpenTelemetry: it exports spans
// over OTLP/HTTP when cmd/caphub turns it on (Setup), starts spans for the
// other packages (Start, Middleware, StartClient, MCPMethods), and carries
// the W3C trace context (traceparent, tracestate) in and out of HTTP
// headers and MCP params._meta.
//
// Off (no Setup, the default) it records nothing and costs a nil check per
// span: Start returns the context unchanged and a Span that does nothing.
// The trace context a request brings is still passed on to the upstreams
// its call reaches, unchanged, so that a traced client's trace is not cut
// by an untraced caphub; none is ever made up.
//
// The exporter and the SDK read the standard OTEL_* variables themselves
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
// OTEL_BSP_*, …); whether to call Setup at all is cmd/caphub's decision.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// scope names caphub's spans' instrumentation scope.
const scope = "github.com/caphub/caphub"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "caphub"

// Options configure Setup.
type Options struct {
	// ServiceName is the default service.name; OTEL_SERVICE_NAME wins.
	// Default DefaultServiceName.
	ServiceName string
	// Version is service.version.
	Version string
	// Log receives the SDK's errors (an unreachable collector); default
	// slog.Default().
	Log *slog.Logger
}

// tracer is the tracer spans start from; nil while tracing is off.
var tracer atomic.Pointer[trace.Tracer]

// Enabled reports whether spans are recorded and exported.
func Enabled() bool { return tracer.Load() != nil }

// Setup turns tracing on: spans are batched and exported over OTLP/HTTP to
// the endpoint the OTEL_EXPORTER_OTLP_* variables name (default
// http://localhost:4318). shutdown flushes the spans not yet exported and
// turns tracing off again; call it before the process exits.
func Setup(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry OTLP/HTTP exporter: %w (check the OTEL_EXPORTER_OTLP_* variables)", err)
	}
	// Later detectors win: the variables override caphub's defaults.
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w (check OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES)", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log := o.Log
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("OpenTelemetry: exporting spans failed", "err", err)
	}))
	t := tp.Tracer(scope, trace.WithInstrumentationVersion(o.Version))
	tracer.Store(&t)
	return func(ctx context.Context) error {
		tracer.CompareAndSwap(&t, nil)
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("OpenTelemetry: flushing spans at shutdown: %w", err)
		}
		return nil
	}, nil
}

// Kind is a span's kind.
type Kind int

// The kinds of span caphub starts.
const (
	Internal Kind = iota // a step inside caphub
	Server               // a request caphub answers
	Client               // a request caphub sends upstream
)

func (k Kind) otel() trace.SpanKind {
	switch k {
	case Server:
		return trace.SpanKindServer
	case Client:
		return trace.SpanKindClient
	}
	return trace.SpanKindInternal
}

// Span is a started span. The zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// Start starts a span named name as a child of the span, or the remote
// trace context, ctx carries. Off, it returns ctx itself and a zero Span.
func Start(ctx context.Context, name string, kind Kind) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := (*t).Start(ctx, name, trace.WithSpanKind(kind.otel()))
	return ctx, Span{s}
}

// StartFor is Start of a span named "name target" (binding http,
// tools/call search), the name made only when tracing is on.
func StartFor(ctx context.Context, name, target string, kind Kind) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := (*t).Start(ctx, name+" "+target, trace.WithSpanKind(kind.otel()))
	return ctx, Span{s}
}

// Recording reports whether the span records what is set on it: false when
// tracing is off or the sampler dropped the trace.
func (s Span) Recording() bool { return s.s != nil && s.s.IsRecording() }

// SetString sets a string attribute.
func (s Span) SetString(key, value string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, value))
	}
}

// SetInt sets an integer attribute.
func (s Span) SetInt(key string, value int) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int(key, value))
	}
}

// SetName renames the span (once its route is known).
func (s Span) SetName(name string) {
	if s.s != nil {
		s.s.SetName(name)
	}
}

// Fail marks the span failed: error.type is kind (an error code, an HTTP
// status, "tool_error"), the status description says why.
func (s Span) Fail(kind, why string) {
	if s.s != nil {
		s.s.SetAttributes(semconv.ErrorTypeKey.String(kind))
		s.s.SetStatus(codes.Error, why)
	}
}

// End ends the span; a non-nil err marks it failed, with err's message
// (Fail first to name the kind of failure).
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}
