package policy_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	svc    *registry.Service
	pipe   *invoke.Pipeline
	engine *policy.Engine
	audit  *audit.Log
	clock  *clock
	runs   map[string]int
	mu     sync.Mutex
}

func (e *env) ran(name string) int { e.mu.Lock(); defer e.mu.Unlock(); return e.runs[name] }

// newEnv registers capabilities on a real SQLite store (the "sketchy" one
// gets the untrusted tier, the others community) and returns a pipeline
// with the policy engine installed.
func newEnv(t *testing.T, opts policy.Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := registry.NewService(st, registry.WithVerifier(func(_ context.Context, d *capability.Definition) (string, error) {
		if d.Name == "sketchy" {
			return "untrusted", nil
		}
		return "community", nil
	}))
	defs := []capability.Definition{
		def("plain", nil, nil),
		def("fetch", []string{"network.http"}, []string{"network"}),
		def("wipe", nil, []string{"destructive"}),
		def("sketchy", nil, nil),
	}
	if _, err := svc.RegisterBatch(ctx, defs); err != nil {
		t.Fatal(err)
	}
	e := &env{svc: svc, clock: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, runs: map[string]int{}}
	handlers := map[string]native.Handler{}
	for _, d := range defs {
		name := d.Name
		handlers[name] = func(_ context.Context, c *invoke.Call) (any, error) {
			e.mu.Lock()
			e.runs[name]++
			e.mu.Unlock()
			return map[string]any{"ok": true}, nil
		}
	}
	e.audit = audit.New(st)
	t.Cleanup(func() { e.audit.Close() })
	opts.Tiers = policy.ResolverTiers(svc)
	opts.Audit = e.audit
	opts.Now = e.clock.now
	e.engine = policy.NewEngine(st, opts)
	e.pipe = invoke.New(svc, []invoke.Binding{native.New(handlers)}, invoke.Options{Policy: e.engine})
	return e
}

func def(name string, perms, effects []string) capability.Definition {
	return capability.Definition{
		URI: "ossa:test/" + name + "@1.0", Name: name, Domain: "test", Version: "1.0.0", Stability: "stable",
		Description: "test capability " + name, Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Permissions: perms, Effects: effects,
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

func (e *env) call(ctx context.Context, caller, name string, input map[string]any) (*invoke.Result, error) {
	who := identity.From(ctx)
	who.Agent = caller
	return e.pipe.Invoke(identity.With(ctx, who), invoke.Request{URI: "ossa:test/" + name + "@1", Input: input})
}

func (e *env) put(t *testing.T, p policy.Policy) {
	t.Helper()
	if err := e.engine.Policies().Put(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func invErr(t *testing.T, err error, code string, wants ...string) *invoke.Error {
	t.Helper()
	var ie *invoke.Error
	if !errors.As(err, &ie) {
		t.Fatalf("want an *invoke.Error %s, got %v", code, err)
	}
	if ie.Code != code {
		t.Fatalf("code %s, want %s: %v", ie.Code, code, err)
	}
	for _, w := range wants {
		if !strings.Contains(ie.Message, w) {
			t.Errorf("message %q does not say %q", ie.Message, w)
		}
	}
	return ie
}

func TestNoPolicyAllowsAll(t *testing.T) {
	e := newEnv(t, policy.Options{})
	for _, name := range []string{"plain", "fetch", "wipe", "sketchy"} {
		if _, err := e.call(context.Background(), "a", name, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDenyPermission(t *testing.T) {
	e := newEnv(t, policy.Options{})
	e.put(t, policy.Policy{Agent: "a", GrantedPermissions: []string{"contacts"}, AllowedEffects: []string{"*"}})
	_, err := e.call(context.Background(), "a", "fetch", nil)
	invErr(t, err, invoke.CodeDenied, `policy of agent "a": capability needs permission "network.http", which is not granted (granted: contacts)`)
	if e.ran("fetch") != 0 {
		t.Error("a denied call ran")
	}
	// A prefix grant covers it.
	e.put(t, policy.Policy{Agent: "a", GrantedPermissions: []string{"network.*"}, AllowedEffects: []string{"*"}})
	if _, err := e.call(context.Background(), "a", "fetch", nil); err != nil {
		t.Errorf("network.* should grant network.http: %v", err)
	}
}

func TestDenyEffect(t *testing.T) {
	e := newEnv(t, policy.Options{})
	e.put(t, policy.Policy{Agent: "a", GrantedPermissions: []string{"*"}, AllowedEffects: []string{"network"}})
	_, err := e.call(context.Background(), "a", "wipe", nil)
	invErr(t, err, invoke.CodeDenied, `effect "destructive" is not allowed`, `policy of agent "a"`)
	if _, err := e.call(context.Background(), "a", "fetch", nil); err != nil {
		t.Errorf("allowed effect refused: %v", err)
	}
}

func TestDenyMinTier(t *testing.T) {
	e := newEnv(t, policy.Options{})
	e.put(t, policy.Policy{Agent: policy.DefaultAgent, GrantedPermissions: []string{"*"}, AllowedEffects: []string{"*"}, MinTrustTier: "community"})
	_, err := e.call(context.Background(), "b", "sketchy", nil)
	invErr(t, err, invoke.CodeDenied, `trust tier "untrusted" is below the minimum "community"`, `default policy "*" (agent "b" has none of its own)`)
	if _, err := e.call(context.Background(), "b", "plain", nil); err != nil {
		t.Errorf("community capability refused: %v", err)
	}
}

func TestAllowAndAudit(t *testing.T) {
	e := newEnv(t, policy.Options{})
	e.put(t, policy.Policy{Agent: "a", GrantedPermissions: []string{"network.http"}, AllowedEffects: []string{"network"}, MinTrustTier: "community"})
	ctx := context.Background()
	if _, err := e.call(ctx, "a", "fetch", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call(ctx, "a", "wipe", nil); err == nil {
		t.Fatal("wipe allowed")
	}
	if e.ran("fetch") != 1 || e.ran("wipe") != 0 {
		t.Errorf("runs %v", e.runs)
	}
	if err := e.audit.Flush(ctx); err != nil { // decisions are enqueued, not waited for
		t.Fatal(err)
	}
	evs, err := e.audit.List(ctx, chain.Filter{Kind: audit.KindPolicyDecision})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || !strings.Contains(string(evs[0].Data), `"decision":"allow"`) || !strings.Contains(string(evs[1].Data), `"decision":"deny"`) ||
		!strings.Contains(string(evs[1].Data), `"rule":"effect"`) || evs[1].Actor != "a" || evs[1].Capability != "ossa:test/wipe@1.0" {
		t.Errorf("policy decisions: %+v", evs)
	}
}

func TestPolicyValidate(t *testing.T) {
	e := newEnv(t, policy.Options{})
	for _, p := range []policy.Policy{{Agent: "Bad Agent"}, {Agent: "a", MinTrustTier: "gold"}, {Agent: "a", RequireApproval: []string{"ossa:[x/y"}}} {
		if err := e.engine.Policies().Put(context.Background(), p); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("%+v: want ErrInvalid, got %v", p, err)
		}
	}
}

func TestMatchURI(t *testing.T) {
	for _, c := range []struct {
		pat, uri string
		want     bool
	}{
		{"ossa:test/fetch", "ossa:test/fetch@1.0", true},
		{"ossa:test/fetch@1", "ossa:test/fetch@1.0", true},
		{"ossa:test/fetch@1.0", "ossa:test/fetch@1.0", true},
		{"ossa:test/fetch@2", "ossa:test/fetch@1.0", false},
		{"ossa:test/fetch@1.1", "ossa:test/fetch@1.0", false},
		{"ossa:test/*", "ossa:test/fetch@1.0", true},
		{"ossa:*/fe*", "ossa:test/fetch@1.0", true},
		{"ossa:other/*", "ossa:test/fetch@1.0", false},
		{"*", "ossa:test/fetch@1.0", false},
		{"ossa:test/fetc", "ossa:test/fetch@1.0", false},
	} {
		t.Run(c.pat+"~"+c.uri, func(t *testing.T) {
			if got := policy.MatchURI(c.pat, c.uri); got != c.want {
				t.Errorf("MatchURI(%q, %q) = %v", c.pat, c.uri, got)
			}
		})
	}
}

func approvalID(t *testing.T, err error, wants ...string) string {
	t.Helper()
	ie := invErr(t, err, invoke.CodeApprovalNeeded, wants...)
	id, _ := ie.Details["approval_id"].(string)
	if id == "" {
		t.Fatalf("no approval_id in %v", ie.Details)
	}
	return id
}

func TestApprovalFlow(t *testing.T) {
	e := newEnv(t, policy.Options{})
	e.put(t, policy.Policy{Agent: "a", GrantedPermissions: []string{"*"}, AllowedEffects: []string{"*"}, RequireApproval: []string{"ossa:test/wipe"}})
	ctx := context.Background()
	in := map[string]any{"path": "/tmp/x"}
	if _, err := e.call(ctx, "a", "plain", nil); err != nil {
		t.Fatalf("a capability no pattern matches needs no approval: %v", err)
	}
	_, err := e.call(ctx, "a", "wipe", in)
	id := approvalID(t, err, `require_approval "ossa:test/wipe"`, "needs human approval")
	ap := e.engine.Approvals()

	// Retried while pending: still APPROVAL_REQUIRED, same id, nothing ran.
	_, err = e.call(identity.WithApproval(ctx, id), "a", "wipe", in)
	if got := approvalID(t, err, "still pending"); got != id {
		t.Errorf("pending retry gave approval %s, want %s", got, id)
	}
	pending, err := ap.List(ctx, policy.StatusPending)
	if err != nil || len(pending) != 1 || pending[0].ID != id || pending[0].Agent != "a" || pending[0].URI != "ossa:test/wipe@1.0" || pending[0].Input["path"] != "/tmp/x" {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	if _, err := ap.Approve(ctx, id, "alice", "checked the path"); err != nil {
		t.Fatal(err)
	}
	if _, err := ap.Deny(ctx, id, "bob", "late"); !errors.Is(err, policy.ErrDecided) {
		t.Errorf("deny after approve: %v", err)
	}
	// Another input, another agent: refused, and the approval stays usable.
	_, err = e.call(identity.WithApproval(ctx, id), "a", "wipe", map[string]any{"path": "/"})
	invErr(t, err, invoke.CodeDenied, "another input")
	e.put(t, policy.Policy{Agent: "c", GrantedPermissions: []string{"*"}, AllowedEffects: []string{"*"}, RequireApproval: []string{"ossa:test/*"}})
	_, err = e.call(identity.WithApproval(ctx, id), "c", "wipe", in)
	invErr(t, err, invoke.CodeDenied, `not for agent "c"`)

	if _, err := e.call(identity.WithApproval(ctx, id), "a", "wipe", in); err != nil {
		t.Fatalf("approved call: %v", err)
	}
	if e.ran("wipe") != 1 {
		t.Errorf("wipe ran %d times", e.ran("wipe"))
	}
	_, err = e.call(identity.WithApproval(ctx, id), "a", "wipe", in)
	invErr(t, err, invoke.CodeDenied, "already used", "one call")
	if e.ran("wipe") != 1 {
		t.Errorf("wipe ran %d times after reuse", e.ran("wipe"))
	}
	got, err := ap.Get(ctx, id)
	if err != nil || got.Status != policy.StatusApproved || got.DecidedBy != "alice" || got.Reason != "checked the path" || got.UsedAt == nil {
		t.Errorf("approval after use: %+v %v", got, err)
	}
	evs, _ := e.audit.List(ctx, chain.Filter{Kind: audit.KindApproval})
	if len(evs) != 1 || evs[0].Actor != "alice" || !strings.Contains(string(evs[0].Data), `"decision":"approved"`) || !strings.Contains(string(evs[0].Data), `"reason":"checked the path"`) {
		t.Errorf("approval events: %+v", evs)
	}
	_, err = e.call(identity.WithApproval(ctx, "apr_nope"), "a", "wipe", in)
	invErr(t, err, invoke.CodeDenied, "apr_nope does not exist")
}

// TestToolPolicyRequiresApproval: a capability whose everruns tool policy
// is requires_approval is held for approval for any caller, even one no
// policy governs; auto (or no tool policy) runs at once; an unknown value
// fails closed.
func TestToolPolicyRequiresApproval(t *testing.T) {
	withPolicy := func(v any) *capability.Definition {
		d := def("x", nil, nil)
		d.Metadata = map[string]any{"everruns": map[string]any{"policy": v}}
		return &d
	}
	for i, c := range []struct {
		d    *capability.Definition
		want string
	}{
		{nil, capability.ToolPolicyAuto},
		{&capability.Definition{}, capability.ToolPolicyAuto},
		{withPolicy("auto"), capability.ToolPolicyAuto},
		{withPolicy("Auto"), capability.ToolPolicyAuto},
		{withPolicy("requires_approval"), capability.ToolPolicyRequiresApproval},
		{withPolicy("RequiresApproval"), capability.ToolPolicyRequiresApproval},
		{withPolicy("require-aproval"), capability.ToolPolicyRequiresApproval},
		{withPolicy(true), capability.ToolPolicyRequiresApproval},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := capability.ToolPolicy(c.d); got != c.want {
				t.Errorf("ToolPolicy(%v) = %s, want %s", c.d, got, c.want)
			}
		})
	}

	e := newEnv(t, policy.Options{})
	ctx := context.Background()
	// Register a version of "plain" that requires approval: 1.1.0.
	d := def("plain", nil, nil)
	d.URI, d.Version = "ossa:test/plain@1.1", "1.1.0"
	d.Metadata = map[string]any{"everruns": map[string]any{"policy": "requires_approval"}}
	if _, err := e.svc.RegisterBatch(ctx, []capability.Definition{d}); err != nil {
		t.Fatal(err)
	}
	_, err := e.call(ctx, "anyone", "plain", nil)
	id := approvalID(t, err, "tool policy is requires_approval")
	if e.ran("plain") != 0 {
		t.Fatal("plain ran before approval")
	}
	if _, err := e.engine.Approvals().Approve(ctx, id, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call(identity.WithApproval(ctx, id), "anyone", "plain", nil); err != nil || e.ran("plain") != 1 {
		t.Fatalf("approved call: %v (ran %d)", err, e.ran("plain"))
	}
	if _, err := e.call(ctx, "anyone", "fetch", nil); err != nil {
		t.Errorf("a capability without a tool policy needs no approval: %v", err)
	}
}

func TestApprovalDenied(t *testing.T) {
	e := newEnv(t, policy.Options{ApprovalRequired: true})
	ctx := context.Background()
	_, err := e.call(ctx, "", "plain", nil)
	id := approvalID(t, err, policy.EnvHumanApproval+"=true")
	if _, err := e.engine.Approvals().Deny(ctx, id, "bob", "not today"); err != nil {
		t.Fatal(err)
	}
	_, err = e.call(identity.WithApproval(ctx, id), "", "plain", nil)
	invErr(t, err, invoke.CodeDenied, "was denied", "bob: not today")
	if e.ran("plain") != 0 {
		t.Error("a denied call ran")
	}
}

func TestApprovalExpiry(t *testing.T) {
	e := newEnv(t, policy.Options{ApprovalRequired: true, ApprovalTTL: time.Minute})
	ctx := context.Background()
	ap := e.engine.Approvals()

	// A pending approval expires unanswered.
	_, err := e.call(ctx, "a", "plain", nil)
	id := approvalID(t, err)
	e.clock.add(time.Minute)
	got, err := ap.Get(ctx, id)
	if err != nil || got.Status != policy.StatusExpired {
		t.Fatalf("after the TTL: %+v %v", got, err)
	}
	if _, err := ap.Approve(ctx, id, "alice", ""); !errors.Is(err, policy.ErrDecided) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("approve expired: %v", err)
	}
	_, err = e.call(identity.WithApproval(ctx, id), "a", "plain", nil)
	invErr(t, err, invoke.CodeDenied, "expired at")

	// An approved one that is not used in time expires too.
	_, err = e.call(ctx, "a", "plain", nil)
	id2 := approvalID(t, err)
	e.clock.add(50 * time.Second)
	if _, err := ap.Approve(ctx, id2, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.clock.add(30 * time.Second) // 80s after creation, 30s after approval: still usable
	if _, err := e.call(identity.WithApproval(ctx, id2), "a", "plain", nil); err != nil {
		t.Fatalf("approved within the window: %v", err)
	}
	_, err = e.call(ctx, "a", "plain", nil)
	id3 := approvalID(t, err)
	if _, err := ap.Approve(ctx, id3, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.clock.add(2 * time.Minute)
	_, err = e.call(identity.WithApproval(ctx, id3), "a", "plain", nil)
	invErr(t, err, invoke.CodeDenied, "expired at")
	expired, _ := ap.List(ctx, policy.StatusExpired)
	if len(expired) != 2 {
		t.Errorf("expired approvals: %d, want 2", len(expired))
	}
	if _, err := ap.List(ctx, "bogus"); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("bogus status: %v", err)
	}
}

// TestPolicyChangesAudited checks that setting and deleting a policy each
// commit an audit event naming the agent and the actor, and that the chain
// still verifies.
func TestPolicyChangesAudited(t *testing.T) {
	e := newEnv(t, policy.Options{})
	ctx := identity.With(context.Background(), identity.Caller{Actor: "local:ops"})
	p := policy.Policy{Agent: "scanner", GrantedPermissions: []string{"network.http"}}
	if err := e.engine.Policies().Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := e.engine.Policies().Delete(ctx, "scanner"); err != nil {
		t.Fatal(err)
	}
	if err := e.engine.Policies().Delete(ctx, "scanner"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("deleting a missing policy: %v, want ErrNotFound", err)
	}
	for _, kind := range []string{audit.KindPolicySet, audit.KindPolicyDeleted} {
		evs, err := e.audit.List(ctx, chain.Filter{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Actor != "local:ops" || !strings.Contains(string(evs[0].Data), `"agent":"scanner"`) {
			t.Fatalf("%s events = %+v, want one by local:ops about agent scanner", kind, evs)
		}
	}
	if v, err := e.audit.Verify(ctx); err != nil || !v.OK {
		t.Fatalf("chain does not verify: %+v, %v", v, err)
	}
}

// TestUnreadablePolicyFailsClosedButRetryable checks that a call whose
// policy cannot be read (the store fails) is refused, with
// POLICY_UNAVAILABLE (503 on REST), not DENIED (403): the client should
// retry, not conclude it is forbidden.
func TestUnreadablePolicyFailsClosedButRetryable(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "closed.db"))
	if err != nil {
		t.Fatal(err)
	}
	engine := policy.NewEngine(st, policy.Options{})
	st.Close() // every read fails from now on
	d := def("plain", nil, nil)
	err = engine.Check(ctx, &invoke.Call{URI: "ossa:test/plain@1.0", Caller: "scanner", Definition: &d})
	ie := invErr(t, err, invoke.CodePolicyUnavailable, "cannot read the policy")
	if invoke.HTTPStatus(ie.Code) != 503 {
		t.Errorf("status %d, want 503", invoke.HTTPStatus(ie.Code))
	}
}
