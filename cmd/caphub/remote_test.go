package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
)

// remoteEnv is a running caphub serve over a database with an admin and a
// read token, for the administration commands with --server.
type remoteEnv struct {
	url, db       string
	admin, reader string
}

func newRemoteEnv(t *testing.T) *remoteEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	t.Setenv("CAPHUB_SERVER", "")
	t.Setenv("CAPHUB_TOKEN", "")
	t.Setenv("CAPHUB_TOKEN_FILE", "")
	e := &remoteEnv{db: filepath.Join(t.TempDir(), "caphub.db")}
	for _, tk := range []struct {
		secret      *string
		name, scope string
	}{{&e.admin, "root", "admin"}, {&e.reader, "viewer", "read"}} {
		code, out, errOut := caphub(t, "token", "create", tk.name, "--scope", tk.scope, "--db", e.db)
		if code != exitOK {
			t.Fatalf("token create %s: exit %d\n%s", tk.name, code, errOut)
		}
		*tk.secret = strings.TrimSpace(out)
	}
	e.url = startServe(t, e.db).url
	return e
}

// run runs caphub against the server with a token (sent as $CAPHUB_TOKEN).
func (e *remoteEnv) run(t *testing.T, token string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("CAPHUB_TOKEN", token)
	return caphub(t, append(args, "--server", e.url)...)
}

// must runs a command that must succeed and returns its output.
func (e *remoteEnv) must(t *testing.T, token string, args ...string) string {
	t.Helper()
	code, out, errOut := e.run(t, token, args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// refused runs a command that the server must refuse for its scope.
func (e *remoteEnv) refused(t *testing.T, token string, args ...string) {
	t.Helper()
	code, out, errOut := e.run(t, token, args...)
	if code != exitFailure || !strings.Contains(errOut, `needs scope "admin"`) {
		t.Errorf("%v with a read token: exit %d, want %d naming the admin scope\n%s%s", args, code, exitFailure, out, errOut)
	}
}

// events lists the server's audit events of a kind with caphub audit list.
func (e *remoteEnv) events(t *testing.T, kind string) []chain.Event {
	t.Helper()
	out := e.must(t, e.admin, "audit", "list", "--kind", kind, "--format", "json")
	var l struct {
		Items []chain.Event `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("audit list --format json: %v\n%s", err, out)
	}
	return l.Items
}

func TestPolicyCommandsRemote(t *testing.T) {
	e := newRemoteEnv(t)
	out := e.must(t, e.admin, "policy", "set", "scanner", "--permission", "network.http", "--effect", "network", "--min-tier", "community")
	if !strings.Contains(out, "granted permissions:  network.http") {
		t.Errorf("policy set printed:\n%s", out)
	}
	file := writeFile(t, "deployer.policy.yaml", "granted_permissions: ['*']\nallowed_effects: ['*']\nrequire_approval: ['ossa:k8s/*']\n")
	e.must(t, e.admin, "policy", "set", "deployer", "--file", file)
	if out = e.must(t, e.reader, "policy", "show", "deployer", "--format", "json"); !strings.Contains(out, `"require_approval": [`) || !strings.Contains(out, `"ossa:k8s/*"`) {
		t.Errorf("policy show deployer (read token):\n%s", out)
	}
	if out = e.must(t, e.reader, "policy", "list"); !strings.Contains(out, "deployer") || !strings.Contains(out, "scanner") || !strings.Contains(out, "2 policies") {
		t.Errorf("policy list:\n%s", out)
	}
	e.refused(t, e.reader, "policy", "set", "scanner", "--effect", "*")
	e.refused(t, e.reader, "policy", "delete", "scanner")
	e.must(t, e.admin, "policy", "delete", "scanner")
	if code, _, errOut := e.run(t, e.admin, "policy", "show", "scanner"); code != exitFailure || !strings.Contains(errOut, `agent "scanner" has no policy`) {
		t.Errorf("policy show of a deleted policy: exit %d\n%s", code, errOut)
	}
	// The changes are in the server's chain, made by the admin token.
	set, deleted := e.events(t, audit.KindPolicySet), e.events(t, audit.KindPolicyDeleted)
	if len(set) != 2 || set[0].Actor != "token:root" || !strings.Contains(string(set[1].Data), `"deployer"`) || len(deleted) != 1 || deleted[0].Actor != "token:root" {
		t.Errorf("policy events: set %v, deleted %v", set, deleted)
	}
	// The local database sees what the server stored.
	t.Setenv("CAPHUB_TOKEN", "")
	if code, out, errOut := caphub(t, "policy", "show", "deployer", "--db", e.db); code != exitOK || !strings.Contains(out, "ossa:k8s/*") {
		t.Errorf("local policy show: exit %d\n%s%s", code, out, errOut)
	}
}

func TestTokenCommandsRemote(t *testing.T) {
	e := newRemoteEnv(t)
	secret := strings.TrimSpace(e.must(t, e.admin, "token", "create", "ci-bot", "--scope", "read", "--expires", "720h"))
	if !strings.HasPrefix(secret, "chp_") {
		t.Fatalf("token create printed %q, want the secret", secret)
	}
	// The new token works, with its scope only.
	e.must(t, secret, "policy", "list")
	e.refused(t, secret, "token", "list")
	e.refused(t, e.reader, "token", "create", "x", "--scope", "read")

	out := e.must(t, e.admin, "token", "list", "--format", "json")
	if strings.Contains(out, secret) || strings.Contains(out, e.admin) || strings.Contains(out, "sha256") {
		t.Fatalf("token list shows a secret:\n%s", out)
	}
	var l struct {
		Items []struct {
			ID, Name, State string
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Items) != 3 {
		t.Fatalf("token list: %v\n%s", err, out)
	}
	var id string
	for _, it := range l.Items {
		if it.Name == "ci-bot" {
			id = it.ID
		}
	}
	if out = e.must(t, e.admin, "token", "revoke", id); out != "Revoked token "+id+" (ci-bot)\n" {
		t.Errorf("token revoke printed %q", out)
	}
	if code, _, errOut := e.run(t, secret, "policy", "list"); code != exitFailure || !strings.Contains(errOut, "revoked") {
		t.Errorf("the revoked token: exit %d\n%s", code, errOut)
	}
	// --token-file sends the token too.
	tf := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tf, []byte(e.admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAPHUB_TOKEN", "")
	if code, out, errOut := caphub(t, "token", "list", "--server", e.url, "--token-file", tf); code != exitOK || !strings.Contains(out, "ci-bot") || !strings.Contains(out, "revoked") {
		t.Errorf("token list --token-file: exit %d\n%s%s", code, out, errOut)
	}
	created, revoked := e.events(t, audit.KindTokenCreated), e.events(t, audit.KindTokenRevoked)
	if len(created) != 3 || created[2].Actor != "token:root" || len(revoked) != 1 || revoked[0].Actor != "token:root" {
		t.Errorf("token events: created %v, revoked %v", created, revoked)
	}
}

func TestAuditCommandsRemote(t *testing.T) {
	e := newRemoteEnv(t)
	for _, a := range []string{"a", "b", "c"} {
		e.must(t, e.admin, "policy", "set", a, "--effect", "*")
	}
	out := e.must(t, e.admin, "audit", "list", "--kind", "policy_set", "--actor", "token:root", "--limit", "2")
	if !strings.Contains(out, "policy_set") || !strings.Contains(out, "2 events\n") {
		t.Errorf("audit list --limit 2:\n%s", out)
	}
	if out = e.must(t, e.admin, "audit", "list", "--actor", "nobody", "--since", "1h", "--until", "2099-01-01"); !strings.Contains(out, "0 events\n") {
		t.Errorf("audit list of nobody:\n%s", out)
	}
	out = e.must(t, e.admin, "audit", "verify")
	if !strings.Contains(out, "audit chain intact: ") || !strings.Contains(out, "registrations recorded") {
		t.Errorf("audit verify:\n%s", out)
	}
	out = e.must(t, e.admin, "audit", "verify", "--format", "json")
	var res audit.VerifyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.OK || res.FromSeq != 1 || res.HeadSeq < 5 || res.Registrations == nil {
		t.Errorf("audit verify --format json: %v\n%s", err, out)
	}
	e.refused(t, e.reader, "audit", "list")
	e.refused(t, e.reader, "audit", "verify")
}

func TestAgentCommandsRemote(t *testing.T) {
	e := newRemoteEnv(t)
	good := writeFile(t, "calculator.yaml", calculatorManifest)
	if out := e.must(t, e.admin, "agent", "apply", good); !strings.Contains(out, "applied agent calculator: 2 capabilities") {
		t.Errorf("agent apply:\n%s", out)
	}
	bad := writeFile(t, "bad.yaml", strings.Replace(strings.Replace(calculatorManifest, "calculator\n  version", "broken\n  version", 1), "test_math", "research", 1))
	// The server's issues point into the file, as a local apply's do.
	if code, out, errOut := e.run(t, e.admin, "agent", "apply", bad); code != exitFailure || !strings.Contains(errOut, bad+":12:7: error: spec.capabilities[1]: ossa:everruns/research@1.0") || !strings.Contains(errOut, "coming soon") {
		t.Errorf("agent apply of a refused manifest: exit %d\n%s%s", code, out, errOut)
	}
	if out := e.must(t, e.reader, "agent", "list"); !strings.Contains(out, "calculator") || !strings.Contains(out, "1 agent\n") {
		t.Errorf("agent list:\n%s", out)
	}
	if out := e.must(t, e.reader, "agent", "show", "calculator"); !strings.Contains(out, "everruns_get_current_time") {
		t.Errorf("agent show:\n%s", out)
	}
	if out := e.must(t, e.reader, "agent", "config", "calculator"); !strings.Contains(out, `"system_prompt"`) {
		t.Errorf("agent config:\n%s", out)
	}
	if code, _, errOut := e.run(t, e.reader, "agent", "delete", "calculator"); code != exitFailure || !strings.Contains(errOut, `needs scope "publish"`) {
		t.Errorf("agent delete with a read token: exit %d\n%s", code, errOut)
	}
	if out := e.must(t, e.admin, "agent", "delete", "calculator"); out != "deleted agent calculator\n" {
		t.Errorf("agent delete printed %q", out)
	}
	if code, _, errOut := e.run(t, e.reader, "agent", "show", "calculator"); code != exitFailure || !strings.Contains(errOut, "calculator") {
		t.Errorf("agent show of a deleted agent: exit %d\n%s", code, errOut)
	}
	applied, deleted := e.events(t, audit.KindAgentApplied), e.events(t, audit.KindAgentDeleted)
	if len(applied) != 1 || applied[0].Actor != "token:root" || len(deleted) != 1 || deleted[0].Actor != "token:root" {
		t.Errorf("agent events: applied %v, deleted %v", applied, deleted)
	}
}

func TestApprovalCommandsRemote(t *testing.T) {
	e := newRemoteEnv(t)
	if out := e.must(t, e.admin, "approval", "list", "--status", "all"); !strings.Contains(out, "0 approval(s)") {
		t.Errorf("approval list:\n%s", out)
	}
	e.refused(t, e.reader, "approval", "list")
	if code, _, errOut := e.run(t, e.admin, "approval", "approve", "apr_x", "--by", "alice"); code != exitUsage || !strings.Contains(errOut, "your token") {
		t.Errorf("approval approve --by with --server: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := e.run(t, e.admin, "approval", "deny", "apr_missing"); code != exitFailure || !strings.Contains(errOut, "apr_missing") {
		t.Errorf("approval deny of an unknown approval: exit %d\n%s", code, errOut)
	}
}
