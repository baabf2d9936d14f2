package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/store/sqlite"
)

func TestPolicyAndApprovalCLI(t *testing.T) {
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")

	code, out, errOut := caphub(t, "policy", "set", "ops", "--db", db, "--permission", "network.http", "--effect", "network",
		"--min-tier", "community", "--require-approval", "ossa:test/*")
	if code != exitOK || !strings.Contains(out, "network.http") {
		t.Fatalf("policy set: %d %s %s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "policy", "show", "ops", "--db", db, "--format", "json")
	if code != exitOK || !strings.Contains(out, `"min_trust_tier": "community"`) || !strings.Contains(out, `"ossa:test/*"`) {
		t.Fatalf("policy show: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = caphub(t, "policy", "set", "ops", "--db", db, "--min-tier", "gold"); code != exitUsage || !strings.Contains(errOut, "verified, trusted, community, untrusted") {
		t.Errorf("bad tier: %d %s", code, errOut)
	}
	if code, _, errOut = caphub(t, "policy", "show", "nobody", "--db", db); code == exitOK || !strings.Contains(errOut, "has no policy") {
		t.Errorf("show missing: %d %s", code, errOut)
	}

	// Two pending approvals (two inputs: the same call again would get
	// the same approval), made by the engine as a call would.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	engine := policy.NewEngine(st, policy.Options{ApprovalRequired: true})
	var ids []string
	for _, path := range []string{"/x", "/y"} {
		err := engine.Check(ctx, &invoke.Call{URI: "ossa:test/wipe@1.0", Caller: "dev", Definition: &capability.Definition{}, Input: map[string]any{"path": path}})
		var ie *invoke.Error
		if !errors.As(err, &ie) || ie.Code != invoke.CodeApprovalNeeded {
			t.Fatalf("check: %v", err)
		}
		ids = append(ids, ie.Details["approval_id"].(string))
	}
	st.Close()

	code, out, errOut = caphub(t, "approval", "list", "--db", db)
	if code != exitOK || !strings.Contains(out, ids[0]) || !strings.Contains(out, "2 approval(s)") || !strings.Contains(out, `{"path":"/x"}`) {
		t.Fatalf("approval list: %d %s %s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "approval", "approve", ids[0], "--db", db, "--by", "alice", "--reason", "looked at /x")
	if code != exitOK || !strings.Contains(out, "approved "+ids[0]) {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "approval", "deny", ids[1], "--db", db, "--reason", "no")
	if code != exitOK || !strings.Contains(out, "denied "+ids[1]) {
		t.Fatalf("deny: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = caphub(t, "approval", "deny", ids[0], "--db", db); code == exitOK || !strings.Contains(errOut, "is approved") {
		t.Errorf("deny approved: %d %s", code, errOut)
	}
	code, out, _ = caphub(t, "approval", "list", "--db", db, "--status", "all", "--format", "json")
	if code != exitOK || !strings.Contains(out, `"decided_by": "alice"`) || !strings.Contains(out, `"reason": "no"`) || !strings.Contains(out, `"reason": "looked at /x"`) {
		t.Errorf("list all: %d %s", code, out)
	}
	if code, _, _ = caphub(t, "approval", "list", "--db", db, "--status", "maybe"); code != exitUsage {
		t.Errorf("bad status: exit %d", code)
	}
	if code, out, _ = caphub(t, "approval", "--help"); code != exitOK || !strings.Contains(out, "Examples:") {
		t.Errorf("help: %d %s", code, out)
	}
}

// TestInvokeApprovalRetry runs the approval flow with `caphub invoke`: in
// this process (--db) and through a running caphub (--server), a call that
// needs approval exits 5 with its approval id, and once approved the same
// call with --approval runs, once.
func TestInvokeApprovalRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	if code, out, errOut := caphub(t, "policy", "set", "clerk", "--db", db, "--permission", "*", "--effect", "*", "--require-approval", "ossa:everruns/add"); code != exitOK {
		t.Fatalf("policy set: %d %s %s", code, out, errOut)
	}
	approvalID := func(errOut string) string {
		t.Helper()
		var e struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Code != invoke.CodeApprovalNeeded {
			t.Fatalf("want APPROVAL_REQUIRED on stderr, got %v: %s", err, errOut)
		}
		id, _ := e.Error.Details["approval_id"].(string)
		if id == "" {
			t.Fatalf("no approval id: %s", errOut)
		}
		return id
	}
	flow := func(t *testing.T, where ...string) {
		args := append([]string{"invoke", "ossa:everruns/add@1.0", "--caller", "clerk", "--input", `{"a": 20, "b": 22}`}, where...)
		code, out, errOut := caphub(t, args...)
		if code != invoke.ExitDenied {
			t.Fatalf("first call: exit %d, want %d\n%s%s", code, invoke.ExitDenied, out, errOut)
		}
		id := approvalID(errOut)
		if code, out, errOut = caphub(t, append(args, "--approval", id)...); code != invoke.ExitDenied || !strings.Contains(errOut, "still pending") {
			t.Errorf("retry before approval: exit %d %s%s", code, out, errOut)
		}
		if code, out, errOut = caphub(t, "approval", "approve", id, "--db", db, "--by", "alice"); code != exitOK {
			t.Fatalf("approve: %d %s %s", code, out, errOut)
		}
		if code, out, errOut = caphub(t, append(args, "--approval", id)...); code != exitOK || !strings.Contains(out, "42") {
			t.Fatalf("approved retry: exit %d\n%s%s", code, out, errOut)
		}
		if code, _, errOut = caphub(t, append(args, "--approval", id)...); code != invoke.ExitDenied || !strings.Contains(errOut, "DENIED") {
			t.Errorf("second retry: exit %d %s, want DENIED (an approval is used once)", code, errOut)
		}
	}
	t.Run("local", func(t *testing.T) { flow(t, "--db", db) })
	t.Run("server", func(t *testing.T) {
		p := startServe(t, db)
		flow(t, "--server", p.url)
	})
}
