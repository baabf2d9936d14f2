package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/permit"
	"gopkg.in/yaml.v3"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		s    Server
		err  string // "" when valid
	}{
		{"stdio", Server{Name: "everything", Command: "npx -y @modelcontextprotocol/server-everything"}, ""},
		{"http", Server{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"}}, ""},
		{"env reference", Server{Name: "gh", Command: "gh-mcp", Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG_LEVEL": "debug"}}, ""},
		{"bad name", Server{Name: "My Server", Command: "x"}, "must match [a-z][a-z0-9-]*"},
		{"both", Server{Name: "x", Command: "a", URL: "http://b"}, "not both"},
		{"neither", Server{Name: "x"}, "give a command"},
		{"relative url", Server{Name: "x", URL: "/mcp"}, "absolute http(s) URL"},
		{"unterminated quote", Server{Name: "x", Command: "run 'oops"}, "unterminated"},
		{"literal secret env", Server{Name: "x", Command: "a", Env: map[string]string{"GITHUB_TOKEN": "ghp_abc"}}, "GITHUB_TOKEN=${GITHUB_TOKEN}"},
		{"literal bearer", Server{Name: "x", URL: "https://a", Headers: map[string]string{"Authorization": "Bearer abc123"}}, "does not store secrets"},
		{"literal api key header", Server{Name: "x", URL: "https://a", Headers: map[string]string{"X-Api-Key": "k"}}, "X_API_KEY"},
		{"wrong transport", Server{Name: "x", Command: "a", Transport: "http"}, "use stdio"},
		{"shared", Server{Name: "x", Command: "a", Sessions: SessionsShared}, ""},
		{"per-client", Server{Name: "x", URL: "https://a", Sessions: SessionsPerClient}, ""},
		{"unknown session mode", Server{Name: "x", Command: "a", Sessions: "pooled"}, `sessions "pooled" is not a session mode: use per-client`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if c.err == "" && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}

func TestPermitsBoundConnections(t *testing.T) {
	ctx := context.Background()
	api := &permit.Permits{Hosts: []string{"127.0.0.1:1"}}
	_, err := Connect(ctx, &Server{Name: "s", Transport: TransportStdio, Command: "sh -c true", Permits: api}, "test")
	if !errors.Is(err, permit.ErrCommand) {
		t.Errorf("a program the operator did not allow: %v", err)
	}
	_, err = Connect(ctx, &Server{Name: "u", Transport: TransportHTTP, URL: "http://127.0.0.1:2/mcp", Permits: api}, "test")
	if !errors.Is(err, allowlist.ErrNotAllowed) {
		t.Errorf("a host the operator did not allow: %v", err)
	}
}

func TestExpandAndFlags(t *testing.T) {
	t.Setenv("CAPHUB_TEST_SECRET", "s3cret")
	op := &Server{Name: "op"}
	got, err := op.expand("header Authorization", "Bearer ${CAPHUB_TEST_SECRET}")
	if err != nil || got != "Bearer s3cret" {
		t.Errorf("expand: %q %v", got, err)
	}
	if _, err := op.expand("env X", "${CAPHUB_TEST_UNSET_VAR}"); err == nil || !strings.Contains(err.Error(), "CAPHUB_TEST_UNSET_VAR") {
		t.Errorf("missing variable: %v", err)
	}
	// A server saved over the API reads only what the operator allows.
	api := &Server{Name: "api", Permits: &permit.Permits{Env: []string{"OTHER"}}}
	if got, err := api.expand("header Authorization", "Bearer ${CAPHUB_TEST_SECRET}"); !errors.Is(err, permit.ErrEnv) || strings.Contains(got, "s3cret") {
		t.Errorf("an unlisted variable was expanded: %q %v", got, err)
	}
	k, v, err := ParseEnvFlag("GITHUB_TOKEN")
	if err != nil || k != "GITHUB_TOKEN" || v != "${GITHUB_TOKEN}" {
		t.Errorf("bare env: %s %s %v", k, v, err)
	}
	k, v, err = ParseHeaderFlag("Authorization: Bearer ${T}")
	if err != nil || k != "Authorization" || v != "Bearer ${T}" {
		t.Errorf("header: %s %s %v", k, v, err)
	}
	if _, _, err := ParseHeaderFlag("nocolon"); err == nil {
		t.Errorf("header without colon accepted")
	}
}

// A server gets only a minimal environment, never caphub's secrets.
func TestCommandEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("CAPHUB_ADMIN_TOKEN", "must-not-leak")
	t.Setenv("CAPHUB_TEST_SECRET", "s3cret")
	s := &Server{Name: "x", Command: "sh -c 'echo {a}'", Env: map[string]string{"TOKEN": "${CAPHUB_TEST_SECRET}"}}
	cmd, err := s.command()
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cmd.Env, "\n")
	if strings.Contains(env, "must-not-leak") || !strings.Contains(env, "TOKEN=s3cret") {
		t.Errorf("environment:\n%s", env)
	}
	if cmd.Args[0] != "sh" && !strings.HasSuffix(cmd.Args[0], "/sh") || cmd.Args[1] != "-c" || cmd.Args[2] != "echo {a}" {
		t.Errorf("argv %q", cmd.Args)
	}
}

// The session mode is saved as "sessions" in JSON and YAML (a discovery
// configuration file), and left out when it is the default.
func TestSessionsField(t *testing.T) {
	var fromYAML Server
	if err := yaml.Unmarshal([]byte("name: mem\ncommand: mcp-server-memory\nsessions: shared\n"), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !fromYAML.Shared() || fromYAML.Validate() != nil {
		t.Errorf("from YAML: %+v (shared %v, %v), want a valid shared server", fromYAML, fromYAML.Shared(), fromYAML.Validate())
	}
	b, err := json.Marshal(fromYAML)
	if err != nil || !strings.Contains(string(b), `"sessions":"shared"`) {
		t.Errorf("JSON = %s, %v; want sessions shared", b, err)
	}
	b, _ = json.Marshal(Server{Name: "x", Command: "a"})
	if strings.Contains(string(b), "sessions") {
		t.Errorf("JSON of a per-client server = %s: the default is left out", b)
	}
}

// ExecCommand applies the same checks as Connect: the saved connection's,
// and the operator's permits.
func TestExecCommand(t *testing.T) {
	if _, err := (&Server{Name: "s", Command: "sh -c true", Permits: &permit.Permits{}}).ExecCommand(); !errors.Is(err, permit.ErrCommand) {
		t.Errorf("a program the operator did not allow: %v", err)
	}
	if _, err := (&Server{Name: "u", URL: "http://127.0.0.1:2/mcp"}).ExecCommand(); err == nil || !strings.Contains(err.Error(), "only stdio servers") {
		t.Errorf("an HTTP server: %v", err)
	}
	if _, err := (&Server{Name: "Bad Name", Command: "sh"}).ExecCommand(); err == nil {
		t.Error("an invalid saved connection was accepted")
	}
	cmd, err := (&Server{Name: "s", Command: "sh -c 'exit 0'"}).ExecCommand()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Process != nil || cmd.Args[1] != "-c" || cmd.Args[2] != "exit 0" {
		t.Errorf("cmd = %q, started %v", cmd.Args, cmd.Process != nil)
	}
	if err := cmd.Run(); err != nil {
		t.Errorf("run: %v", err)
	}
}
