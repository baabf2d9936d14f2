package rest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/stats"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStatsRoute calls capabilities through a real pipeline recording to a
// real audit chain, then reads the overview: the counts from the stores and
// the calls from the chain, behind the auth middleware (scope read).
func TestStatsRoute(t *testing.T) {
	ctx := identity.With(context.Background(), identity.Caller{Actor: "setup"})
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(st, audit.WithSyncInvocations())
	svc := registry.NewService(st, registry.WithRecorder(log), registry.WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { log.Close(); svc.Close() })
	def := func(name, version string, req []any) capability.Definition {
		in := capability.Schema{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
		if req != nil {
			in["required"] = req
		}
		return capability.Definition{URI: "ossa:test/" + name + "@" + version, Name: name, Domain: "test", Version: version + ".0", Stability: "stable",
			Description: name + " things", Input: in,
			Output: capability.Schema{"type": "object"}, Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}}}
	}
	for _, d := range []capability.Definition{def("ok", "1.0", nil), def("ok", "2.0", []any{"n"}), def("wipe", "1.0", nil)} {
		if _, err := svc.RegisterBatch(ctx, []capability.Definition{d}); err != nil {
			t.Fatal(err)
		}
	}
	engine := policy.NewEngine(st, policy.Options{Tiers: policy.ResolverTiers(svc)})
	if err := engine.Policies().Put(ctx, policy.Policy{Agent: "*", GrantedPermissions: []string{"*"}, RequireApproval: []string{"ossa:test/wipe"}}); err != nil {
		t.Fatal(err)
	}
	pipe := invoke.New(svc, []invoke.Binding{native.New(map[string]native.Handler{
		"ok":   func(context.Context, *invoke.Call) (any, error) { return map[string]any{}, nil },
		"wipe": func(context.Context, *invoke.Call) (any, error) { return nil, errors.New("must not run") },
	})}, invoke.Options{Policy: engine, Recorder: log})
	toks := auth.New(st, log)
	_, reader, err := toks.Create(ctx, "reader", []auth.Scope{auth.ScopeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, caller, err := toks.Create(ctx, "caller", []auth.Scope{auth.ScopeInvoke}, 0)
	if err != nil {
		t.Fatal(err)
	}
	api := New(svc, slog.New(slog.DiscardHandler), WithInvoker(pipe), WithApprovals(engine.Approvals()), WithAudit(log))
	srv := httptest.NewServer(toks.Middleware(api.ScopeOf, api))
	t.Cleanup(srv.Close)
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	for _, call := range []struct {
		body   string
		status int
	}{
		{`{"uri": "ossa:test/ok@2", "input": {"n": 1}}`, 200},
		{`{"uri": "ossa:test/ok@2", "input": {"n": 2}}`, 200},
		{`{"uri": "ossa:test/ok@2", "input": {}}`, 422}, // INVALID_INPUT: an error
		{`{"uri": "ossa:test/wipe@1", "input": {}}`, 202},
	} {
		if status, body := do(t, "POST", srv.URL+"/v1/invoke", call.body, bearer(caller)); status != call.status {
			t.Fatalf("invoke %s: %d %v, want %d", call.body, status, body, call.status)
		}
	}

	if status, body := do(t, "GET", srv.URL+"/v1/stats", "", nil); status != http.StatusUnauthorized {
		t.Errorf("without a token: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/stats", "", bearer(caller)); status != http.StatusForbidden {
		t.Errorf("with an invoke-only token: %d %v", status, body)
	}
	status, body := do(t, "GET", srv.URL+"/v1/stats?window=2h&bucket=15m", "", bearer(reader))
	if status != 200 {
		t.Fatalf("stats: %d %v", status, body)
	}
	b, _ := json.Marshal(body)
	var got Stats
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Counts; c.Capabilities != 2 || c.Versions != 3 || c.Servers != 0 || c.Agents != 0 || c.PendingApprovals == nil || *c.PendingApprovals != 1 {
		t.Errorf("counts %+v (pending %v): want 2 capabilities, 3 versions, 1 pending approval", c, c.PendingApprovals)
	}
	calls := got.Calls
	if calls == nil || calls.Calls != 4 || calls.Errors != 1 || calls.Held != 1 || calls.Codes[invoke.CodeInvalidInput] != 1 || len(calls.Buckets) != 8 || calls.Bucket != "15m0s" {
		t.Fatalf("calls %+v: want 4 calls, 1 error (INVALID_INPUT), 1 held, 8 buckets of 15m", calls)
	}
	last := calls.Buckets[len(calls.Buckets)-1]
	if last.Calls != 4 || last.P95MS <= 0 {
		t.Errorf("the last bucket %+v: want the 4 calls, with a latency", last)
	}
	if len(calls.Capabilities) != 2 || calls.Capabilities[0].URI != "ossa:test/ok@2.0" || calls.Capabilities[0].Calls != 3 || calls.Capabilities[0].Errors != 1 ||
		calls.Capabilities[1].URI != "ossa:test/wipe@1.0" || calls.Capabilities[1].Held != 1 {
		t.Errorf("per capability %+v", calls.Capabilities)
	}
	if calls.HeadSeq < 7 || calls.FromSeq != 1 || calls.Partial {
		t.Errorf("head %d from %d partial %v", calls.HeadSeq, calls.FromSeq, calls.Partial)
	}
	// Bounded to the newest 2 events: partial.
	if status, body = do(t, "GET", srv.URL+"/v1/stats?max_events=2&window=1d", "", bearer(reader)); status != 200 || body["calls"].(map[string]any)["partial"] != true {
		t.Errorf("max_events=2: %d %v", status, body["calls"])
	}

	for _, bad := range []struct{ query, want string }{
		{"window=yesterday", "window="},
		{"bucket=0s", "bucket="},
		{"window=40d", "window"},
		{"window=30d&bucket=1m", "buckets"},
		{"max_events=0", "max_events"},
		{"max_events=1000000", "max_events"},
	} {
		status, body := do(t, "GET", srv.URL+"/v1/stats?"+bad.query, "", bearer(reader))
		if detail, _ := body["detail"].(string); status != 400 || !strings.Contains(detail, bad.want) {
			t.Errorf("%s: %d %v, want 400 about %s", bad.query, status, body, bad.want)
		}
	}
}

// TestRediscoverSaved discovers a real (in-process) MCP server over
// streamable HTTP, changes its tools and re-discovers it with no body: the
// saved connection is used and the plan lists the new, changed and
// vanished tools.
func TestRediscoverSaved(t *testing.T) {
	srv, _ := newTestServer(t)
	up := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	tool := func(name string, schema map[string]any) {
		up.AddTool(&mcp.Tool{Name: name, Description: "tool " + name, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	obj := func(props map[string]any, required ...any) map[string]any {
		o := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	str := map[string]any{"type": "string"}
	tool("get_note", obj(map[string]any{"id": str}, "id"))
	tool("drop_note", obj(map[string]any{"id": str}, "id"))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)

	if status, body := do(t, "POST", srv.URL+"/v1/servers/notes/discover", "", nil); status != http.StatusNotFound {
		t.Errorf("re-discovering an unsaved server: %d %v", status, body)
	}
	conn := `{"name": "notes", "transport": "http", "url": "` + hs.URL + `"}`
	status, body := do(t, "POST", srv.URL+"/v1/servers/notes/discover", conn, nil)
	if status != 200 || body["tools"] != float64(2) || body["error"] != nil {
		t.Fatalf("discover: %d %v", status, body)
	}
	tool("get_note", obj(map[string]any{"id": str, "rev": str}, "id", "rev")) // breaking: a new required input
	up.RemoveTools("drop_note")
	tool("list_notes", obj(map[string]any{}))

	status, body = do(t, "POST", srv.URL+"/v1/servers/notes/discover", "", nil)
	if status != 200 || body["error"] != nil {
		t.Fatalf("re-discover: %d %v", status, body)
	}
	plan, _ := body["plan"].(map[string]any)
	b, _ := json.Marshal(plan)
	for _, want := range []string{`"new":["mcp:notes/list_notes@1.0"]`, `"vanished":["mcp:notes/drop_note@1.0"]`, `get_note`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plan %s: want %s (report %v)", b, want, body)
		}
	}
	if changed, _ := plan["changed"].([]any); len(changed) != 1 {
		t.Errorf("changed %v: want get_note", plan["changed"])
	}
	status, body = do(t, "GET", srv.URL+"/v1/servers/notes", "", nil)
	if listing, _ := body["listing"].(map[string]any); status != 200 || len(listing["tools"].([]any)) != 2 {
		t.Errorf("the saved listing after re-discovery: %d %v", status, body)
	}
}

// FuzzStatsOptions: any window, bucket and max_events either are refused
// with a 400 or make options within the bounds (so the buckets a request
// can make stay bounded).
func FuzzStatsOptions(f *testing.F) {
	for _, s := range [][3]string{{"24h", "1h", ""}, {"7d", "6h", "10"}, {"", "", ""}, {"30d", "1m", "0"}, {"1d", "90s", "100000"}, {"-1h", "1h", "x"}, {"9999999d", "", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, window, bucket, maxEvents string) {
		q := url.Values{"window": {window}, "bucket": {bucket}, "max_events": {maxEvents}}
		r := httptest.NewRequest("GET", "/v1/stats?"+q.Encode(), nil)
		o, err := statsOptions(r)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) {
				t.Fatalf("%v: not a 400: %v", q, err)
			}
			return
		}
		if o.Window <= 0 || o.Window > stats.MaxWindow || o.Bucket < stats.MinBucket || o.Window/o.Bucket > stats.MaxBuckets || o.MaxEvents < 1 || o.MaxEvents > stats.DefaultMaxEvents {
			t.Fatalf("%v: accepted out of bounds: %+v", q, o)
		}
	})
}
