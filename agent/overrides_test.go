package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/httpbind"
)

// who is an HTTP service that answers every request with its own name.
func who(t *testing.T, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"served_by":%q}`, name)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lookupDef is ossa:test/lookup at a version, bound over HTTP to url.
func lookupDef(version, url string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: capability.NewURI("ossa", "test", "lookup", v).String(), Name: "lookup", Domain: "test", Version: version,
		Description: "Say which service answered.", Input: capability.Schema{"type": "object"},
		Output:   capability.Schema{"type": "object", "required": []any{"served_by"}},
		Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: url}},
	}
}

// looker is an agent whose manifest binds ossa:test/lookup@1.0 to url.
func looker(url string) string {
	return `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: looker
  version: 1.0.0
spec:
  role: You look things up.
  capabilities:
    - ossa:test/lookup@1.0
  capability_bindings:
    "ossa:test/lookup@1.0":
      http:
        method: GET
        url: ` + url + `
`
}

// TestCapabilityBindingsAtInvocation checks OSSA §10.1 end to end: an
// agent's capability_bindings replace the registered bindings when that
// agent invokes (and only then), for the versions its key names, and a
// re-applied manifest applies to the next call.
func TestCapabilityBindingsAtInvocation(t *testing.T) {
	ctx := context.Background()
	a, svc := newAgents(t)
	registered, agentsOwn := who(t, "registered"), who(t, "agent's own")
	if _, err := svc.RegisterBatch(ctx, []capability.Definition{lookupDef("1.0.0", registered), lookupDef("1.3.0", registered)}); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, a, looker(agentsOwn))
	// The overrides cache reads a clock the test steps (see the second
	// process below).
	var elapsed atomic.Int64
	a.SetOverridesClock(func() time.Time { return time.Now().Add(time.Duration(elapsed.Load())) })

	var records []invoke.Record
	p := invoke.New(svc, []invoke.Binding{httpbind.New(httpbind.Options{})}, invoke.Options{
		Recorder:  recorderFunc(func(r invoke.Record) { records = append(records, r) }),
		Overrides: a.Overrides(),
	})
	call := func(caller, uri string) string {
		t.Helper()
		res, err := p.Invoke(identity.With(ctx, identity.Caller{Agent: caller}), invoke.Request{URI: uri})
		if err != nil {
			t.Fatalf("invoke %s as %q: %v", uri, caller, err)
		}
		return res.Output.(map[string]any)["served_by"].(string)
	}

	if got := call("looker", "ossa:test/lookup@1.0"); got != "agent's own" {
		t.Errorf("the agent's call was served by %q, want its own binding", got)
	}
	if from := records[len(records)-1].BindingsFrom; from != "agent:looker" {
		t.Errorf("record says bindings_from %q, want agent:looker", from)
	}
	for _, caller := range []string{"", "someone-else", "token:ci"} {
		if got := call(caller, "ossa:test/lookup@1.0"); got != "registered" {
			t.Errorf("caller %q was served by %q, want the registered binding", caller, got)
		}
		if from := records[len(records)-1].BindingsFrom; from != "" {
			t.Errorf("caller %q: bindings_from %q, want none", caller, from)
		}
	}

	// The key @1.0 covers the compatible 1.3 the URI resolves to, not 2.0.
	if _, err := svc.RegisterBatch(ctx, []capability.Definition{lookupDef("2.0.0", registered)}); err != nil {
		t.Fatal(err)
	}
	if got := call("looker", "ossa:test/lookup@1.3"); got != "agent's own" {
		t.Errorf("@1.3 as the agent: served by %q, want its own binding", got)
	}
	if got := call("looker", "ossa:test/lookup@2.0"); got != "registered" {
		t.Errorf("@2.0 as the agent: served by %q, want the registered binding (the key names major 1)", got)
	}

	// Re-applying without the binding applies to the very next call.
	m := looker(agentsOwn)
	applyYAML(t, a, m[:strings.Index(m, "  capability_bindings:")])
	if got := call("looker", "ossa:test/lookup@1.0"); got != "registered" {
		t.Errorf("after re-apply without bindings: served by %q, want the registered binding", got)
	}

	// Another process sharing the database (here: another Agents over the
	// same store) sees a change within a second.
	other := agent.NewAgents(svc.Store(), svc)
	applyYAML(t, other, looker(agentsOwn))
	elapsed.Add(int64(1100 * time.Millisecond))
	if got := call("looker", "ossa:test/lookup@1.0"); got != "agent's own" {
		t.Errorf("a second after another process applied the binding: served by %q, want the agent's own", got)
	}

	// Deleting the agent drops its bindings at once.
	if err := a.Delete(ctx, "looker"); err != nil {
		t.Fatal(err)
	}
	if got := call("looker", "ossa:test/lookup@1.0"); got != "registered" {
		t.Errorf("after delete: served by %q, want the registered binding", got)
	}
}

type recorderFunc func(invoke.Record)

func (f recorderFunc) RecordInvocation(_ context.Context, r invoke.Record) { f(r) }
