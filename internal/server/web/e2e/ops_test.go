package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/store/sqlite"
)

// opsBrowse runs one scenario of ops.mjs (the operator pages) against the
// site, as browse runs browser.mjs's.
func (s *site) opsBrowse(scenario string, params map[string]any) report {
	return s.run("ops.mjs", scenario, params)
}

// api calls the site's REST API with a token and decodes the JSON answer.
func (s *site) api(token, method, path, body string) (int, map[string]any) {
	s.tb.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewBufferString(body))
	if err != nil {
		s.tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.tb.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		s.tb.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, m
}

const calculatorAgent = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: calculator
  description: Does sums carefully.
spec:
  role: You are a careful calculator.
  capabilities:
    - ossa:everruns/current_time@1.0
    - ossa:everruns/test_math@1.0
`

// TestOperatorPages drives the operator pages against a real caphub with
// real calls: the overview's charts drawn from them; a real npm MCP server
// (server-memory over stdio) saved, listed and re-discovered; an agent's
// composed config, and one whose capability is gone (its issues beside
// what could be composed); a call held by a policy, approved and run to
// completion from the Approvals page, another denied with a reason; the
// audit chain filtered and verified, from the genesis and, after a prune,
// from its checkpoint. Screenshots of each page, at laptop and phone
// widths, go to .cache/screenshots/.
func TestOperatorPages(t *testing.T) {
	chromiumPath(t)
	testpeers.NPMPackage(t, "playwright-core")
	testpeers.Node22(t)
	node := testpeers.Node(t)
	memory := filepath.Join(testpeers.NPMPackage(t, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	s := newSite(t)
	s.register()
	s.caphub("discover", "mcp", "memory", "--command", node, "--arg", memory)
	manifest := filepath.Join(s.dir, "calculator.yaml")
	if err := os.WriteFile(manifest, []byte(calculatorAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	s.caphub("agent", "apply", manifest)
	s.caphub("policy", "set", "*", "--permission", "*", "--effect", "*", "--require-approval", "ossa:everruns/multiply")
	admin := s.caphub("token", "create", "ui-admin", "--scope", "admin")
	reader := s.caphub("token", "create", "ui-reader", "--scope", "read")
	// An agent stored with a capability the registry does not have (as
	// after a database restore): its config cannot be composed.
	st, err := sqlite.Open(context.Background(), s.db)
	if err != nil {
		t.Fatal(err)
	}
	broken := `{"id":"broken","system_prompt":"Mind the gap.","capabilities":[{"capability_id":"ossa:everruns/test_math@1.0","position":0},{"capability_id":"ossa:gone/tool@1.0","position":1}],"updated_at":"2026-11-01T00:00:00Z"}`
	if err := st.PutDoc(context.Background(), "agent", "broken", []byte(broken)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// Re-discovery over the API runs the saved program: the operator allows it.
	s.serve("--allow-command", node)

	// Real calls: three sums, one invalid input, two held for approval.
	for _, b := range []string{"1", "2", "3"} {
		if status, body := s.api(admin, "POST", "/v1/invoke", `{"uri": "ossa:everruns/add@1", "input": {"a": 1, "b": `+b+`}}`); status != 200 {
			t.Fatalf("add: %d %v", status, body)
		}
	}
	if status, body := s.api(admin, "POST", "/v1/invoke", `{"uri": "ossa:everruns/add@1", "input": {"a": "x", "b": 1}}`); status != 422 {
		t.Fatalf("invalid add: %d %v", status, body)
	}
	var held []string
	for _, in := range []string{`{"a": 6, "b": 7}`, `{"a": 2, "b": 21}`} {
		status, body := s.api(admin, "POST", "/v1/invoke", `{"uri": "ossa:everruns/multiply@1", "input": `+in+`}`)
		id, _ := body["details"].(map[string]any)["approval_id"].(string)
		if status != http.StatusAccepted || id == "" {
			t.Fatalf("multiply: %d %v", status, body)
		}
		held = append(held, id)
	}
	// Invocations are queued for the chain: wait for the six.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := s.api(reader, "GET", "/v1/stats?window=1h&bucket=5m", "")
		if calls, _ := body["calls"].(map[string]any); calls != nil && calls["calls"] == float64(6) {
			break
		}
		if time.Now().After(deadline) {
			// Say which events the chain holds (seen once: 4 held calls
			// recorded for the 2 made).
			_, events := s.api(admin, "GET", "/v1/audit?kind=invocation", "")
			b, _ := json.MarshalIndent(events["items"], "", " ")
			t.Fatalf("the stats never counted the 6 calls: %v\nthe chain's invocation events:\n%s", body["calls"], b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	t.Run("overview", func(t *testing.T) {
		s.tb = t
		r := s.opsBrowse("overview", map[string]any{"token": admin})
		figures := str(r, "figures")
		for _, want := range []string{"capabilities", "1\nMCP servers", "2\nagents", "2\npending approvals", "6\ncalls", "16.7 %\nerror rate (1 error)"} {
			if !strings.Contains(figures, want) {
				t.Errorf("the counts lack %q:\n%s", want, figures)
			}
		}
		if n, _ := r.Checks["charts"].(float64); n != 3 {
			t.Errorf("%v charts drawn, want 3 (per capability, calls and error rate, latency)", r.Checks["charts"])
		}
		if n, _ := r.Checks["bars"].(float64); n < 3 {
			t.Errorf("%v call bars, want one per capability and per bucket with calls", r.Checks["bars"])
		}
		if n, _ := r.Checks["lines"].(float64); n < 3 {
			t.Errorf("%v points of error rate and latency, want some", r.Checks["lines"])
		}
		if labels := fmt.Sprint(r.Checks["barLabels"]); !strings.Contains(labels, "everruns/add@1.0") || !strings.Contains(labels, "everruns/multiply@1.0") {
			t.Errorf("the per-capability chart names %s", labels)
		}
		if a := str(r, "activity"); !strings.Contains(a, "APPROVAL_REQUIRED") || !strings.Contains(a, "by token:ui-admin") {
			t.Errorf("recent activity: %s", a)
		}
		// At a phone's width, and with a read-only token (no audit: said so).
		s.opsBrowse("overview", map[string]any{"token": admin, "width": 390, "height": 844, "suffix": "-phone"})
		r = s.opsBrowse("overview", map[string]any{"token": reader, "suffix": "-reader", "noActivity": true})
		if a := str(r, "activity"); !strings.Contains(a, "need a token with the admin scope") {
			t.Errorf("a read-only token's recent activity: %q", a)
		}
	})

	t.Run("servers", func(t *testing.T) {
		s.tb = t
		r := s.opsBrowse("servers", map[string]any{"token": admin, "server": "memory", "newServer": "notes", "command": node + " " + memory})
		if d := str(r, "discovered"); !strings.Contains(d, "Discovered notes: 9 tools") || !strings.Contains(d, "9 new") || !strings.Contains(d, "notes/read_graph@1.0") {
			t.Errorf("discovering a new server from the form: %s", d)
		}
		if l := str(r, "listAfter"); !strings.Contains(l, "notes\tstdio") {
			t.Errorf("the list after discovering notes: %s", l)
		}
		if l := str(r, "list"); !strings.Contains(l, "memory\tstdio") || !strings.Contains(l, "\t9\t") {
			t.Errorf("the saved server list: %s", l)
		}
		if tools := str(r, "tools"); !strings.Contains(tools, "create_entities") || !strings.Contains(tools, "memory-server") || !strings.Contains(tools, "read-only") {
			t.Errorf("the server's tools: %s", tools)
		}
		s.opsBrowse("servers", map[string]any{"token": admin, "server": "memory", "width": 390, "height": 844, "suffix": "-phone"})
		// Both saved now, by name.
		if _, body := s.api(admin, "GET", "/v1/servers", ""); body["total"] != float64(2) {
			t.Errorf("saved servers after discovering one from the page: %v", body)
		}
		if rep := str(r, "report"); !strings.Contains(rep, "Discovered memory: 9 tools") || !strings.Contains(rep, "0 new") || !strings.Contains(rep, "9 unchanged") {
			t.Errorf("the re-discovery report: %s", rep)
		}
	})

	t.Run("agents", func(t *testing.T) {
		s.tb = t
		r := s.opsBrowse("agents", map[string]any{"token": admin, "agent": "calculator", "broken": "broken"})
		s.opsBrowse("agents", map[string]any{"token": admin, "agent": "calculator", "broken": "broken", "width": 390, "height": 844, "suffix": "-phone"})
		if p := str(r, "prompt"); !strings.Contains(p, "math tools") || !strings.HasSuffix(p, "You are a careful calculator.") {
			t.Errorf("the composed system prompt (capabilities' additions, then the agent's own): %q", p)
		}
		tables := fmt.Sprint(r.Checks["tables"])
		if !strings.Contains(tables, "0\tossa:everruns/current_time@1.0") || !strings.Contains(tables, "1\tossa:everruns/test_math@1.0") || !strings.Contains(tables, "everruns_divide") {
			t.Errorf("capabilities in position order and tools: %s", tables)
		}
		if p := str(r, "problems"); !strings.Contains(p, "ossa:gone/tool@1.0") || !strings.Contains(p, "unknown") || !strings.Contains(p, "422") {
			t.Errorf("the broken agent's issues: %s", p)
		}
		if b := fmt.Sprint(r.Checks["brokenTables"]); !strings.Contains(b, "everruns_add") || !strings.Contains(b, "unknown") {
			t.Errorf("the broken agent's partial config: %s", b)
		}
	})

	t.Run("approvals", func(t *testing.T) {
		s.tb = t
		r := s.opsBrowse("approvals", map[string]any{"token": admin, "approval": held[0], "deny": held[1]})
		if p := str(r, "pending"); strings.Count(p, "pending") < 2 || !strings.Contains(p, `require_approval "ossa:everruns/multiply"`) || strings.Contains(p, "null") {
			t.Errorf("the pending queue: %s", p)
		}
		if id := str(r, "firstID"); id != held[1] {
			t.Errorf("#/approvals?id=%s shows %s first", held[1], id)
		}
		if res := str(r, "result"); !strings.Contains(res, `"result": 42`) || !strings.Contains(res, "Completed") {
			t.Errorf("the approved call's result: %s", res)
		}
		if a := str(r, "after"); !strings.Contains(a, "Ran") || !strings.Contains(a, "by token:ui-admin") {
			t.Errorf("the approval after its call ran: %s", a)
		}
		if d := str(r, "denied"); !strings.Contains(d, "not during the freeze") || !strings.Contains(d, "denied") {
			t.Errorf("the denied approval: %s", d)
		}
		// The API agrees: one call ran, once.
		_, ap := s.api(admin, "GET", "/v1/approvals/"+held[0], "")
		if ap["status"] != "approved" || ap["used_at"] == nil || ap["reason"] != "checked the input" {
			t.Errorf("approval %s: %v", held[0], ap)
		}
		_, ap = s.api(admin, "GET", "/v1/approvals/"+held[1], "")
		if ap["status"] != "denied" || ap["reason"] != "not during the freeze" {
			t.Errorf("approval %s: %v", held[1], ap)
		}
		if h := str(r, "history"); !strings.Contains(h, "denied") || !strings.Contains(h, "approved") {
			t.Errorf("the history: %s", h)
		}
	})

	t.Run("audit", func(t *testing.T) {
		s.tb = t
		r := s.opsBrowse("audit", map[string]any{"token": admin})
		if h := str(r, "hash"); h != "#/audit?kind=invocation" {
			t.Errorf("the filter is not in the address: %q", h)
		}
		kinds, _ := r.Checks["kinds"].([]any)
		if len(kinds) < 7 {
			t.Errorf("invocation events listed: %v, want the 7 calls", kinds)
		}
		for _, k := range kinds {
			if k != "invocation" {
				t.Errorf("filtered by kind invocation, a row of kind %v", k)
			}
		}
		// A filter answered after the one that replaced it shows nothing.
		if n, _ := r.Checks["staleTables"].(float64); n != 1 {
			t.Errorf("after two quick filters the page holds %v tables, want 1 (the late answer was drawn too)", r.Checks["staleTables"])
		}
		if ks, _ := r.Checks["staleKinds"].([]any); len(ks) != len(kinds) || slices.ContainsFunc(ks, func(k any) bool { return k != "invocation" }) {
			t.Errorf("after two quick filters (registered, then invocation) the rows are of kinds %v, want the %d invocations", ks, len(kinds))
		}
		// Newest: the last 50 events of the chain, of those the filter keeps.
		if h := str(r, "newestHash"); !strings.Contains(h, "kind=invocation") || !strings.Contains(h, "after_seq=") {
			t.Errorf("newest events: %q", h)
		}
		if seqs, _ := r.Checks["newestSeqs"].([]any); len(seqs) != len(kinds) {
			t.Errorf("the newest 50 events hold the %d calls, listed %v", len(kinds), seqs)
		}
		if v := str(r, "verify"); !strings.Contains(v, "The chain is intact") || !strings.Contains(v, "event 1, the genesis") || !strings.Contains(v, strings.Repeat("0", 64)) {
			t.Errorf("verify: %s", v)
		}
		s.opsBrowse("audit", map[string]any{"token": admin, "width": 390, "height": 844, "suffix": "-phone"})
		// After a prune, it verifies from the checkpoint.
		s.caphub("audit", "prune", "--max-events", "10")
		r = s.opsBrowse("audit", map[string]any{"token": admin, "suffix": "-pruned"})
		if v := str(r, "verify"); !strings.Contains(v, "The chain is intact") || !strings.Contains(v, "after the checkpoint of the last prune") || !strings.Contains(v, "Pruned before") {
			t.Errorf("verify after a prune: %s", v)
		}
	})
}
