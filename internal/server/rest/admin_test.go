package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// adminEnv is a server with the administration routes behind the auth
// middleware, as caphub serve mounts them, and a token of each kind.
type adminEnv struct {
	srv                   *httptest.Server
	log                   *audit.Log
	admin, reader, writer string // secrets: admin, read, publish+invoke
}

func newAdminEnv(t *testing.T) *adminEnv {
	t.Helper()
	ctx := identity.With(context.Background(), identity.Caller{Actor: "setup"})
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(st)
	svc := registry.NewService(st, registry.WithRecorder(log))
	t.Cleanup(func() { log.Close(); svc.Close() })
	toks := auth.New(st, log)
	e := &adminEnv{log: log}
	for _, tk := range []struct {
		secret *string
		name   string
		scopes []auth.Scope
	}{{&e.admin, "root", []auth.Scope{auth.ScopeAdmin}}, {&e.reader, "reader", []auth.Scope{auth.ScopeRead}}, {&e.writer, "writer", []auth.Scope{auth.ScopePublish, auth.ScopeInvoke}}} {
		if _, *tk.secret, err = toks.Create(ctx, tk.name, tk.scopes, 0); err != nil {
			t.Fatal(err)
		}
	}
	api := New(svc, slog.New(slog.DiscardHandler), WithPolicies(policy.NewPolicies(st, log)), WithTokens(toks), WithAudit(log))
	e.srv = httptest.NewServer(toks.Middleware(api.ScopeOf, api))
	t.Cleanup(e.srv.Close)
	return e
}

// call sends a request with a token; a body starting with "{" is JSON,
// any other YAML.
func (e *adminEnv) call(t *testing.T, token, method, path, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		ct := "application/yaml"
		if strings.HasPrefix(body, "{") {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b, resp.Header}
}

// events returns the audit events of a kind, by the chain's own reader.
func (e *adminEnv) events(t *testing.T, kind string) []map[string]any {
	t.Helper()
	list, err := e.log.List(context.Background(), chainFilter(kind))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range list {
		var data map[string]any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		data["@actor"] = ev.Actor
		out = append(out, data)
	}
	return out
}

func TestAdminRoutesNeedTheirScope(t *testing.T) {
	e := newAdminEnv(t)
	tests := []struct {
		method, path, body string
		scope              auth.Scope
	}{
		{"GET", "/v1/policies", "", auth.ScopeRead},
		{"GET", "/v1/policies/*", "", auth.ScopeRead},
		{"PUT", "/v1/policies/scanner", "allowed_effects: ['*']", auth.ScopeAdmin},
		{"DELETE", "/v1/policies/scanner", "", auth.ScopeAdmin},
		{"GET", "/v1/tokens", "", auth.ScopeAdmin},
		{"POST", "/v1/tokens", `{"name": "x", "scopes": ["read"]}`, auth.ScopeAdmin},
		{"DELETE", "/v1/tokens/0123456789ab", "", auth.ScopeAdmin},
		{"GET", "/v1/audit", "", auth.ScopeAdmin},
		{"GET", "/v1/audit/verify", "", auth.ScopeAdmin},
	}
	for _, tt := range tests {
		what := tt.method + " " + tt.path
		if a := e.call(t, "", tt.method, tt.path, tt.body); a.status != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", what, a.status)
		}
		lacking := []string{e.writer}
		if tt.scope == auth.ScopeAdmin {
			lacking = append(lacking, e.reader)
		}
		for _, tok := range lacking {
			a := e.call(t, tok, tt.method, tt.path, tt.body)
			expect(t, a, http.StatusForbidden, what+" with a token lacking "+string(tt.scope))
			if !strings.Contains(string(a.body), `"`+string(tt.scope)+`"`) {
				t.Errorf("%s: the refusal does not name scope %s: %s", what, tt.scope, a.body)
			}
		}
	}
	// The OpenAPI document lists them with their scope's routes.
	doc := e.call(t, "", "GET", "/openapi.json", "")
	for _, p := range []string{`"/v1/policies/{agent}"`, `"/v1/tokens/{id}"`, `"/v1/audit"`, `"/v1/audit/verify"`} {
		if !bytes.Contains(doc.body, []byte(p)) {
			t.Errorf("the OpenAPI document lacks %s", p)
		}
	}
}

func TestPolicyRoutes(t *testing.T) {
	e := newAdminEnv(t)
	a := e.call(t, e.admin, "PUT", "/v1/policies/scanner", "granted_permissions: [network.http]\nallowed_effects: [network]\nmin_trust_tier: community\n")
	expect(t, a, http.StatusOK, "PUT a YAML policy")
	a = e.call(t, e.admin, "PUT", "/v1/policies/*", `{"agent": "*", "granted_permissions": ["*"], "allowed_effects": ["*"]}`)
	expect(t, a, http.StatusOK, "PUT the default policy as JSON")
	a = e.call(t, e.reader, "GET", "/v1/policies/scanner", "")
	expect(t, a, http.StatusOK, "GET a policy with a read token")
	if p := a.json(t); p["agent"] != "scanner" || p["min_trust_tier"] != "community" || p["allowed_effects"].([]any)[0] != "network" {
		t.Errorf("GET the policy = %v", p)
	}
	a = e.call(t, e.reader, "GET", "/v1/policies?limit=1", "")
	expect(t, a, http.StatusOK, "list the policies")
	page := a.json(t)
	if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["agent"] != "*" || page["total"] != float64(2) || page["next_cursor"] == nil {
		t.Fatalf("first page of policies = %s", a.body)
	}
	a = e.call(t, e.reader, "GET", "/v1/policies?limit=1&cursor="+url.QueryEscape(page["next_cursor"].(string)), "")
	if items := a.json(t)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["agent"] != "scanner" {
		t.Errorf("second page of policies = %s", a.body)
	}
	refused := []struct{ path, body, want string }{
		{"/v1/policies/scanner", `{"agent": "other", "allowed_effects": []}`, `the path names \"scanner\"`},
		{"/v1/policies/scanner", "min_trust_tier: golden", "golden"},
		{"/v1/policies/scanner", "grants: ['*']", "unknown field"},
		{"/v1/policies/bad%20id", "allowed_effects: []", "bad id"},
		{"/v1/policies/scanner", "allowed_effects: [" + strings.Repeat("x,", policy.MaxDocumentSize/2) + "x]", "larger than a policy"},
	}
	for _, r := range refused {
		a := e.call(t, e.admin, "PUT", r.path, r.body)
		expect(t, a, http.StatusBadRequest, "PUT "+r.path+" "+r.body[:min(len(r.body), 30)])
		if !strings.Contains(string(a.body), r.want) {
			t.Errorf("PUT %.40s: %s, want it to say %s", r.body, a.body, r.want)
		}
	}
	expect(t, e.call(t, e.admin, "DELETE", "/v1/policies/scanner", ""), http.StatusNoContent, "DELETE a policy")
	expect(t, e.call(t, e.reader, "GET", "/v1/policies/scanner", ""), http.StatusNotFound, "GET a deleted policy")
	expect(t, e.call(t, e.admin, "DELETE", "/v1/policies/scanner", ""), http.StatusNotFound, "DELETE it again")

	set := e.events(t, audit.KindPolicySet)
	if len(set) != 2 || set[0]["agent"] != "scanner" || set[0]["@actor"] != "token:root" {
		t.Errorf("policy_set events = %v, want scanner's then *'s, by token:root", set)
	}
	if del := e.events(t, audit.KindPolicyDeleted); len(del) != 1 || del[0]["agent"] != "scanner" || del[0]["@actor"] != "token:root" {
		t.Errorf("policy_deleted events = %v", del)
	}
}

func TestTokenRoutes(t *testing.T) {
	e := newAdminEnv(t)
	a := e.call(t, e.admin, "POST", "/v1/tokens", `{"name": "ci-bot", "scopes": ["read"], "expires_in": "720h"}`)
	expect(t, a, http.StatusCreated, "create a token")
	created := a.json(t)
	secret, _ := created["token"].(string)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(secret, auth.Prefix+id+"_") || created["expires_at"] == nil || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created token = %s (Cache-Control %q)", a.body, a.header.Get("Cache-Control"))
	}
	expect(t, e.call(t, secret, "GET", "/v1/policies", ""), http.StatusOK, "the new token reads")
	expect(t, e.call(t, secret, "GET", "/v1/tokens", ""), http.StatusForbidden, "the new token does not administer")

	a = e.call(t, e.admin, "GET", "/v1/tokens", "")
	expect(t, a, http.StatusOK, "list the tokens")
	if strings.Contains(string(a.body), secret) || strings.Contains(string(a.body), "sha256") {
		t.Fatalf("the token list shows a secret or its hash: %s", a.body)
	}
	if l := a.json(t); l["total"] != float64(4) || !strings.Contains(string(a.body), `"name":"ci-bot"`) || !strings.Contains(string(a.body), `"state":"active"`) {
		t.Errorf("token list = %s", a.body)
	}
	for _, body := range []string{`{"name": "ci-bot", "scopes": ["read"]}`, `{"name": "x", "scopes": ["root"]}`, `{"name": "x", "scopes": []}`, `{"name": "x y", "scopes": ["read"]}`, `{"name": "x", "scopes": ["read"], "expires_in": "-1h"}`, `{"name": "x", "scopes": ["read"], "secret": "mine"}`} {
		expect(t, e.call(t, e.admin, "POST", "/v1/tokens", body), http.StatusBadRequest, "create "+body)
	}

	a = e.call(t, e.admin, "DELETE", "/v1/tokens/"+id, "")
	expect(t, a, http.StatusOK, "revoke the token")
	if a.json(t)["state"] != "revoked" {
		t.Errorf("revoked token = %s", a.body)
	}
	expect(t, e.call(t, secret, "GET", "/v1/policies", ""), http.StatusUnauthorized, "the revoked token")
	expect(t, e.call(t, e.admin, "DELETE", "/v1/tokens/ffffffffffff", ""), http.StatusNotFound, "revoke an unknown token")

	if ev := e.events(t, audit.KindTokenCreated); len(ev) != 4 || ev[3]["name"] != "ci-bot" || ev[3]["@actor"] != "token:root" {
		t.Errorf("token_created events = %v", ev)
	}
	if ev := e.events(t, audit.KindTokenRevoked); len(ev) != 1 || ev[0]["token"] != id || ev[0]["@actor"] != "token:root" {
		t.Errorf("token_revoked events = %v", ev)
	}
	list, _ := e.log.List(context.Background(), chainFilter(""))
	for _, ev := range list {
		if strings.Contains(string(ev.Data), secret) {
			t.Fatalf("an audit event holds the secret: %s", ev.Data)
		}
	}
}

func TestAuditRoutes(t *testing.T) {
	e := newAdminEnv(t)
	for _, agent := range []string{"a", "b", "c"} {
		expect(t, e.call(t, e.admin, "PUT", "/v1/policies/"+agent, "allowed_effects: []"), http.StatusOK, "set a policy")
	}
	a := e.call(t, e.admin, "GET", "/v1/audit?kind=policy_set&actor=token:root&limit=2", "")
	expect(t, a, http.StatusOK, "list policy_set events")
	var page AuditList
	if err := json.Unmarshal(a.body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.NextCursor == "" || a.header.Get("Link") == "" {
		t.Fatalf("first page = %s", a.body)
	}
	a = e.call(t, e.admin, "GET", "/v1/audit?kind=policy_set&actor=token:root&limit=2&cursor="+url.QueryEscape(page.NextCursor), "")
	var next AuditList
	if err := json.Unmarshal(a.body, &next); err != nil {
		t.Fatal(err)
	}
	if len(next.Items) != 1 || next.NextCursor != "" || next.Items[0].Seq <= page.Items[1].Seq || !strings.Contains(string(next.Items[0].Data), `"c"`) {
		t.Errorf("second page = %s", a.body)
	}
	// head_seq names the chain's last event: after_seq=head_seq-1 lists it.
	if next.HeadSeq != next.Items[0].Seq || page.HeadSeq != next.HeadSeq {
		t.Errorf("head_seq %d and %d, want the last event %d", page.HeadSeq, next.HeadSeq, next.Items[0].Seq)
	}
	a = e.call(t, e.admin, "GET", fmt.Sprintf("/v1/audit?after_seq=%d", next.HeadSeq-1), "")
	var last AuditList
	if err := json.Unmarshal(a.body, &last); err != nil || len(last.Items) != 1 || last.Items[0].Seq != next.HeadSeq {
		t.Errorf("after_seq=head_seq-1 = %s", a.body)
	}
	first := page.Items[0]
	a = e.call(t, e.admin, "GET", "/v1/audit?since="+url.QueryEscape(first.Time.Format("2006-01-02T15:04:05.999999999Z07:00"))+"&until="+url.QueryEscape(page.Items[1].Time.Format("2006-01-02T15:04:05.999999999Z07:00")), "")
	if err := json.Unmarshal(a.body, &next); err != nil || len(next.Items) != 1 || next.Items[0].Seq != first.Seq {
		t.Errorf("since the first policy_set until the second = %s", a.body)
	}
	for _, q := range []string{"actor=nobody", "kind=invocation"} {
		a = e.call(t, e.admin, "GET", "/v1/audit?"+q, "")
		if err := json.Unmarshal(a.body, &next); err != nil || len(next.Items) != 0 {
			t.Errorf("%s = %s, want no event", q, a.body)
		}
	}
	for _, q := range []string{"since=yesterday", "until=2026-13-01T00:00:00Z", "after_seq=-1", "cursor=bm9wZQ", "limit=1001"} {
		expect(t, e.call(t, e.admin, "GET", "/v1/audit?"+q, ""), http.StatusBadRequest, "GET /v1/audit?"+q)
	}

	a = e.call(t, e.admin, "GET", "/v1/audit/verify", "")
	expect(t, a, http.StatusOK, "verify")
	v := a.json(t)
	if v["ok"] != true || v["from_seq"] != float64(1) || !strings.Contains(v["message"].(string), "audit chain intact") || v["registrations"] == nil {
		t.Errorf("verify = %s", a.body)
	}
}

// chainFilter selects the events of a kind ("" every one).
func chainFilter(kind string) chain.Filter { return chain.Filter{Kind: kind} }

func FuzzAuditFilter(f *testing.F) {
	f.Add("kind=invocation&actor=token:x&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00.5Z&limit=10")
	f.Add("cursor=YXVkaXQAMTI&after_seq=3")
	f.Add("cursor=YXVkaXQALTE&limit=0")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/v1/audit", nil)
		r.URL.RawQuery = query
		flt, err := auditFilterFrom(r)
		if err != nil {
			return
		}
		if flt.Limit < 1 || flt.Limit > MaxPageSize || flt.AfterSeq < 0 {
			t.Fatalf("query %q passed as limit %d, after_seq %d", query, flt.Limit, flt.AfterSeq)
		}
	})
}
