package delegation_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/server/rest"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/delegation"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// secondCaphub starts a real caphub REST server (another registry with its
// own pipeline) that can add two numbers.
func secondCaphub(t *testing.T) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := registry.NewService(st, registry.WithLogger(quiet))
	add := capability.Definition{
		URI: "ossa:math/add@1.0", Name: "add", Domain: "math", Version: "1.0.0", Description: "adds",
		Input:    capability.Schema{"type": "object", "required": []any{"a", "b"}, "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}},
		Output:   capability.Schema{"type": "object"},
		Errors:   []capability.ErrorDef{{Code: "OVERFLOW", Description: "too big", Retryable: false}},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "add"}},
	}
	if _, err := svc.Register(context.Background(), add); err != nil {
		t.Fatal(err)
	}
	p := invoke.New(svc, []invoke.Binding{native.New(map[string]native.Handler{
		"add": func(_ context.Context, c *invoke.Call) (any, error) {
			a, b := c.Input["a"].(int64), c.Input["b"].(int64)
			if a > 1000 {
				return nil, &invoke.Error{Code: "OVERFLOW", Message: "a is too big"}
			}
			return map[string]any{"sum": a + b}, nil
		},
	})}, invoke.Options{})
	hs := httptest.NewServer(rest.New(svc, quiet, rest.WithInvoker(p)))
	t.Cleanup(hs.Close)
	return hs.URL
}

func call(d *capability.DelegationBinding, input map[string]any) *invoke.Call {
	return &invoke.Call{URI: "ossa:local/add@1.0", Input: input, Definition: &capability.Definition{Bindings: capability.Bindings{Delegation: d}}}
}

func TestDelegateToAnotherCaphub(t *testing.T) {
	url := secondCaphub(t)
	b := delegation.New(delegation.Options{})
	out, err := b.Invoke(context.Background(), call(&capability.DelegationBinding{URL: url, Capability: "ossa:math/add@1.0"}, map[string]any{"a": 2, "b": 3}))
	if err != nil {
		t.Fatal(err)
	}
	if out.Output.(map[string]any)["sum"] != int64(5) || out.Meta["delegate_binding"] != "native" {
		t.Errorf("output %+v", out)
	}
	_, err = b.Invoke(context.Background(), call(&capability.DelegationBinding{URL: url, Capability: "ossa:math/add@1.0"}, map[string]any{"a": 2000, "b": 3}))
	var e *invoke.Error
	if !errors.As(err, &e) || e.Code != "OVERFLOW" || e.Retryable {
		t.Errorf("the remote declared error must come through: %v", err)
	}
	_, err = b.Invoke(context.Background(), call(&capability.DelegationBinding{URL: url, Capability: "ossa:math/nope@1.0"}, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNotFound {
		t.Errorf("unknown remote capability: %v", err)
	}
	_, err = b.Invoke(context.Background(), call(&capability.DelegationBinding{URL: "http://127.0.0.1:1"}, nil))
	if !errors.As(err, &e) || !e.Retryable {
		t.Errorf("unreachable delegate must be retryable: %v", err)
	}
}

// a2aAgent is a minimal A2A agent: message/send answers with the sum of the
// data part as a data part (or a failed task when asked).
func a2aAgent(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
			Params struct {
				Message struct {
					Role     string         `json:"role"`
					Metadata map[string]any `json:"metadata"`
					Parts    []struct {
						Kind string         `json:"kind"`
						Data map[string]any `json:"data"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != "message/send" {
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		m := req.Params.Message
		data := m.Parts[0].Data
		if data["fail"] == true {
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"kind": "task", "id": "t1", "status": map[string]any{"state": "failed", "message": map[string]any{"parts": []any{map[string]any{"kind": "text", "text": "cannot do it"}}}}}})
			return
		}
		sum := data["a"].(float64) + data["b"].(float64)
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
			"kind": "message", "role": "agent", "messageId": "m2",
			"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"sum": sum, "capability": m.Metadata["capability"], "role": m.Role}}}}})
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestDelegateToA2AAgent(t *testing.T) {
	url := a2aAgent(t)
	b := delegation.New(delegation.Options{Agents: map[string]string{"calculator": url}})
	out, err := b.Invoke(context.Background(), call(&capability.DelegationBinding{Agent: "calculator", Capability: "ossa:math/add@1.0"}, map[string]any{"a": 2, "b": 3}))
	if err != nil {
		t.Fatal(err)
	}
	o := out.Output.(map[string]any)
	if o["sum"] != int64(5) || o["capability"] != "ossa:math/add@1.0" || o["role"] != "user" {
		t.Errorf("output %v", o)
	}
	_, err = b.Invoke(context.Background(), call(&capability.DelegationBinding{Agent: url}, map[string]any{"fail": true}))
	var e *invoke.Error
	if !errors.As(err, &e) || e.Code != invoke.CodeUpstreamError {
		t.Errorf("failed task: %v", err)
	}
	_, err = b.Invoke(context.Background(), call(&capability.DelegationBinding{Agent: "unknown"}, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNoBinding {
		t.Errorf("unknown agent: %v", err)
	}
}

// TestDelegationReachAndToken: a URL a definition gives must be allowed
// (loopback only by default, redirects included), agents the operator
// configured are trusted wherever they are, and token_env sends a bearer
// token from caphub's environment.
func TestDelegationReachAndToken(t *testing.T) {
	ctx := context.Background()
	var gotAuth []string
	delegate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		if r.URL.Path == "/redirect/v1/invoke" {
			http.Redirect(w, r, "http://192.0.2.1/v1/invoke", http.StatusTemporaryRedirect)
			return
		}
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"title": "Unauthorized", "detail": "send a token"})
			return
		}
		if r.URL.Path == "/" { // an A2A endpoint
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"kind": "message", "parts": []any{map[string]any{"kind": "data", "data": map[string]any{"ok": true}}}}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"uri": "ossa:math/add@1.0", "binding": "native", "output": map[string]any{"sum": 5}})
	}))
	t.Cleanup(delegate.Close)
	env := map[string]string{"DELEGATE_TOKEN": "s3cret"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var e *invoke.Error

	b := delegation.New(delegation.Options{Getenv: getenv})
	out, err := b.Invoke(ctx, call(&capability.DelegationBinding{URL: delegate.URL, TokenEnv: "DELEGATE_TOKEN"}, nil))
	if err != nil || out.Output.(map[string]any)["sum"] != int64(5) {
		t.Fatalf("delegation with a token: %v %+v", err, out)
	}
	if gotAuth[len(gotAuth)-1] != "Bearer s3cret" {
		t.Errorf("Authorization sent: %q", gotAuth[len(gotAuth)-1])
	}
	if _, err := b.Invoke(ctx, call(&capability.DelegationBinding{URL: delegate.URL}, nil)); !errors.As(err, &e) || e.Code != "HTTP_401" {
		t.Errorf("without token_env: %v, want the delegate's 401", err)
	}
	n := len(gotAuth)
	if _, err := b.Invoke(ctx, call(&capability.DelegationBinding{URL: delegate.URL, TokenEnv: "NOT_SET"}, nil)); !errors.As(err, &e) || e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "$NOT_SET") {
		t.Errorf("token_env unset: %v, want NO_BINDING naming the variable", err)
	}

	// Not loopback, not allowed: refused before any connection.
	_, err = b.Invoke(ctx, call(&capability.DelegationBinding{URL: "http://192.0.2.1:8750"}, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "allowed hosts") {
		t.Errorf("a non-loopback delegate: %v, want NO_BINDING about the allowed hosts", err)
	}
	_, err = b.Invoke(ctx, call(&capability.DelegationBinding{Agent: "http://192.0.2.1:8750/a2a"}, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNoBinding {
		t.Errorf("a non-loopback A2A URL: %v, want NO_BINDING", err)
	}
	if len(gotAuth) != n {
		t.Errorf("refused delegations reached the delegate")
	}
	// A redirect out of the allow-list is refused.
	_, err = b.Invoke(ctx, call(&capability.DelegationBinding{URL: delegate.URL + "/redirect", TokenEnv: "DELEGATE_TOKEN"}, nil))
	if !errors.As(err, &e) || e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "redirect") {
		t.Errorf("redirect to a non-allowed host: %v, want NO_BINDING", err)
	}

	// With an allow-list that does not name loopback, a definition's URL to
	// it is refused, but the same endpoint configured as a named agent is
	// the operator's choice and is used.
	b = delegation.New(delegation.Options{Getenv: getenv, AllowedHosts: []string{"api.example.com"}, Agents: map[string]string{"ops": delegate.URL + "/"}})
	if _, err := b.Invoke(ctx, call(&capability.DelegationBinding{URL: delegate.URL}, nil)); !errors.As(err, &e) || e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "api.example.com") {
		t.Errorf("loopback outside the allow-list: %v", err)
	}
	out, err = b.Invoke(ctx, call(&capability.DelegationBinding{Agent: "ops", TokenEnv: "DELEGATE_TOKEN"}, nil))
	if err != nil || out.Output.(map[string]any)["ok"] != true {
		t.Errorf("a configured agent: %v %+v", err, out)
	}
}

// TestDelegationTraceContext: a delegation passes the call's trace context
// (here one a client brought, tracing off) in the traceparent header, to
// another caphub and to an A2A agent, and sends none when the call has
// none.
func TestDelegationTraceContext(t *testing.T) {
	got := make(chan string, 1)
	delegate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		if r.URL.Path == "/" { // an A2A endpoint
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"kind": "message", "parts": []any{map[string]any{"kind": "data", "data": map[string]any{"ok": true}}}}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"uri": "ossa:math/add@1.0", "binding": "native", "output": map[string]any{"sum": 5}})
	}))
	t.Cleanup(delegate.Close)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := tracing.Extract(context.Background(), http.Header{"Traceparent": {tp}})
	b := delegation.New(delegation.Options{Agents: map[string]string{"ops": delegate.URL + "/"}})
	for _, c := range []struct {
		what string
		d    *capability.DelegationBinding
		ctx  context.Context
		want string
	}{
		{"caphub", &capability.DelegationBinding{URL: delegate.URL}, traced, tp},
		{"caphub, untraced", &capability.DelegationBinding{URL: delegate.URL}, context.Background(), ""},
		{"A2A", &capability.DelegationBinding{Agent: "ops"}, traced, tp},
	} {
		if _, err := b.Invoke(c.ctx, call(c.d, nil)); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if tp := <-got; tp != c.want {
			t.Errorf("%s: the delegate got traceparent %q, want %q", c.what, tp, c.want)
		}
	}
}
