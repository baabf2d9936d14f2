package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/tracing/otlptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

const (
	inTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	inParent = "00f067aa0ba902b7"
	inbound  = "00-" + inTrace + "-" + inParent + "-01"
)

// upstream is an HTTP server that notes the traceparent each request
// brings.
func upstream(t *testing.T) (*httptest.Server, chan string) {
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// serveThrough sends one request with traceparent tp (none when "") to a
// handler behind Middleware that calls up, and returns the traceparent up
// received.
func serveThrough(t *testing.T, tp string, up *httptest.Server, got chan string) string {
	t.Helper()
	h := Middleware(func(*http.Request) string { return "/things/{id}" }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := Start(r.Context(), "work", Internal)
		defer span.End(nil)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL+"/x", nil)
		end := StartClient(req, "test upstream")
		resp, err := http.DefaultClient.Do(req)
		end(resp, err)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		w.WriteHeader(http.StatusTeapot)
	}))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/things/42", nil)
	if tp != "" {
		r.Header.Set("traceparent", tp)
	}
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusTeapot {
		t.Fatalf("status %d", rec.Code)
	}
	return <-got
}

// TestOffPropagatesOnly: with tracing off nothing is started, an inbound
// traceparent reaches the upstream unchanged, and none is made up when the
// request brings none.
func TestOffPropagatesOnly(t *testing.T) {
	if Enabled() {
		t.Fatal("tracing is on before Setup")
	}
	ctx := context.Background()
	if got, span := Start(ctx, "x", Internal); got != ctx || span.Recording() {
		t.Error("Start with tracing off changed the context or recorded")
	}
	up, got := upstream(t)
	if tp := serveThrough(t, inbound, up, got); tp != inbound {
		t.Errorf("off: the upstream got traceparent %q, want the inbound %q unchanged", tp, inbound)
	}
	if tp := serveThrough(t, "", up, got); tp != "" {
		t.Errorf("off: the upstream got traceparent %q though the request brought none", tp)
	}
	if tp := serveThrough(t, "00-zzzz-bad-01", up, got); tp != "" {
		t.Errorf("off: a malformed inbound traceparent became %q upstream", tp)
	}
}

// setup turns tracing on toward a fresh receiver until the test ends.
func setup(t *testing.T) (*otlptest.Receiver, func()) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	shutdown, err := Setup(context.Background(), Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		if err := shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(flush)
	return rc, flush
}

func byName(spans []otlptest.Span) map[string]otlptest.Span {
	m := map[string]otlptest.Span{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

// TestExportsOneTrace: with tracing on, the request, a step in it and its
// upstream call are exported to the receiver as one trace under the
// inbound traceparent, and the upstream receives the client span's.
func TestExportsOneTrace(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	rc, flush := setup(t)
	up, got := upstream(t)
	tp := serveThrough(t, inbound, up, got)
	flush()
	if Enabled() {
		t.Error("tracing is still on after shutdown")
	}
	spans := byName(rc.Spans())
	srv, work, cli := spans["GET /things/{id}"], spans["work"], spans["GET"]
	if srv.SpanID == "" || work.SpanID == "" || cli.SpanID == "" {
		t.Fatalf("want spans GET /things/{id}, work and GET; got %+v (refused: %v)", rc.Spans(), rc.Refused())
	}
	for _, s := range []otlptest.Span{srv, work, cli} {
		if s.TraceID != inTrace {
			t.Errorf("span %s is in trace %s, want the inbound %s", s.Name, s.TraceID, inTrace)
		}
		if s.Service != DefaultServiceName {
			t.Errorf("span %s: service.name %q, want %q", s.Name, s.Service, DefaultServiceName)
		}
	}
	if srv.ParentSpanID != inParent || work.ParentSpanID != srv.SpanID || cli.ParentSpanID != work.SpanID {
		t.Errorf("parents: server %s (want %s), work %s (want %s), client %s (want %s)", srv.ParentSpanID, inParent, work.ParentSpanID, srv.SpanID, cli.ParentSpanID, work.SpanID)
	}
	if want := "00-" + inTrace + "-" + cli.SpanID + "-01"; tp != want {
		t.Errorf("the upstream got traceparent %q, want the client span's %q", tp, want)
	}
	if srv.Attrs["http.route"] != "/things/{id}" || srv.Attrs["http.response.status_code"] != "418" || srv.Kind.String() != "SPAN_KIND_SERVER" {
		t.Errorf("server span: %+v", srv)
	}
	if cli.Attrs["http.response.status_code"] != "200" || cli.Attrs["caphub.upstream"] != "test upstream" || cli.Kind.String() != "SPAN_KIND_CLIENT" {
		t.Errorf("client span: %+v", cli)
	}
}

// TestServiceNameFromEnv: OTEL_SERVICE_NAME wins over caphub's default.
func TestServiceNameFromEnv(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "caphub-eu")
	rc, flush := setup(t)
	_, span := Start(context.Background(), "one", Internal)
	span.End(nil)
	flush()
	spans := rc.Spans()
	if len(spans) != 1 || spans[0].Service != "caphub-eu" {
		t.Errorf("spans %+v, want one of service caphub-eu", spans)
	}
}

// TestMCPMethods: a tools/call carrying a traceparent in params._meta is
// traced as a child of it, named after the tool, and the tool's handler
// runs in that span; a call without one starts a new trace even when the
// session's context carries another.
func TestMCPMethods(t *testing.T) {
	rc, flush := setup(t)
	var seen []trace.SpanContext
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddReceivingMiddleware(MCPMethods)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		seen = append(seen, trace.SpanContextFromContext(ctx))
		return nil, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	// The session's context carries a trace no call brings.
	stale, _ := Start(context.Background(), "session", Internal)
	ss, err := s.Connect(stale, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Meta: mcp.Meta{"traceparent": inbound}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}); err != nil {
		t.Fatal(err)
	}
	flush()
	var calls []otlptest.Span
	for _, sp := range rc.Spans() {
		if sp.Name == "tools/call echo" {
			calls = append(calls, sp)
		}
	}
	if len(calls) != 2 || len(seen) != 2 {
		t.Fatalf("want 2 tools/call echo spans and 2 calls; got %+v, %d calls", rc.Spans(), len(seen))
	}
	first, second := calls[0], calls[1]
	if first.TraceID != inTrace || first.ParentSpanID != inParent || first.Attrs["gen_ai.tool.name"] != "echo" || first.Attrs["mcp.method.name"] != "tools/call" {
		t.Errorf("the call with _meta: %+v", first)
	}
	if seen[0].TraceID().String() != inTrace || seen[0].SpanID().String() != first.SpanID {
		t.Errorf("the tool ran in %v, want the tools/call span %s", seen[0], first.SpanID)
	}
	staleTrace := trace.SpanContextFromContext(stale).TraceID().String()
	if second.ParentSpanID != "" || second.TraceID == staleTrace || second.TraceID == inTrace {
		t.Errorf("the call without _meta: %+v, want a new root span (the session's trace is %s)", second, staleTrace)
	}
}

// FuzzFromMeta: whatever a client puts in _meta, reading it never fails,
// and a trace context it accepts is written back as it came.
func FuzzFromMeta(f *testing.F) {
	f.Add(inbound, "congo=t61rcWkgMzE")
	f.Add("00-"+inTrace+"-"+inParent+"-00", "")
	f.Add("ff-"+inTrace+"-"+inParent+"-01", strings.Repeat("a=b,", 40))
	f.Add("00-00000000000000000000000000000000-"+inParent+"-01", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		ctx := FromMeta(context.Background(), map[string]any{"traceparent": tp, "tracestate": ts})
		sc := trace.SpanContextFromContext(ctx)
		out := InjectMap(ctx, nil)
		if !sc.IsValid() {
			if out != nil {
				t.Fatalf("no trace context read from %q, yet %v written", tp, out)
			}
			return
		}
		if !sc.IsRemote() {
			t.Fatal("the context read is not remote")
		}
		back := FromMeta(context.Background(), out)
		if got := trace.SpanContextFromContext(back); !got.Equal(sc) {
			t.Fatalf("%q read as %v, written as %v, read back as %v", tp, sc, out, got)
		}
	})
}

// BenchmarkOff is the cost of tracing when it is off: a span started and
// ended, a request through Middleware, and StartClient on a request.
func BenchmarkOff(b *testing.B) {
	ctx := context.Background()
	b.Run("span", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, s := Start(ctx, "x", Internal)
			s.SetString("k", "v")
			s.End(nil)
		}
	})
	b.Run("middleware", func(b *testing.B) {
		h := Middleware(func(*http.Request) string { return "/" }, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
	b.Run("client", func(b *testing.B) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream/", nil)
		b.ReportAllocs()
		for b.Loop() {
			StartClient(req, "up")(nil, nil)
		}
	})
}

// BenchmarkOn is the cost of the same with tracing on, exporting to a
// receiver in the process.
func BenchmarkOn(b *testing.B) {
	rc := otlptest.Start(b)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	shutdown, err := Setup(context.Background(), Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer shutdown(context.Background())
	ctx := context.Background()
	b.Run("span", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, s := Start(ctx, "x", Internal)
			s.SetString("k", "v")
			s.End(nil)
		}
	})
	b.Run("middleware", func(b *testing.B) {
		h := Middleware(func(*http.Request) string { return "/" }, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
}
