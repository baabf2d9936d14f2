package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestInvocationMetrics(t *testing.T) {
	m := New()
	m.ObserveInvocation("native", "", 2*time.Millisecond)
	m.ObserveInvocation("mcp", "TIMEOUT", time.Second)
	m.ObserveInvocation("", "NOT_FOUND", time.Millisecond)
	out := scrape(t, m)
	for _, want := range []string{
		`caphub_invocations_total{binding="native",outcome="ok"} 1`,
		`caphub_invocations_total{binding="mcp",outcome="error"} 1`,
		`caphub_invocations_total{binding="none",outcome="error"} 1`,
		`caphub_invocation_errors_total{code="TIMEOUT"} 1`,
		`caphub_invocation_duration_seconds_count{binding="mcp"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
}

func TestAgentMetrics(t *testing.T) {
	m := New()
	if err := m.Record("jobs_done", Counter, 2, map[string]string{"queue": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Record("jobs_done", Counter, 3, map[string]string{"queue": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Record("temperature", Gauge, 21.5, nil); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, m)
	if !strings.Contains(out, `jobs_done{queue="a"} 5`) || !strings.Contains(out, "temperature 21.5") {
		t.Errorf("exposition:\n%s", out)
	}
	cases := []struct {
		name, kind string
		value      float64
		labels     map[string]string
		err        string
	}{
		{"9bad", Counter, 1, nil, "must match"},
		{"caphub_x", Counter, 1, nil, "reserved"},
		{"ok", "summary", 1, nil, "use counter, gauge or histogram"},
		{"jobs_done", Gauge, 1, map[string]string{"queue": "a"}, "is a counter"},
		{"jobs_done", Counter, 1, map[string]string{"other": "a"}, "has the labels"},
		{"jobs_done", Counter, -1, map[string]string{"queue": "a"}, "can only increase"},
		{"x", Counter, 1, map[string]string{"__l": "a"}, "label name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := m.Record(c.name, c.kind, c.value, c.labels); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Record(%s, %s): %v, want %q", c.name, c.kind, err, c.err)
			}
		})
	}
}

func TestWatchAndRouteGroups(t *testing.T) {
	m := New()
	sessions := map[string]int{"memory": 3, "filesystem": 1}
	m.Watch(Sources{Sessions: func() map[string]int { return sessions }, Spawns: func() (int64, int64) { return 4, 1 }})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`caphub_gateway_sessions{upstream="memory"} 3`, `caphub_gateway_sessions{upstream="filesystem"} 1`,
		`caphub_upstream_spawns_total{outcome="ok"} 4`, `caphub_upstream_spawns_total{outcome="failed"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("lacks %s", want)
		}
	}
	for path, want := range map[string]string{
		"/registry/capabilities/a/b@1": "/registry/capabilities", "/registry/search": "/registry/search", "/mcp": "/mcp",
		"/mcp/agents/x": "/mcp/agents", "/mcp/servers/memory/sse": "/mcp/servers", "/registry/index.yaml": "/registry/index.yaml",
		"/mcpx": "other", "/etc/passwd": "other", "/v0/servers": "/v0",
	} {
		if got := RouteGroup(path); got != want {
			t.Errorf("RouteGroup(%q) = %q, want %q", path, got, want)
		}
	}
}

// Each request is counted in its route group, method and code's series;
// once a series was used, recording in it allocates nothing.
func TestObserveHTTP(t *testing.T) {
	m := New()
	for range 3 {
		m.ObserveHTTP("/registry/capabilities", "GET", 200, time.Millisecond)
	}
	m.ObserveHTTP("/registry/capabilities", "GET", 304, time.Millisecond)
	m.ObserveHTTP("/mcp", "POST", 200, time.Millisecond)
	out := scrape(t, m)
	for _, want := range []string{
		`caphub_http_request_duration_seconds_count{code="200",method="GET",route="/registry/capabilities"} 3`,
		`caphub_http_request_duration_seconds_count{code="304",method="GET",route="/registry/capabilities"} 1`,
		`caphub_http_request_duration_seconds_count{code="200",method="POST",route="/mcp"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s", want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { m.ObserveHTTP("/registry/capabilities", "GET", 200, time.Millisecond) }); n != 0 {
		t.Errorf("recording a request allocates %v times; want 0", n)
	}
}
