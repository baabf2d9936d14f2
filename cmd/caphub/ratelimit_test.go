package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRateLimit checks serve's per-token limit end to end: a token
// past its burst gets 429 with Retry-After and a problem document naming
// the flag, another token is not held back, and /metrics counts it.
func TestServeRateLimit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "rl.db")
	var toks []string
	for _, name := range []string{"busy", "calm"} {
		code, out, errOut := caphub(t, "token", "create", name, "--scope", "read", "--scope", "admin", "--db", db)
		if code != 0 {
			t.Fatalf("token create: exit %d\n%s", code, errOut)
		}
		toks = append(toks, strings.TrimSpace(out))
	}
	p := startServe(t, db, "--rate-limit-token", "0.01", "--rate-limit-burst", "3")
	get := func(path, tok string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", p.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 3 {
		if resp := get("/registry/capabilities?limit=1", toks[0]); resp.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp := get("/registry/capabilities?limit=1", toks[0])
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "--rate-limit-token") {
		t.Fatalf("past the burst: %d, Retry-After %q, %s; want 429 naming --rate-limit-token", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp := get("/registry/capabilities?limit=1", toks[1]); resp.StatusCode != 200 {
		t.Fatalf("another token: %d; one token's limit held it back", resp.StatusCode)
	}
	resp = get("/metrics", toks[1])
	body, _ = io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `caphub_rate_limited_total{limit="token"} 1`) {
		t.Errorf("/metrics (%d) lacks caphub_rate_limited_total{limit=\"token\"} 1:\n%.3000s", resp.StatusCode, body)
	}
}
