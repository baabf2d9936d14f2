package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
)

// runBinary runs the real caphub binary with args in dir and returns its
// stdout, stderr and error.
func runBinary(t *testing.T, dir string, env []string, args ...string) (string, string, error) {
	t.Helper()
	c := exec.Command(caphubBinary(t), args...)
	c.Dir, c.Env = dir, append(os.Environ(), env...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	return out.String(), errOut.String(), err
}

// TestClientConfigInspector checks that what caphub client config
// claude-desktop prints, saved as a file, is a configuration the MCP
// Inspector CLI accepts (--config) and that lists caphub's tools: on a
// local database, and through a server with the token in a token file.
func TestClientConfigInspector(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "local.db")
	if code, _, errOut := caphub(t, "capability", "register", writeFile(t, "echo.yaml", echoYAML), "--db", db); code != 0 {
		t.Fatalf("register: exit %d\n%s", code, errOut)
	}
	inspect := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, err := runBinary(t, dir, nil, append([]string{"client", "config", "claude-desktop"}, args...)...)
		if err != nil {
			t.Fatalf("client config: %v\n%s", err, errOut)
		}
		file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		got, errOut, err := testpeers.Inspector(t, "--config", file, "--server", "caphub", "--method", "tools/list")
		if err != nil {
			t.Fatalf("Inspector --config with\n%s\n: %v\n%.2000s", out, err, errOut)
		}
		return got
	}
	t.Run("local database", func(t *testing.T) {
		// A relative --db is made absolute: the client starts caphub in a
		// directory of its own.
		if got := inspect(t, "--db", "local.db"); !strings.Contains(got, `"test_echo"`) {
			t.Fatalf("tools/list through the written configuration lacks test_echo:\n%.2000s", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "caphub.db")); err == nil {
			t.Error("a caphub.db appeared in the working directory")
		}
	})
	t.Run("server with a token file", func(t *testing.T) {
		srvDB := filepath.Join(t.TempDir(), "server.db")
		code, tok, errOut := caphub(t, "token", "create", "desktop", "--scope", "read", "--scope", "invoke", "--db", srvDB)
		if code != 0 {
			t.Fatalf("token create: exit %d\n%s", code, errOut)
		}
		if code, _, errOut := caphub(t, "capability", "register", writeFile(t, "echo.yaml", echoYAML), "--db", srvDB); code != 0 {
			t.Fatalf("register: exit %d\n%s", code, errOut)
		}
		p := startServe(t, srvDB)
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := inspect(t, "--server", p.url, "--token-file", tokenFile); !strings.Contains(got, `"test_echo"`) {
			t.Fatalf("tools/list through caphub mcp --server --token-file lacks the server's test_echo:\n%.2000s\nserver:\n%s", got, p.logs)
		}
	})
}

// TestClientConfigShapes checks each client's entry: the transport chosen,
// the endpoint of an agent, and the token as a reference in that client's
// own syntax, never its value.
func TestClientConfigShapes(t *testing.T) {
	t.Setenv("CAPHUB_TOKEN", "chp_secret_never_written")
	cases := []struct {
		client, key string
		args        []string
		want        []string
	}{
		{"claude-code", "mcpServers", []string{"--server", "http://127.0.0.1:8750/", "--agent", "triage"},
			[]string{`"type":"http"`, `"url":"http://127.0.0.1:8750/mcp/agents/triage"`, `"Authorization":"Bearer ${CAPHUB_TOKEN}"`}},
		{"cursor", "mcpServers", []string{"--server", "https://caphub.example:8750"},
			[]string{`"url":"https://caphub.example:8750/mcp"`, `"Bearer ${env:CAPHUB_TOKEN}"`}},
		{"vscode", "servers", []string{"--server", "http://127.0.0.1:8750", "--transport", "stdio"},
			[]string{`"type":"stdio"`, `"args":["mcp","--server","http://127.0.0.1:8750"]`, `"CAPHUB_TOKEN":"${env:CAPHUB_TOKEN}"`}},
		{"claude-desktop", "mcpServers", []string{"--server", "http://127.0.0.1:8750", "--agent", "a b", "--token-file", "/etc/caphub/token"},
			[]string{`"args":["mcp","--server","http://127.0.0.1:8750","--agent","a b","--token-file","/etc/caphub/token"]`}},
	}
	for _, c := range cases {
		t.Run(c.client, func(t *testing.T) {
			code, out, errOut := caphub(t, append([]string{"client", "config", c.client, "--command", "/opt/caphub"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			var doc map[string]map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc[c.key]["caphub"] == nil {
				t.Fatalf("output is not {%q: {caphub: …}}: %v\n%s", c.key, err, out)
			}
			entry := string(doc[c.key]["caphub"])
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(entry)); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(compact.String(), w) {
					t.Errorf("entry lacks %s:\n%s", w, entry)
				}
			}
			if strings.Contains(out, "chp_secret_never_written") {
				t.Errorf("the token's value was written:\n%s", out)
			}
		})
	}
	for _, bad := range [][]string{
		{"claude-desktop", "--server", "http://127.0.0.1:8750", "--transport", "http"},
		{"cursor", "--agent", "triage"},
		{"cursor", "--server", "ftp://host"},
		{"zed"},
	} {
		if code, _, errOut := caphub(t, append([]string{"client", "config"}, bad...)...); code != 2 || errOut == "" {
			t.Errorf("client config %v: exit %d %q; want a usage error", bad, code, errOut)
		}
	}
}

// TestClientConfigWrite checks --write: the entry is merged into the file,
// every other entry and key kept, the old file saved beside it with its
// mode; a file that is not JSON is left untouched with an error naming its
// line.
func TestClientConfigWrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	old := `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}, "theme": "dark"}`
	if err := os.WriteFile(file, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := caphub(t, "client", "config", "cursor", "--server", "http://127.0.0.1:8750", "--write", "--file", file)
	if code != 0 || !strings.Contains(errOut, file) {
		t.Fatalf("--write: exit %d\n%s", code, errOut)
	}
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
		Theme      string                    `json:"theme"`
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &doc); err != nil || doc.Theme != "dark" || doc.MCPServers["memory"]["command"] != "npx" || doc.MCPServers["caphub"]["url"] != "http://127.0.0.1:8750/mcp" {
		t.Fatalf("merged file: %v\n%s", err, b)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the old 0640", st.Mode().Perm())
	}
	backups, _ := filepath.Glob(file + ".*.bak")
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	if got, _ := os.ReadFile(backups[0]); string(got) != old {
		t.Errorf("backup holds %q, want the old file", got)
	}

	broken := filepath.Join(dir, "broken.json")
	bad := "{\n  \"mcpServers\": {\n    \"x\": {,}\n  }\n}\n"
	if err := os.WriteFile(broken, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = caphub(t, "client", "config", "cursor", "--write", "--file", broken)
	if code == 0 || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, "leaves it alone") {
		t.Fatalf("--write on a broken file: exit %d %q; want an error naming line 3", code, errOut)
	}
	if got, _ := os.ReadFile(broken); string(got) != bad {
		t.Errorf("the broken file was changed to %q", got)
	}
	if backups, _ := filepath.Glob(broken + ".*.bak"); len(backups) != 0 {
		t.Errorf("backups of a file left alone: %v", backups)
	}
}

// TestTokenFile checks --token-file: a file others can read is refused
// with what to do; one only its owner reads authenticates a --server
// command.
func TestTokenFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "server.db")
	code, tok, errOut := caphub(t, "token", "create", "reader", "--scope", "read", "--db", db)
	if code != 0 {
		t.Fatalf("token create: exit %d\n%s", code, errOut)
	}
	p := startServe(t, db, "--auth")
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAPHUB_TOKEN", "")
	if code, _, errOut := caphub(t, "capability", "list", "--server", p.url, "--token-file", file); code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("token file mode 0644: exit %d %q; want a usage error saying chmod 600", code, errOut)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := caphub(t, "capability", "list", "--server", p.url, "--token-file", file); code != 0 {
		t.Fatalf("with the token file: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := caphub(t, "capability", "list", "--server", p.url); code == 0 || !strings.Contains(errOut, "no bearer token") {
		t.Fatalf("without a token: exit %d %q; want no bearer token refused", code, errOut)
	}
}

// TestClientConfigTokenFileNote checks that the note to put a token in the
// token file comes only while the file is not there (or others can read it).
func TestClientConfigTokenFileNote(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	args := []string{"client", "config", "claude-desktop", "--server", "http://127.0.0.1:8750", "--token-file", file}
	if code, _, errOut := caphub(t, args...); code != 0 || !strings.Contains(errOut, "put a token of the server in "+file) {
		t.Fatalf("no token file yet: exit %d %q; want the note", code, errOut)
	}
	if err := os.WriteFile(file, []byte("chp_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := caphub(t, args...); code != 0 || errOut != "" {
		t.Fatalf("token file in place: exit %d %q; want no note", code, errOut)
	}
}
