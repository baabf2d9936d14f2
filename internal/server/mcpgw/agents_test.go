package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const agentManifest = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: calculator
  version: 1.0.0
spec:
  role: You are a careful calculator.
  capabilities:
    - ossa:everruns/noop@1.0
`

// agentFixture is caphub with the built-ins on SQLite, agent "calculator"
// given [current_time, test_math], and the agent endpoints served at
// /mcp/agents/.
type agentFixture struct {
	store  *sqlite.Store
	agents *agent.Agents
	inv    *recordingInvoker
	base   string // the server's URL + "/mcp/agents/"
}

func newAgentFixture(t *testing.T) *agentFixture {
	t.Helper()
	ctx := context.Background()
	st, svc, _, _, inv := newCaphub(t)
	log := quietLog()
	agents := agent.NewAgents(st, svc)
	m, issues, err := agent.ReadManifest("agent.yaml", []byte(agentManifest))
	if err != nil || len(issues) > 0 {
		t.Fatalf("read manifest: %v %v", err, issues)
	}
	if _, _, err := agents.Apply(ctx, m); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if _, err := agents.SetCapabilities(ctx, "calculator", []string{"current_time", "test_math"}); err != nil {
		t.Fatalf("set capabilities: %v", err)
	}

	ag := mcpgw.NewAgentGateways(agents, inv, st, mcpgw.Options{Version: "test", Log: log})
	mux := http.NewServeMux()
	mux.Handle("/mcp/agents/", ag.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		ag.Close()
		srv.Close()
		st.Close()
	})
	return &agentFixture{store: st, agents: agents, inv: inv, base: srv.URL + "/mcp/agents/"}
}

func TestAgentGatewayToolsAndCall(t *testing.T) {
	f := newAgentFixture(t)
	// The header claims another agent: the path's agent wins.
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.base + "calculator", HTTPClient: agentClient("someone-else")}, "", nil)
	tools := listTools(t, cs)
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"everruns_add", "everruns_divide", "everruns_get_current_time", "everruns_multiply", "everruns_subtract"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if uri := tools["everruns_add"].Meta[mcpgw.MetaURI]; uri != "ossa:everruns/add@1.0" {
		t.Errorf("everruns_add _meta uri = %v", uri)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "everruns_add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(text(res), "5") {
		t.Fatalf("add(2, 3) = %q (isError %v)", text(res), res.IsError)
	}
	if got := f.inv.lastCaller(); got != "calculator" {
		t.Errorf("caller = %q, want calculator", got)
	}
	// A tool of the registry the agent was not given is not callable.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "everruns_get_weather", Arguments: map[string]any{"location": "Paris"}})
	if err == nil && !res.IsError {
		t.Errorf("everruns_get_weather ran for an agent without it: %q", text(res))
	}
}

func TestAgentGatewayUnknownAgent(t *testing.T) {
	f := newAgentFixture(t)
	for _, path := range []string{"nobody", "Not_An_ID", "calculator/extra", ""} {
		resp, err := http.Post(f.base+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST /mcp/agents/%s: status %d, want 404", path, resp.StatusCode)
		}
	}
	// The SDK client fails to connect.
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	if cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.base + "nobody"}, nil); err == nil {
		cs.Close()
		t.Error("connecting to an unknown agent succeeded")
	}
}

func TestAgentGatewayHostCheck(t *testing.T) {
	f := newAgentFixture(t)
	req, _ := http.NewRequest("POST", f.base+"calculator", strings.NewReader("{}"))
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: status %d, want 403", resp.StatusCode)
	}
}

// TestAgentGatewayFollowsAgent checks that an update of the agent shows in
// its session (within the TTL), and that a configuration that stops
// composing is answered as an MCP error naming the problem.
func TestAgentGatewayFollowsAgent(t *testing.T) {
	f := newAgentFixture(t)
	ctx := context.Background()
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.base + "calculator"}, "", nil)
	if n := len(listTools(t, cs)); n != 5 {
		t.Fatalf("%d tools, want 5", n)
	}
	if _, err := f.agents.SetCapabilities(ctx, "calculator", []string{"current_time"}); err != nil {
		t.Fatal(err)
	}
	var tools map[string]*mcp.Tool
	eventually(t, func() bool {
		tools = listTools(t, cs)
		return len(tools) == 1 && tools["everruns_get_current_time"] != nil
	}, func() {
		t.Fatalf("tools after the update = %d, want only everruns_get_current_time", len(tools))
	})

	// Make the stored configuration fail to compose: an agent stored with
	// an unknown capability (SetCapabilities refuses one, so write the
	// document as another process might have).
	ag, err := f.agents.Get(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	ag.Capabilities = append(ag.Capabilities, agent.AgentCapability{CapabilityID: "no_such_capability", Position: 9})
	data, err := json.Marshal(ag)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutDoc(ctx, agent.DocKind, "calculator", data); err != nil {
		t.Fatal(err)
	}
	var rpcErr *jsonrpc.Error
	eventually(t, func() bool {
		_, err = cs.ListTools(ctx, nil)
		return errors.As(err, &rpcErr)
	}, func() {
		t.Fatalf("tools/list on a configuration that does not compose: err = %v, want a JSON-RPC error", err)
	})
	if rpcErr.Code != mcpgw.CodeAgentConfig || !strings.Contains(rpcErr.Message, "no_such_capability") || !strings.Contains(string(rpcErr.Data), `"code":"unknown"`) {
		t.Errorf("error = %d %q data %s", rpcErr.Code, rpcErr.Message, rpcErr.Data)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everruns_get_current_time", Arguments: map[string]any{}})
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcpgw.CodeAgentConfig {
		t.Errorf("tools/call on a configuration that does not compose: err = %v, want the configuration error", err)
	}
}
