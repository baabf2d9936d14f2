package rest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// newAgentServer serves the whole API, agent routes included, on a real
// SQLite store with the built-ins registered.
func newAgentServer(t *testing.T) (*httptest.Server, registry.DocStore) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	svc := registry.NewService(st, registry.WithLogger(log))
	if _, err := svc.RegisterBatch(ctx, builtin.Definitions()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(svc, log))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return srv, st
}

// agentCall is call with a text body.
func agentCall(t *testing.T, srv *httptest.Server, method, path, contentType, body string) answer {
	t.Helper()
	return call(t, srv, method, path, contentType, []byte(body))
}

const restAgentYAML = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: calculator
spec:
  role: You are a careful calculator.
  capabilities:
    - ossa:everruns/current_time@1.0
    - ossa:everruns/test_math@1.0
`

const restMathPrompt = "You have access to math tools. Use them for calculations: add, subtract, multiply, divide."

// issuesOf returns "path|rule" of every issue of a problem document.
func issuesOf(t *testing.T, a answer) []string {
	t.Helper()
	var p Problem
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("not a problem document: %v\n%s", err, a.body)
	}
	var out []string
	for _, i := range p.Issues {
		out = append(out, i.Path+"|"+i.Rule)
	}
	return out
}

func wantStatus(t *testing.T, a answer, status int, what string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d:\n%s", what, a.status, status, a.body)
	}
	if status >= 400 && a.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, a.header.Get("Content-Type"))
	}
}

func TestAgentRoutes(t *testing.T) {
	srv, _ := newAgentServer(t)

	a := agentCall(t, srv, "PUT", "/v1/agents/calculator", "application/yaml", restAgentYAML)
	wantStatus(t, a, 200, "PUT YAML manifest")
	if m := a.json(t); m["id"] != "calculator" || m["system_prompt"] != "You are a careful calculator." || m["manifest"] == nil {
		t.Errorf("applied agent = %s", a.body)
	}

	// The same manifest as JSON, under another name.
	jsonManifest := `{"apiVersion":"ossa/v0.2.9","kind":"Agent","metadata":{"name":"abacus"},"spec":{"role":"Count.","capabilities":["ossa:everruns/noop@1.0"]}}`
	wantStatus(t, agentCall(t, srv, "PUT", "/v1/agents/abacus", "application/json", jsonManifest), 200, "PUT JSON manifest")

	a = agentCall(t, srv, "GET", "/v1/agents", "", "")
	wantStatus(t, a, 200, "GET /v1/agents")
	var list AgentList
	if err := json.Unmarshal(a.body, &list); err != nil || list.Total != 2 || len(list.Items) != 2 || list.Items[0].ID != "abacus" || list.Items[1].ID != "calculator" {
		t.Errorf("list = %s (%v)", a.body, err)
	}

	a = agentCall(t, srv, "GET", "/v1/agents/calculator", "", "")
	wantStatus(t, a, 200, "GET agent")

	a = agentCall(t, srv, "GET", "/v1/agents/calculator/capabilities", "", "")
	wantStatus(t, a, 200, "GET capabilities")
	if want := `{"items":[{"capability_id":"ossa:everruns/current_time@1.0","position":0},{"capability_id":"ossa:everruns/test_math@1.0","position":1}],"total":2}`; strings.TrimSpace(string(a.body)) != want {
		t.Errorf("capabilities:\n got %s\nwant %s", a.body, want)
	}

	// everruns PUT: array order → position, answered in everruns' shape.
	a = agentCall(t, srv, "PUT", "/v1/agents/calculator/capabilities", "application/json", `{"capabilities": ["test_math", "current_time"]}`)
	wantStatus(t, a, 200, "PUT capabilities")
	if want := `{"items":[{"capability_id":"test_math","position":0},{"capability_id":"current_time","position":1}],"total":2}`; strings.TrimSpace(string(a.body)) != want {
		t.Errorf("PUT capabilities:\n got %s\nwant %s", a.body, want)
	}

	a = agentCall(t, srv, "GET", "/v1/agents/calculator/config", "", "")
	wantStatus(t, a, 200, "GET config")
	var cfg struct {
		AgentID      string `json:"agent_id"`
		SystemPrompt string `json:"system_prompt"`
		Tools        []struct {
			Name        string         `json:"name"`
			URI         string         `json:"uri"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(a.body, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.AgentID != "calculator" || cfg.SystemPrompt != restMathPrompt+"\n\nYou are a careful calculator." {
		t.Errorf("config = %s", a.body)
	}
	var names []string
	for _, tl := range cfg.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "everruns_add,everruns_subtract,everruns_multiply,everruns_divide,everruns_get_current_time" || cfg.Tools[0].URI != "ossa:everruns/add@1.0" || cfg.Tools[0].InputSchema == nil {
		t.Errorf("tools = %s", got)
	}

	a = agentCall(t, srv, "DELETE", "/v1/agents/abacus", "", "")
	wantStatus(t, a, 204, "DELETE")
	wantStatus(t, agentCall(t, srv, "GET", "/v1/agents/abacus", "", ""), 404, "GET deleted agent")
	wantStatus(t, agentCall(t, srv, "DELETE", "/v1/agents/abacus", "", ""), 404, "DELETE again")
}

func TestAgentRouteRefusals(t *testing.T) {
	srv, docs := newAgentServer(t)
	wantStatus(t, agentCall(t, srv, "PUT", "/v1/agents/calculator", "application/yaml", restAgentYAML), 200, "PUT manifest")

	for _, tc := range []struct {
		name, method, path, ct, body string
		status                       int
		issue                        string // "path|rule" of an expected issue
		detail                       string // text the problem's detail must hold
	}{
		{"coming-soon bundle in a manifest", "PUT", "/v1/agents/calculator", "application/yaml", strings.Replace(restAgentYAML, "test_math", "research", 1), 422, "spec.capabilities[1]|agent-config:unavailable", "cannot be applied"},
		{"unknown capability in a manifest", "PUT", "/v1/agents/calculator", "application/yaml", strings.Replace(restAgentYAML, "test_math", "nothing", 1), 422, "spec.capabilities[1]|registry", ""},
		{"schema violation", "PUT", "/v1/agents/calculator", "application/yaml", strings.Replace(restAgentYAML, "kind: Agent", "kind: Robot", 1), 422, "kind|schema:#/properties/kind/enum", ""},
		{"name differs from path", "PUT", "/v1/agents/other", "application/yaml", restAgentYAML, 400, "", `metadata.name is "calculator" but the path names agent "other"`},
		{"not a manifest", "PUT", "/v1/agents/calculator", "application/json", `[1, 2`, 400, "", "not an OSSA agent manifest"},
		{"wrong content type", "PUT", "/v1/agents/calculator", "text/plain", restAgentYAML, 400, "", "Content-Type"},
		{"invalid id", "PUT", "/v1/agents/Bad%20Id", "application/yaml", restAgentYAML, 400, "", "invalid agent id"},
		{"unknown agent", "GET", "/v1/agents/ghost", "", "", 404, "", "agent ghost does not exist"},
		{"unknown agent capabilities", "GET", "/v1/agents/ghost/capabilities", "", "", 404, "", "ghost"},
		{"unknown agent config", "GET", "/v1/agents/ghost/config", "", "", 404, "", "ghost"},
		{"set on unknown agent", "PUT", "/v1/agents/ghost/capabilities", "application/json", `{"capabilities":["noop"]}`, 404, "", "ghost"},
		{"unknown capability", "PUT", "/v1/agents/calculator/capabilities", "application/json", `{"capabilities":["test_math","nope"]}`, 422, "nope|agent-config:unknown", "nope (position 1)"},
		{"unavailable capability", "PUT", "/v1/agents/calculator/capabilities", "application/json", `{"capabilities":["sandbox"]}`, 422, "sandbox|agent-config:unavailable", "sandbox"},
		{"duplicate capability", "PUT", "/v1/agents/calculator/capabilities", "application/json", `{"capabilities":["noop","noop"]}`, 422, "noop|agent-config:duplicate", "listed twice"},
		{"no capabilities list", "PUT", "/v1/agents/calculator/capabilities", "application/json", `{}`, 400, "", `no "capabilities" list`},
		{"unknown field", "PUT", "/v1/agents/calculator/capabilities", "application/json", `{"capability_ids":["noop"]}`, 400, "", "capability_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := agentCall(t, srv, tc.method, tc.path, tc.ct, tc.body)
			wantStatus(t, a, tc.status, tc.name)
			if tc.issue != "" {
				if got := issuesOf(t, a); !contains(got, tc.issue) {
					t.Errorf("issues %v lack %s", got, tc.issue)
				}
			}
			var p Problem
			if err := json.Unmarshal(a.body, &p); err != nil || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("problem detail does not say %q (%v):\n%s", tc.detail, err, a.body)
			}
			if tc.status == 422 && (!strings.HasSuffix(p.Type, "/invalid-agent") || !strings.Contains(p.Title, "agent")) {
				t.Errorf("a refused agent is problem %q %q, want invalid-agent with a title about the agent", p.Type, p.Title)
			}
		})
	}
	// Refusals changed nothing.
	a := agentCall(t, srv, "GET", "/v1/agents/calculator/capabilities", "", "")
	if !strings.Contains(string(a.body), `"total":2`) || !strings.Contains(string(a.body), "ossa:everruns/test_math@1.0") {
		t.Errorf("capabilities changed by a refused request: %s", a.body)
	}

	// An agent stored with a capability the registry no longer has: its
	// config is refused, naming it.
	broken := `{"id":"broken","system_prompt":"x","capabilities":[{"capability_id":"test_math","position":0},{"capability_id":"ossa:gone/tool@1.0","position":1}]}`
	if err := docs.PutDoc(context.Background(), "agent", "broken", []byte(broken)); err != nil {
		t.Fatal(err)
	}
	a = agentCall(t, srv, "GET", "/v1/agents/broken/config", "", "")
	wantStatus(t, a, 422, "config of a broken agent")
	if got := issuesOf(t, a); !contains(got, "ossa:gone/tool@1.0|agent-config:unknown") {
		t.Errorf("issues = %v", got)
	}
	if !strings.Contains(string(a.body), "the capabilities of agent broken cannot be applied") {
		t.Errorf("detail: %s", a.body)
	}
	// Beside the issues, what could be composed (the web UI shows it).
	var p Problem
	if err := json.Unmarshal(a.body, &p); err != nil || p.Partial == nil || p.Partial.SystemPrompt == "" || len(p.Partial.Tools) == 0 {
		t.Errorf("the 422 lacks the partial config: %v\n%s", err, a.body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
