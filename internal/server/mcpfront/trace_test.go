package mcpfront

import (
	"context"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/internal/tracing/otlptest"
)

// TestTraceFrontedCall: with traces on, a tools/call fronted to a saved
// server is exported as an upstream call span naming the tool and the
// server, under the trace the client's _meta names (the relay passes the
// message as it came); a call the policy refuses is a failed span.
func TestTraceFrontedCall(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	e := newEnv(t)
	s := testpeers.RawSession{T: t, URL: e.frontURL + "/mcp/servers/up"}
	s.Initialize(nil)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := s.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "_meta": map[string]any{"traceparent": tp}}); !strings.Contains(got, "echo: hi") {
		t.Fatalf("tools/call echo: %s", got)
	}
	e.hooks.mu.Lock()
	e.hooks.denyURI = "mcp:up/sleep"
	e.hooks.mu.Unlock()
	if got := s.Call("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1}}); !strings.Contains(got, "DENIED") {
		t.Fatalf("tools/call sleep, denied: %s", got)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := map[string]otlptest.Span{}
	for _, sp := range rc.Spans() {
		spans[sp.Name] = sp
	}
	echo, sleep := spans["tools/call echo"], spans["tools/call sleep"]
	if echo.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || echo.ParentSpanID != "00f067aa0ba902b7" {
		t.Errorf("the fronted call's span is in trace %s under %s, want the _meta's", echo.TraceID, echo.ParentSpanID)
	}
	if echo.Attrs["caphub.upstream"] != "up" || echo.Attrs["gen_ai.tool.name"] != "echo" || echo.Kind.String() != "SPAN_KIND_CLIENT" || echo.Error {
		t.Errorf("the fronted call's span: %+v (all: %+v)", echo, rc.Spans())
	}
	if !sleep.Error || sleep.Attrs["error.type"] != "DENIED" {
		t.Errorf("the refused call's span: %+v, want a failure of type DENIED", sleep)
	}
}
