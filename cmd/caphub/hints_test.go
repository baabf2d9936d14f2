package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/store/sqlite"
)

// A signature problem's library error says what to do without naming a
// command (REST and MCP clients read it); the CLI adds the command.
func TestSignatureHintsAtTheCLIEdge(t *testing.T) {
	d := capability.Definition{URI: "ossa:demo/thing@1.0", Version: "1.0.0"}
	unsigned := sign.Verify(&d, sign.NewKeyRing())
	d.Attestation = &capability.Attestation{KeyID: "k1", Algorithm: "rsa", Signature: "x"}
	algorithm := sign.Verify(&d, sign.NewKeyRing())
	for name, err := range map[string]error{"unsigned": unsigned, "algorithm": algorithm} {
		t.Run(name, func(t *testing.T) {
			if err == nil {
				t.Fatal("verified")
			}
			if strings.Contains(err.Error(), "`caphub") {
				t.Errorf("the library error names a command: %v", err)
			}
			if got := withHint(err); !strings.Contains(got, "`caphub capability sign FILE --key KEY`") {
				t.Errorf("no CLI hint: %s", got)
			}
		})
	}
	if h := hintFor(errors.New("something else")); h != "" {
		t.Errorf("hint for an unrelated error: %s", h)
	}
}

// What a command finds missing is said by the library for every client; the
// CLI adds, on its own line, the caphub command that creates or lists it.
func TestNotFoundHintsAtTheCLIEdge(t *testing.T) {
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	if code, out, errOut := caphub(t, "policy", "set", "ops", "--db", db, "--permission", "x"); code != exitOK {
		t.Fatalf("policy set (creates the database): %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		args          []string
		message, hint string
	}{
		{[]string{"policy", "show", "nobody"}, `agent "nobody" has no policy`, "`caphub policy set nobody`"},
		{[]string{"agent", "show", "ghost"}, "agent ghost does not exist", "`caphub agent apply FILE`"},
		{[]string{"server", "show", "nope"}, `no MCP server is saved as "nope"`, "`caphub discover mcp nope --command …`"},
		{[]string{"capability", "show", "ossa:weather/forecast@1"}, "capability ossa:weather/forecast is not registered", "`caphub capability list --domain weather`"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := caphub(t, append(c.args, "--db", db)...)
			message, hint, _ := strings.Cut(errOut, "caphub: hint: ")
			if code == exitOK || !strings.Contains(message, c.message) || !strings.Contains(hint, c.hint) {
				t.Fatalf("exit %d, stderr:\n%s\nwant the message %q, then the hint %q", code, errOut, c.message, c.hint)
			}
			if strings.Contains(message, "`caphub") || strings.Contains(message, "caphub policy") {
				t.Errorf("the library message names a command: %s", message)
			}
		})
	}
}

// A refusal by policy carries what to change in its details (which REST
// and MCP clients receive as well); the CLI turns them into the command.
func TestRefusalHintsAtTheCLIEdge(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	engine := policy.NewEngine(st, policy.Options{})
	if err := engine.Policies().Put(ctx, policy.Policy{Agent: policy.DefaultAgent, GrantedPermissions: []string{"fs.read"}, AllowedEffects: []string{"*"}, RequireApproval: []string{"ossa:test/wipe*"}}); err != nil {
		t.Fatal(err)
	}
	check := func(uri string, def capability.Definition) *invoke.Error {
		t.Helper()
		var ie *invoke.Error
		if err := engine.Check(ctx, &invoke.Call{URI: uri, Caller: "dev", Definition: &def, Input: map[string]any{}}); !errors.As(err, &ie) {
			t.Fatalf("check %s: %v, want a refusal", uri, err)
		}
		if strings.Contains(ie.Message, "caphub ") {
			t.Errorf("the library message names a command: %s", ie.Message)
		}
		return ie
	}
	denied := check("ossa:test/fetch@1.0", capability.Definition{Permissions: []string{"network.http"}})
	if h := hintFor(denied); denied.Code != invoke.CodeDenied || !strings.Contains(h, "`caphub policy set '*' … --permission network.http`") || !strings.Contains(h, "caphub policy show '*'") {
		t.Errorf("denied %s: hint %q", denied.Code, h)
	}
	pending := check("ossa:test/wipe@1.0", capability.Definition{})
	id, _ := pending.Details["approval_id"].(string)
	if h := hintFor(pending); pending.Code != invoke.CodeApprovalNeeded || id == "" || !strings.Contains(h, "`caphub approval approve "+id+"`") {
		t.Errorf("approval needed %s: hint %q", pending.Code, h)
	}
}
