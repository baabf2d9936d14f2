package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/internal/tracing/otlptest"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// otelVars are the variables tracingOn reads; each test sets all of them.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}

func TestTracingOn(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		refused string // in the error
	}{
		{env: nil, on: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, on: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, refused: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: caphub exports traces over OTLP/HTTP with protobuf only"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, refused: "OTEL_TRACES_EXPORTER=zipkin: caphub exports traces with otlp only"},
	} {
		for _, v := range otelVars {
			t.Setenv(v, c.env[v])
		}
		on, err := tracingOn()
		switch {
		case c.refused != "":
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%v: error %v, want one saying %q", c.env, err, c.refused)
			}
		case err != nil || on != c.on:
			t.Errorf("%v: on %v, err %v; want on %v", c.env, on, err, c.on)
		}
	}
}

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
	metaTrace   = "0af7651916cd43dd8448eb211c80319c"
	metaSpan    = "b7ad6b7169203331"
)

// traceFixture is a database with one capability bound to an HTTP
// upstream that notes the traceparent of each request.
type traceFixture struct {
	db, tool, host string
	got            chan string // the traceparent each upstream request brought
}

func newTraceFixture(t *testing.T) *traceFixture {
	t.Helper()
	f := &traceFixture{db: filepath.Join(t.TempDir(), "caphub.db"), got: make(chan string, 10)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.got <- r.Header.Get("traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"greeting":"hello"}`))
	}))
	t.Cleanup(up.Close)
	f.host = strings.TrimPrefix(up.URL, "http://")
	uri := "ossa:demo/greet@1.0"
	def := capability.Definition{
		URI: uri, Name: "greet", Domain: "demo", Version: "1.0.0", Stability: "stable",
		Description: "Greets, from an HTTP upstream",
		Input:       capability.Schema{"type": "object"},
		Output:      capability.Schema{"type": "object", "properties": map[string]any{"greeting": map[string]any{"type": "string"}}},
		Bindings:    capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: up.URL + "/greet"}},
	}
	st, err := sqlite.Open(context.Background(), f.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.NewService(st).Register(context.Background(), def); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f.tool = capability.ToolName(uri)
	return f
}

// call sends tools/call of the fixture's tool on a new session of /mcp,
// with _meta and header as given, and returns the traceparent the upstream
// received.
func (f *traceFixture) call(t *testing.T, p *serveProc, meta map[string]any, header http.Header) string {
	t.Helper()
	s := testpeers.RawSession{T: t, URL: p.url + "/mcp", Header: header}
	s.Initialize(nil)
	params := map[string]any{"name": f.tool, "arguments": map[string]any{}}
	if meta != nil {
		params["_meta"] = meta
	}
	if got := s.Call("tools/call", params); !strings.Contains(got, "hello") || strings.Contains(got, `"isError":true`) {
		t.Fatalf("tools/call %s: %s\n%s", f.tool, got, p.logs)
	}
	select {
	case tp := <-f.got:
		return tp
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was not called")
	}
	return ""
}

// stop ends serve with SIGTERM, as an operator would, and waits.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("caphub serve: %v\n%s", err, p.logs)
	}
}

// TestTraceEndToEnd: caphub serve with OTEL_EXPORTER_OTLP_ENDPOINT exports
// to a real OTLP/HTTP receiver one trace from an inbound MCP tools/call to
// the HTTP upstream its capability is bound to: the request (POST /mcp),
// the MCP method, the invocation, the binding attempt and the upstream
// call, each the child of the one before, under the client's span; the
// upstream receives the upstream call's span as its traceparent. A call
// whose trace context comes in _meta alone is traced under it, linked to
// its HTTP request's span.
func TestTraceEndToEnd(t *testing.T) {
	rc := otlptest.Start(t)
	f := newTraceFixture(t)
	p := startServeEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL, "OTEL_SERVICE_NAME=", "OTEL_TRACES_EXPORTER=", "OTEL_SDK_DISABLED="}, f.db, "--allow-host", f.host)

	// A client traced over HTTP and in MCP: both carry its span.
	tp := "00-" + clientTrace + "-" + clientSpan + "-01"
	upstreamTP := f.call(t, p, map[string]any{"traceparent": tp}, http.Header{"Traceparent": {tp}})
	// A client that sends its trace context in _meta only.
	metaUpstreamTP := f.call(t, p, map[string]any{"traceparent": "00-" + metaTrace + "-" + metaSpan + "-01"}, nil)
	p.stop(t) // flushes the spans
	if !strings.Contains(p.logs.String(), "OpenTelemetry traces on") {
		t.Errorf("serve did not say traces are on:\n%s", p.logs)
	}

	spans := rc.Spans()
	inTrace := func(trace string) map[string]otlptest.Span {
		m := map[string]otlptest.Span{}
		for _, s := range spans {
			if s.TraceID == trace {
				m[s.Name] = s
			}
		}
		return m
	}
	tr := inTrace(clientTrace)
	chain := []string{"POST /mcp", "tools/call " + f.tool, "invoke", "binding http", "GET"}
	parent := clientSpan
	for _, name := range chain {
		s, ok := tr[name]
		if !ok {
			t.Fatalf("no span %q in trace %s; its spans: %v\nall: %+v\nrefused: %v", name, clientTrace, keys(tr), spans, rc.Refused())
		}
		if s.ParentSpanID != parent {
			t.Errorf("span %q: parent %s, want %s (the span before it in %v)", name, s.ParentSpanID, parent, chain)
		}
		if s.Service != "caphub" {
			t.Errorf("span %q: service.name %q, want caphub", name, s.Service)
		}
		parent = s.SpanID
	}
	if want := "00-" + clientTrace + "-" + tr["GET"].SpanID + "-01"; upstreamTP != want {
		t.Errorf("the upstream received traceparent %q, want %q (the upstream call's span)", upstreamTP, want)
	}
	req, call, inv, bind, up := tr["POST /mcp"], tr["tools/call "+f.tool], tr["invoke"], tr["binding http"], tr["GET"]
	for _, c := range []struct {
		span      otlptest.Span
		attr, val string
	}{
		{req, "http.route", "/mcp"}, {req, "http.response.status_code", "200"},
		{call, "gen_ai.tool.name", f.tool}, {call, "mcp.method.name", "tools/call"},
		{inv, "caphub.capability.uri", "ossa:demo/greet@1.0"}, {inv, "caphub.outcome", "ok"}, {inv, "caphub.binding", "http"},
		{bind, "caphub.binding", "http"}, {bind, "caphub.attempt", "1"},
		{up, "caphub.upstream", "http binding"}, {up, "http.response.status_code", "200"}, {up, "server.address", strings.Split(f.host, ":")[0]},
	} {
		if got := c.span.Attrs[c.attr]; got != c.val {
			t.Errorf("span %q: %s = %q, want %q", c.span.Name, c.attr, got, c.val)
		}
	}
	if r, ok := tr["registry resolve"]; !ok || r.ParentSpanID != inv.SpanID {
		t.Errorf("registry resolve: %+v, want a child of invoke", r)
	}

	mt := inTrace(metaTrace)
	mcall, ok := mt["tools/call "+f.tool]
	if !ok || mcall.ParentSpanID != metaSpan {
		t.Fatalf("the _meta-only call: %+v, want a child of %s; trace's spans: %v", mcall, metaSpan, keys(mt))
	}
	if _, ok := mt["POST /mcp"]; ok {
		t.Error("the HTTP request without a traceparent header is in the _meta trace")
	}
	linked := false
	for _, s := range spans {
		if s.Name == "POST /mcp" && len(mcall.Links) == 1 && mcall.Links[0] == s.SpanID {
			linked = true
		}
	}
	if !linked {
		t.Errorf("the _meta-only call's span links %v, want its POST /mcp span", mcall.Links)
	}
	if !strings.HasPrefix(metaUpstreamTP, "00-"+metaTrace+"-"+mt["GET"].SpanID) {
		t.Errorf("the _meta-only call's upstream got traceparent %q, want the upstream call's span in trace %s", metaUpstreamTP, metaTrace)
	}
}

func keys(m map[string]otlptest.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTraceOff: without OTEL_* variables, serve traces nothing, passes
// the trace context a call brings (in _meta or the header) to its
// upstream unchanged, and makes none up for a call that brings none; with
// OTEL_TRACES_EXPORTER=none, an endpoint named gets nothing.
func TestTraceOff(t *testing.T) {
	f := newTraceFixture(t)
	var env []string
	for _, v := range otelVars {
		env = append(env, v+"=")
	}
	p := startServeEnv(t, env, f.db, "--allow-host", f.host)
	tp := "00-" + metaTrace + "-" + metaSpan + "-01"
	if got := f.call(t, p, map[string]any{"traceparent": tp}, nil); got != tp {
		t.Errorf("off: the upstream got traceparent %q, want the call's %q unchanged", got, tp)
	}
	htp := "00-" + clientTrace + "-" + clientSpan + "-01"
	if got := f.call(t, p, nil, http.Header{"Traceparent": {htp}}); got != htp {
		t.Errorf("off: the upstream got traceparent %q, want the request header's %q unchanged", got, htp)
	}
	if got := f.call(t, p, nil, nil); got != "" {
		t.Errorf("off: the upstream got traceparent %q, though the call brought none", got)
	}
	p.stop(t)
	if strings.Contains(p.logs.String(), "OpenTelemetry") {
		t.Errorf("serve mentions OpenTelemetry with traces off:\n%s", p.logs)
	}

	rc := otlptest.Start(t)
	p = startServeEnv(t, append(env, "OTEL_TRACES_EXPORTER=none", "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.URL), f.db, "--allow-host", f.host)
	if got := f.call(t, p, nil, nil); got != "" {
		t.Errorf("OTEL_TRACES_EXPORTER=none: the upstream got traceparent %q, though the call brought none", got)
	}
	p.stop(t)
	if n := rc.Requests(); n != 0 {
		t.Errorf("OTEL_TRACES_EXPORTER=none: the receiver got %d export requests", n)
	}
}
