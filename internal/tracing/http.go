package tracing

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Middleware traces each request next answers: a server span named
// "METHOD ROUTE" (route(r) gives the route pattern, e.g.
// /registry/capabilities/{domain}, never the raw path), a child of the
// trace context the request's traceparent header carries, with the
// response's status code. The request goes on with that span as its
// context and as its traceparent header, so that a handler reading the
// trace context from the headers (the MCP SDK's handlers only see those)
// finds this span. Off, the request only goes on with the trace context
// it carries, if any.
func Middleware(route func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := tracer.Load()
		if t == nil {
			if len(r.Header["Traceparent"]) > 0 {
				r = r.WithContext(Extract(r.Context(), r.Header))
			}
			next.ServeHTTP(w, r)
			return
		}
		rt := route(r)
		ctx, span := (*t).Start(Extract(r.Context(), r.Header), r.Method+" "+rt,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(rt), semconv.URLPath(r.URL.Path)))
		defer span.End()
		r = r.WithContext(ctx)
		r.Header = r.Header.Clone()
		propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			Span{span}.Fail(strconv.Itoa(status), http.StatusText(status))
		}
	})
}

// StartClient starts the client span of a request caphub sends upstream
// (what names the caller: "http binding", "delegation") and writes its trace context into req's headers; end
// ends the span with the answer's status code or the error. Off, it only
// writes the trace context req's context carries, if any.
func StartClient(req *http.Request, what string) (end func(*http.Response, error)) {
	if req.Header == nil {
		req.Header = http.Header{}
	}
	t := tracer.Load()
	if t == nil {
		Inject(req.Context(), req.Header)
		return noEnd
	}
	// Not the path or the query: they may hold what a caller sent, or a
	// key.
	ctx, span := (*t).Start(req.Context(), req.Method,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(req.Method), semconv.ServerAddress(req.URL.Hostname()),
			semconv.URLScheme(req.URL.Scheme), attribute.String("caphub.upstream", what)))
	propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return func(resp *http.Response, err error) {
		switch {
		case err != nil:
			Span{span}.Fail("transport", err.Error())
		case resp != nil:
			span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
			if resp.StatusCode >= 400 {
				Span{span}.Fail(strconv.Itoa(resp.StatusCode), http.StatusText(resp.StatusCode))
			}
		}
		span.End()
	}
}

func noEnd(*http.Response, error) {}

// statusWriter notes the status code of a response; Flush and Unwrap let
// streams (SSE) and http.ResponseController reach the writer beneath.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withoutTrace is ctx with no trace context: a request that brings none
// must not inherit one from the context it runs in.
func withoutTrace(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, trace.SpanContext{})
}
