package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeMetrics checks the series /metrics serves after real traffic:
// registry operations with their latency, HTTP requests by route group
// (never by raw path), the audit writer's commits and queue, the
// registry cache's hits, and the front's sessions and spawns.
func TestServeMetrics(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	if code, _, errOut := caphub(t, "capability", "register", writeFile(t, "echo.yaml", echoYAML), "--db", db); code != 0 {
		t.Fatalf("register: exit %d\n%s", code, errOut)
	}
	p := startServe(t, db)
	for _, path := range []string{
		"/registry/capabilities/test/echo@1.0.0", "/registry/capabilities/test/echo@1.0.0", "/registry/search?q=echo",
		"/registry/resolve?uri=ossa:test/echo@1", "/registry/capabilities/no/such-thing-" + strings.Repeat("x", 20),
	} {
		resp, err := http.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// An invocation's audit event goes through the audit writer.
	inv, err := http.Post(p.url+"/v1/invoke", "application/json", strings.NewReader(`{"uri": "ossa:everruns/add@1.0", "input": {"a": 2, "b": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	inv.Body.Close()
	if inv.StatusCode != 200 {
		t.Fatalf("invoke: %d", inv.StatusCode)
	}
	var resp *http.Response
	for range 50 { // the writer commits within its group delay
		if resp, err = http.Get(p.url + "/metrics"); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `caphub_audit_commit_duration_seconds_count{outcome="ok"}`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`caphub_registry_operation_duration_seconds_count{op="search",outcome="ok"} 1`,
		`caphub_registry_operation_duration_seconds_count{op="resolve",outcome="ok"} `,
		`caphub_http_request_duration_seconds_count{code="200",method="GET",route="/registry/capabilities"}`,
		`caphub_http_request_duration_seconds_count{code="404",method="GET",route="/registry/capabilities"} 1`,
		`caphub_audit_commit_duration_seconds_count{outcome="ok"}`,
		`caphub_audit_queue_depth `,
		`caphub_registry_cache_hits_total `,
		`caphub_upstream_spawns_total{outcome="ok"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`caphub_registry_cache_hits_total (\d+)`).FindStringSubmatch(body); m == nil || m[1] == "0" {
		t.Errorf("the second GET of one version was not a cache hit: %v", m)
	}
	if strings.Contains(body, "such-thing") {
		t.Error("a raw request path became a label")
	}
}
