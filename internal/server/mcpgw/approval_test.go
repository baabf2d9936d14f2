package mcpgw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requireApproval puts the real policy engine on f's pipeline, with a
// default policy that grants everything but needs a human's approval for
// ossa:everruns/add.
func requireApproval(t *testing.T, f *fixture) *policy.Approvals {
	t.Helper()
	e := policy.NewEngine(f.store, policy.Options{Log: quietLog()})
	if err := e.Policies().Put(context.Background(), policy.Policy{Agent: policy.DefaultAgent, GrantedPermissions: []string{"*"}, AllowedEffects: []string{"*"},
		RequireApproval: []string{"ossa:everruns/add"}}); err != nil {
		t.Fatal(err)
	}
	f.pipe = invoke.New(f.svc, f.bindings, invoke.Options{Policy: e})
	f.inv.next = f.pipe
	return e.Approvals()
}

// pendingApproval checks that res is APPROVAL_REQUIRED, says how to retry
// over MCP, and returns its approval id.
func pendingApproval(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("call ran without approval: %s", text(res))
	}
	te := structured(t, res)
	details, _ := te["details"].(map[string]any)
	id, _ := details["approval_id"].(string)
	if te["code"] != invoke.CodeApprovalNeeded || id == "" {
		t.Fatalf("want APPROVAL_REQUIRED with an approval id, got %s", text(res))
	}
	if !strings.Contains(text(res), `"_meta": {"dev.caphub/approval": "`+id+`"}`) {
		t.Errorf("the error does not say how to retry over MCP: %s", text(res))
	}
	return id
}

// TestApprovalRetryOverMCP runs the human-approval flow over MCP: a call
// needing approval is held (APPROVAL_REQUIRED with an id), retrying before
// a decision or with another input is refused, and once approved the same
// call retried with the id in _meta runs, once.
func TestApprovalRetryOverMCP(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, mcpgw.Options{})
	approvals := requireApproval(t, f)
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, HTTPClient: agentClient("calculator")}, "", nil)
	args := map[string]any{"a": 2, "b": 3}
	retry := func(id string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everruns_add", Arguments: args, Meta: mcp.Meta{mcpgw.MetaApproval: id}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	id := pendingApproval(t, call(t, cs, "everruns_add", args))
	if res := retry(id, args); !res.IsError || !strings.Contains(text(res), "still pending") {
		t.Errorf("retry before the decision: %s, want still pending", text(res))
	}
	if _, err := approvals.Approve(ctx, id, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if res := retry(id, map[string]any{"a": 2, "b": 4}); !res.IsError || !strings.Contains(text(res), "another input") {
		t.Errorf("retry with another input: %s, want refused", text(res))
	}
	if res := retry(id, args); res.IsError || !strings.Contains(text(res), "5") {
		t.Fatalf("approved retry: %s (isError %v), want 5", text(res), res.IsError)
	}
	if res := retry(id, args); !res.IsError || structured(t, res)["code"] != invoke.CodeDenied {
		t.Errorf("second retry with a used approval: %s, want DENIED", text(res))
	}
	// A call that needs no approval is not affected.
	if res := call(t, cs, "everruns_multiply", map[string]any{"a": 2, "b": 3}); res.IsError {
		t.Errorf("multiply: %s", text(res))
	}
}

// TestApprovalRetrySearchMode retries through invoke_capability, whose
// approval_id argument carries the id (an agent that only sees the two
// search-mode tools has no other way to pass it).
func TestApprovalRetrySearchMode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, mcpgw.Options{Mode: mcpgw.ModeSearch})
	approvals := requireApproval(t, f)
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, HTTPClient: agentClient("calculator")}, "", nil)
	in := map[string]any{"uri": "ossa:everruns/add@1.0", "input": map[string]any{"a": 2, "b": 3}}
	id := pendingApproval(t, call(t, cs, mcpgw.ToolInvokeCapability, in))
	if _, err := approvals.Approve(ctx, id, "alice", ""); err != nil {
		t.Fatal(err)
	}
	in["approval_id"] = id
	res := call(t, cs, mcpgw.ToolInvokeCapability, in)
	if res.IsError {
		t.Fatalf("approved retry through invoke_capability: %s", text(res))
	}
	if out, _ := structured(t, res)["output"].(map[string]any); out["result"] != 5.0 {
		t.Errorf("approved retry output %v, want result 5", structured(t, res))
	}
}
