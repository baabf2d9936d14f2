package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// newApprovalServer serves POST /v1/invoke through a pipeline whose policy
// engine needs approval for ossa:test/wipe, with the approval routes
// mounted in their own mux (so the test does not depend on routeTable
// listing them) and X-Caphub-Approval put in the context as server.go is to
// do. It returns the server, the engine and how many times wipe ran.
func newApprovalServer(t *testing.T, now func() time.Time) (*httptest.Server, *policy.Engine, *atomic.Int32) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	svc := registry.NewService(st, registry.WithLogger(log))
	d := capability.Definition{URI: "ossa:test/wipe@1.0", Name: "wipe", Domain: "test", Version: "1.0.0", Stability: "stable",
		Description: "wipe a path", Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"}, Effects: []string{"destructive"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "wipe"}}}
	if _, err := svc.RegisterBatch(ctx, []capability.Definition{d}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	engine := policy.NewEngine(st, policy.Options{Tiers: policy.ResolverTiers(svc), Now: now})
	if err := engine.Policies().Put(ctx, policy.Policy{Agent: "ops", GrantedPermissions: []string{"*"}, AllowedEffects: []string{"destructive"}, RequireApproval: []string{"ossa:test/*"}}); err != nil {
		t.Fatal(err)
	}
	pipe := invoke.New(svc, []invoke.Binding{native.New(map[string]native.Handler{"wipe": func(context.Context, *invoke.Call) (any, error) {
		runs.Add(1)
		return map[string]any{"wiped": true}, nil
	}})}, invoke.Options{Policy: engine})
	srv := httptest.NewServer(New(svc, log, WithInvoker(pipe), WithApprovals(engine.Approvals())))
	t.Cleanup(srv.Close)
	return srv, engine, &runs
}

// do sends a request and decodes the JSON answer into a map.
func do(t *testing.T, method, url, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: decode: %v", method, url, err)
	}
	return resp.StatusCode, m
}

const wipeCall = `{"uri": "ossa:test/wipe@1", "input": {"path": "/tmp/x"}}`

func TestApprovalFlowREST(t *testing.T) {
	srv, _, runs := newApprovalServer(t, nil)
	ops := map[string]string{"X-Caphub-Agent": "ops"}

	status, body := do(t, "POST", srv.URL+"/v1/invoke", wipeCall, ops)
	if status != http.StatusAccepted || body["code"] != invoke.CodeApprovalNeeded {
		t.Fatalf("first call: %d %v", status, body)
	}
	id, _ := body["details"].(map[string]any)["approval_id"].(string)
	if !strings.HasPrefix(id, "apr_") {
		t.Fatalf("approval id %q in %v", id, body)
	}

	status, body = do(t, "GET", srv.URL+"/v1/approvals?status=pending", "", nil)
	items, _ := body["items"].([]any)
	if status != 200 || body["total"] != float64(1) || items[0].(map[string]any)["id"] != id || items[0].(map[string]any)["agent"] != "ops" {
		t.Fatalf("pending list: %d %v", status, body)
	}
	if status, body = do(t, "GET", srv.URL+"/v1/approvals?status=nope", "", nil); status != 400 {
		t.Errorf("bad status filter: %d %v", status, body)
	}
	if status, body = do(t, "GET", srv.URL+"/v1/approvals/apr_missing", "", nil); status != 404 {
		t.Errorf("missing approval: %d %v", status, body)
	}

	status, body = do(t, "POST", srv.URL+"/v1/approvals/"+id+"/approve", "", map[string]string{"X-Caphub-Agent": "alice"})
	if status != 200 || body["status"] != policy.StatusApproved || body["decided_by"] != "alice" {
		t.Fatalf("approve: %d %v", status, body)
	}
	if status, body = do(t, "POST", srv.URL+"/v1/approvals/"+id+"/deny", `{"reason": "too late"}`, nil); status != http.StatusConflict {
		t.Errorf("deny after approve: %d %v", status, body)
	}

	retry := map[string]string{"X-Caphub-Agent": "ops", ApprovalHeader: id}
	status, body = do(t, "POST", srv.URL+"/v1/invoke", wipeCall, retry)
	if status != 200 || body["output"].(map[string]any)["wiped"] != true || runs.Load() != 1 {
		t.Fatalf("approved retry: %d %v (runs %d)", status, body, runs.Load())
	}
	status, body = do(t, "POST", srv.URL+"/v1/invoke", wipeCall, retry)
	if status != http.StatusForbidden || body["code"] != invoke.CodeDenied || !strings.Contains(body["detail"].(string), "already used") || runs.Load() != 1 {
		t.Fatalf("second retry: %d %v (runs %d)", status, body, runs.Load())
	}

	status, body = do(t, "GET", srv.URL+"/v1/approvals/"+id, "", nil)
	if status != 200 || body["used_at"] == nil {
		t.Errorf("used approval: %d %v", status, body)
	}

	// The approval may come in the body instead of the header (the web UI).
	status, body = do(t, "POST", srv.URL+"/v1/invoke", wipeCall, ops)
	id2, _ := body["details"].(map[string]any)["approval_id"].(string)
	if status != http.StatusAccepted || id2 == "" || id2 == id {
		t.Fatalf("another call: %d %v", status, body)
	}
	long := `{"reason": "` + strings.Repeat("x", 2001) + `"}`
	if status, body = do(t, "POST", srv.URL+"/v1/approvals/"+id2+"/approve", long, nil); status != 400 || !strings.Contains(body["detail"].(string), "reason") {
		t.Errorf("approve with a reason over 2,000 bytes: %d %v", status, body)
	}
	// An approval keeps its reason (the web UI's and the CLI's --reason).
	if status, body = do(t, "POST", srv.URL+"/v1/approvals/"+id2+"/approve", `{"reason": "ops asked for it"}`, nil); status != 200 || body["reason"] != "ops asked for it" {
		t.Fatalf("approve %s with a reason: %d %v", id2, status, body)
	}
	withID := strings.Replace(wipeCall, "{", `{"approval_id": "`+id2+`", `, 1)
	if status, body = do(t, "POST", srv.URL+"/v1/invoke", withID, map[string]string{"X-Caphub-Agent": "ops", ApprovalHeader: id}); status != 400 {
		t.Errorf("body and header naming two approvals: %d %v", status, body)
	}
	status, body = do(t, "POST", srv.URL+"/v1/invoke", withID, ops)
	if status != 200 || body["output"].(map[string]any)["wiped"] != true || runs.Load() != 2 {
		t.Fatalf("retry with approval_id in the body: %d %v (runs %d)", status, body, runs.Load())
	}
}

func TestApprovalDenyREST(t *testing.T) {
	srv, _, runs := newApprovalServer(t, nil)
	ops := map[string]string{"X-Caphub-Agent": "ops"}
	_, body := do(t, "POST", srv.URL+"/v1/invoke", wipeCall, ops)
	id := body["details"].(map[string]any)["approval_id"].(string)
	status, body := do(t, "POST", srv.URL+"/v1/approvals/"+id+"/deny", `{"reason": "not in production"}`, map[string]string{"X-Caphub-Agent": "bob"})
	if status != 200 || body["status"] != policy.StatusDenied || body["reason"] != "not in production" {
		t.Fatalf("deny: %d %v", status, body)
	}
	status, body = do(t, "POST", srv.URL+"/v1/invoke", wipeCall, map[string]string{"X-Caphub-Agent": "ops", ApprovalHeader: id})
	if status != http.StatusForbidden || !strings.Contains(body["detail"].(string), "denied (decided by bob: not in production)") || runs.Load() != 0 {
		t.Fatalf("retry after deny: %d %v (runs %d)", status, body, runs.Load())
	}
}

func TestApprovalExpiryREST(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var offset atomic.Int64
	srv, _, _ := newApprovalServer(t, func() time.Time { return now.Add(time.Duration(offset.Load())) })
	_, body := do(t, "POST", srv.URL+"/v1/invoke", wipeCall, map[string]string{"X-Caphub-Agent": "ops"})
	id := body["details"].(map[string]any)["approval_id"].(string)
	offset.Store(int64(policy.DefaultApprovalTTL))
	status, body := do(t, "GET", srv.URL+"/v1/approvals?status=expired", "", nil)
	if status != 200 || body["total"] != float64(1) {
		t.Fatalf("expired list: %d %v", status, body)
	}
	if status, body = do(t, "POST", srv.URL+"/v1/approvals/"+id+"/approve", "", nil); status != http.StatusConflict || !strings.Contains(body["detail"].(string), "expired") {
		t.Errorf("approve expired: %d %v", status, body)
	}
}
