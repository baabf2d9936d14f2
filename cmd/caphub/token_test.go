package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/auth"
)

func TestTokenCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")
	code, out, errOut := caphub(t, "token", "create", "ci-bot", "--scope", "read", "--scope", "invoke", "--expires", "720h", "--db", db)
	if code != 0 {
		t.Fatalf("create: exit %d\n%s", code, errOut)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, auth.Prefix) || strings.Contains(secret, "\n") {
		t.Fatalf("create printed %q, want only the secret", out)
	}
	if !strings.Contains(errOut, "ci-bot") || !strings.Contains(errOut, "not shown again") || !strings.Contains(errOut, "read,invoke") {
		t.Fatalf("create details: %s", errOut)
	}

	code, out, _ = caphub(t, "token", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "ci-bot") || !strings.Contains(out, "active") || strings.Contains(out, secret) {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	code, out, _ = caphub(t, "token", "list", "--db", db, "--format", "json")
	var listed struct {
		Items []struct {
			ID    string `json:"id"`
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Items) != 1 || strings.Contains(out, secret) || strings.Contains(out, "sha256") {
		t.Fatalf("list json: exit %d\n%s", code, out)
	}
	id := listed.Items[0].ID

	// The secret printed authenticates against the same database.
	st, err := openStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := auth.New(st, nil).Authenticate(context.Background(), secret)
	_ = st.Close()
	if err != nil || tok.Name != "ci-bot" || !tok.Has(auth.ScopeInvoke) || tok.Has(auth.ScopePublish) {
		t.Fatalf("Authenticate = %+v, %v", tok, err)
	}

	code, out, _ = caphub(t, "token", "revoke", id, "--db", db)
	if code != 0 || !strings.Contains(out, "Revoked token "+id) {
		t.Fatalf("revoke: exit %d\n%s", code, out)
	}
	_, out, _ = caphub(t, "token", "list", "--db", db)
	if !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke:\n%s", out)
	}
	st, err = openStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = auth.New(st, nil).Authenticate(context.Background(), secret)
	_ = st.Close()
	if !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("after revoke: %v, want ErrRevoked", err)
	}
	// Both changes are in the audit chain, by the local user, without the secret.
	code, out, _ = caphub(t, "audit", "list", "--db", db, "--format", "json")
	if code != 0 || !strings.Contains(out, `"token_created"`) || !strings.Contains(out, `"token_revoked"`) || !strings.Contains(out, `"local`) || strings.Contains(out, secret) {
		t.Fatalf("audit list after create and revoke: exit %d\n%s", code, out)
	}

	// JSON create carries the secret once.
	code, out, _ = caphub(t, "token", "create", "admin", "--scope", "admin", "--db", db, "--format", "json")
	var created struct {
		ID     string `json:"id"`
		Secret string `json:"token"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || !strings.HasPrefix(created.Secret, auth.Prefix+created.ID+"_") {
		t.Fatalf("create json: exit %d\n%s", code, out)
	}
}

func TestTokenCLIErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"token", "create", "x"}, exitUsage, "--scope"},
		{[]string{"token", "create", "x", "--scope", "write"}, exitUsage, "read, publish, invoke or admin"},
		{[]string{"token", "create", "x", "--scope", "read", "--expires", "-1h"}, exitUsage, "positive duration"},
		{[]string{"token", "create"}, exitUsage, "NAME"},
		{[]string{"token", "create", "bad name", "--scope", "read"}, exitFailure, "token name"},
		{[]string{"token", "revoke", "abcdef012345"}, exitFailure, "caphub token list"},
		{[]string{"token", "list", "--server", "http://127.0.0.1:1"}, exitFailure, "is `caphub serve` running there?"},
	} {
		code, _, errOut := caphub(t, append(c.args, "--db", db)...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, code, c.code, c.msg, errOut)
		}
	}
	code, out, _ := caphub(t, "token", "create", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--expires 720h") {
		t.Errorf("create --help: exit %d\n%s", code, out)
	}
}

// TestServeAuth runs the real binary: without a token caphub serve refuses
// a non-loopback address; with one it enforces tokens on loopback too.
func TestServeAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	bin := caphubBinary(t)
	db := filepath.Join(t.TempDir(), "caphub.db")
	out, err := exec.Command(bin, "serve", "--addr", "0.0.0.0:0", "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "caphub serve on 0.0.0.0:0 needs API authentication: create a token with `caphub token create NAME --scope admin` first") {
		t.Fatalf("serve on 0.0.0.0 without a token: err %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "serve", "--auth", "--addr", "127.0.0.1:0", "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs API authentication") {
		t.Fatalf("serve --auth without a token: err %v\n%s", err, out)
	}
	secret, err := exec.Command(bin, "token", "create", "reader", "--scope", "read", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	p := startServe(t, db) // loopback: /healthz is public
	get := func(path, bearer string) int {
		req, _ := http.NewRequest("GET", p.url+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tok := strings.TrimSpace(string(secret))
	if c := get("/registry/capabilities", ""); c != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", c)
	}
	if c := get("/registry/capabilities", tok); c != http.StatusOK {
		t.Errorf("read token: %d, want 200", c)
	}
	req, _ := http.NewRequest("POST", p.url+"/v1/invoke", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("invoke with a read token: %d, want 403", resp.StatusCode)
	}

	// What an admin token registers is trusted; what a publish token
	// registers is community; a signature would make either verified.
	newToken := func(name, scope string) string {
		secret, err := exec.Command(bin, "token", "create", name, "--scope", scope, "--db", db).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(secret))
	}
	admin, publisher := newToken("ops", "admin"), newToken("ci", "publish")
	for _, c := range []struct{ token, name, tier string }{{admin, "by_admin", "trusted"}, {publisher, "by_publisher", "community"}} {
		file := writeFile(t, c.name+".yaml", strings.ReplaceAll(strings.ReplaceAll(echoYAML, "echo@", c.name+"@"), "name: echo", "name: "+c.name))
		cmd := exec.Command(bin, "capability", "register", file, "--server", p.url)
		cmd.Env = append(os.Environ(), "CAPHUB_TOKEN="+c.token)
		out, err := cmd.CombinedOutput()
		want := fmt.Sprintf("registered ossa:test/%s@1.0 (1.0.0), trust tier %s\n", c.name, c.tier)
		if err != nil || string(out) != want {
			t.Errorf("register with the %s token: %v\n%s\nwant %q", c.name, err, out, want)
		}
		// Anyone who may read sees the tier (GET of a version: header
		// Caphub-Trust-Tier).
		show := exec.Command(bin, "capability", "show", "ossa:test/"+c.name+"@1.0", "--server", p.url)
		show.Env = append(os.Environ(), "CAPHUB_TOKEN="+tok)
		out, err = show.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "  trust tier: "+c.tier+"\n") {
			t.Errorf("show %s: %v\n%s\nwant trust tier %s", c.name, err, out, c.tier)
		}
	}
}
